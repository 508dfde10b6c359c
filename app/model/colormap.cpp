// The colormap tables and the special colours.
//
// Every map is a curve in OKLCh (lightness, chroma, hue of the OKLab space, whose lightness
// tracks perceived lightness): lightness is a straight ramp, so equal value steps look like
// equal steps, and the hue and chroma only add contrast. A colour outside the sRGB gamut keeps
// its lightness and hue and loses chroma until it fits. The curves are ours; the OKLab <->
// linear sRGB matrices are the published definition of the space.
#include "app/model/colormap.h"

#include "app/model/float_grid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

namespace ts {
namespace {

struct LinearRgb {
  double r, g, b;
};

LinearRgb oklab_to_linear_srgb(double L, double a, double b) {
  const double l_ = L + 0.3963377774 * a + 0.2158037573 * b;
  const double m_ = L - 0.1055613458 * a - 0.0638541728 * b;
  const double s_ = L - 0.0894841775 * a - 1.2914855480 * b;
  const double l = l_ * l_ * l_, m = m_ * m_ * m_, s = s_ * s_ * s_;
  return {+4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s,
          -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s,
          -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s};
}

bool in_gamut(const LinearRgb& c) {
  constexpr double eps = 1e-7;
  return c.r >= -eps && c.r <= 1 + eps && c.g >= -eps && c.g <= 1 + eps && c.b >= -eps &&
         c.b <= 1 + eps;
}

uint8_t encode_srgb(double linear) {
  linear = std::clamp(linear, 0.0, 1.0);
  const double v = linear <= 0.0031308 ? 12.92 * linear : 1.055 * std::pow(linear, 1 / 2.4) - 0.055;
  return static_cast<uint8_t>(std::lround(v * 255.0));
}

// OKLCh -> sRGB, reducing chroma (bisection) until the colour is displayable.
Rgba8 oklch_to_rgba8(double L, double C, double hue_degrees) {
  const double h = hue_degrees * std::numbers::pi / 180.0;
  auto at = [&](double chroma) { return oklab_to_linear_srgb(L, chroma * std::cos(h), chroma * std::sin(h)); };
  LinearRgb c = at(C);
  if (!in_gamut(c)) {
    double lo = 0.0, hi = C;
    for (int i = 0; i < 40; ++i) {
      const double mid = 0.5 * (lo + hi);
      (in_gamut(at(mid)) ? lo : hi) = mid;
    }
    c = at(lo);
  }
  return {encode_srgb(c.r), encode_srgb(c.g), encode_srgb(c.b), 255};
}

// t in [0, 1] -> colour, for each map.
Rgba8 ember_at(double t) {
  // Violet to pale yellow through crimson and orange; chroma peaks in the middle.
  const double chroma = 0.04 + 0.16 * std::pow(std::sin(std::numbers::pi * std::min(t * 1.15, 1.0)), 0.7);
  return oklch_to_rgba8(0.15 + 0.82 * t, chroma, 300.0 + 165.0 * t);
}

Rgba8 glacier_at(double t) {
  // Indigo to yellow the cool way round (through teal and green).
  return oklch_to_rgba8(0.27 + 0.66 * t, 0.10 + 0.08 * t * t, 290.0 - 180.0 * t);
}

Rgba8 gray_at(double t) {
  // sRGB's encoding is already close to perceptually even, and a gray map is expected to
  // run exactly from 0 to 255.
  const auto v = static_cast<uint8_t>(std::lround(t * 255.0));
  return {v, v, v, 255};
}

Rgba8 diverging_at(double t) {
  // Two arms of equal lightness profile meeting at near-white; the sign picks the hue.
  const double s = 2.0 * t - 1.0;
  const double a = std::abs(s);
  return oklch_to_rgba8(0.97 - 0.45 * a, 0.19 * std::pow(a, 0.85), s < 0 ? 255.0 : 28.0);
}

// s in [0, 1] along one of the two halves.
Rgba8 tolerance_at(bool over, double s) {
  // Two ramps meeting at the tolerance. Within it: dark blue to teal, low chroma, lighter
  // towards the tolerance (errors well under it recede). Over it: red to orange to pale yellow,
  // high chroma, lighter with the error. Lightness drops a little at the meeting point, so the
  // edge between a cell just within and one just over the tolerance shows in gray too.
  if (!over) return oklch_to_rgba8(0.25 + 0.40 * s, 0.05 + 0.06 * s, 265.0 - 55.0 * s);
  return oklch_to_rgba8(0.60 + 0.36 * s, 0.20 - 0.09 * s, 32.0 + 72.0 * s);
}

ColormapTable build_table(ColormapId id) {
  ColormapTable table{};
  for (size_t i = 0; i < kColormapSize; ++i) {
    const double t = static_cast<double>(i) / static_cast<double>(kColormapSize - 1);
    switch (id) {
      case ColormapId::ember: table[i] = ember_at(t); break;
      case ColormapId::glacier: table[i] = glacier_at(t); break;
      case ColormapId::gray: table[i] = gray_at(t); break;
      case ColormapId::diverging: table[i] = diverging_at(t); break;
      case ColormapId::tolerance: {
        // Each half samples its own ramp end to end: entry 127 is the last "within", 128 the
        // first "over".
        constexpr size_t half = kColormapSize / 2;
        const bool over = i >= half;
        table[i] = tolerance_at(over, static_cast<double>(over ? i - half : i) / static_cast<double>(half - 1));
        break;
      }
    }
  }
  return table;
}

constexpr std::array<ColormapId, 5> kAllColormaps = {ColormapId::ember, ColormapId::glacier, ColormapId::gray,
                                                     ColormapId::diverging, ColormapId::tolerance};

}  // namespace

std::string to_string(Rgba8 c) {
  char text[48];
  std::snprintf(text, sizeof text, "(%d, %d, %d, %d)", c.r, c.g, c.b, c.a);
  return text;
}

std::span<const ColormapId> all_colormaps() { return kAllColormaps; }

std::string_view colormap_name(ColormapId id) {
  switch (id) {
    case ColormapId::ember: return "ember";
    case ColormapId::glacier: return "glacier";
    case ColormapId::gray: return "gray";
    case ColormapId::diverging: return "diverging";
    case ColormapId::tolerance: return "tolerance";
  }
  return "unknown";
}

ColormapId colormap_from_name(std::string_view name) {
  std::string valid;
  for (ColormapId id : kAllColormaps) {
    if (colormap_name(id) == name) return id;
    valid += valid.empty() ? "" : ", ";
    valid += colormap_name(id);
  }
  throw ColorScaleError("unknown colormap '" + std::string(name) + "' (valid: " + valid + ")");
}

bool colormap_is_diverging(ColormapId id) { return id == ColormapId::diverging; }

const ColormapTable& colormap_table(ColormapId id) {
  // Built once, on first use; function-local statics are initialised thread-safely.
  static const std::array<ColormapTable, kAllColormaps.size()> tables = [] {
    std::array<ColormapTable, kAllColormaps.size()> all{};
    for (ColormapId m : kAllColormaps) all[static_cast<size_t>(m)] = build_table(m);
    return all;
  }();
  const auto index = static_cast<size_t>(id);
  if (index >= tables.size()) throw ColorScaleError("invalid colormap id " + std::to_string(index));
  return tables[index];
}

CellClass classify_cell(float value, uint8_t absent) {
  switch (static_cast<AbsentCell>(absent)) {
    case AbsentCell::none: break;
    case AbsentCell::masked: return CellClass::masked;
    case AbsentCell::never_written: return CellClass::never_written;
    case AbsentCell::not_traced: return CellClass::not_traced;
    case AbsentCell::pending: return CellClass::pending;
    default: return CellClass::masked;  // an unknown code: no value, for no reason we can name
  }
  if (std::isnan(value)) return CellClass::nan;
  if (std::isinf(value)) return value > 0 ? CellClass::pos_inf : CellClass::neg_inf;
  return CellClass::finite;
}

std::string_view cell_class_name(CellClass c) {
  switch (c) {
    case CellClass::finite: return "finite";
    case CellClass::nan: return "NaN";
    case CellClass::pos_inf: return "+Inf";
    case CellClass::neg_inf: return "-Inf";
    case CellClass::masked: return "masked";
    case CellClass::never_written: return "never written";
    case CellClass::not_traced: return "not traced";
    case CellClass::pending: return "pending";
  }
  return "unknown";
}

std::string_view cell_class_meaning(CellClass c) {
  switch (c) {
    case CellClass::finite: return "a value";
    case CellClass::nan: return "NaN in the trace";
    case CellClass::pos_inf: return "+Inf where the reference is finite";
    case CellClass::neg_inf: return "-Inf where the reference is finite";
    case CellClass::masked: return "masked (sees no key)";
    case CellClass::never_written: return "never written by the kernel";
    case CellClass::not_traced: return "not traced (filtered)";
    case CellClass::pending: return "pending (not analysed yet)";
  }
  return "unknown";
}

Rgba8 special_color(CellClass c) {
  // Saturated primaries and secondaries that the chroma-limited maps never reach (the tests
  // check the distance), so an odd cell stands out under every colormap.
  switch (c) {
    case CellClass::nan: return {255, 0, 255, 255};      // magenta
    case CellClass::pos_inf: return {0, 255, 0, 255};    // green
    case CellClass::neg_inf: return {0, 255, 255, 255};  // cyan
    // Cells with no value. Chosen (by distance to every colormap entry and to each other) so that
    // none is mistaken for an error's colour; the two that cover large areas by design are dim,
    // the one that is a bug is loud.
    case CellClass::masked: return {110, 110, 0, 255};        // olive: nothing to compute here
    case CellClass::never_written: return {75, 0, 255, 255};  // electric violet: the kernel skipped it
    case CellClass::not_traced: return {0, 140, 60, 255};     // dark green: left out by the filters
    case CellClass::pending: return {0, 0, 160, 255};         // navy: the analysis is still on its way
    case CellClass::finite: break;
  }
  return {0, 0, 0, 0};
}

}  // namespace ts
