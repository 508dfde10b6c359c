// Colour scales: value ranges, autofit, and value -> table index. The arithmetic here is
// mirrored line by line in shaders/heatmap.frag (float, same order of operations), so the
// GPU picks the same table entry (exactly in linear mode; log2 may differ by an ulp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app/model/colormap.h"

namespace ts {
namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

void validate(const ColorScale& s) {
  if (!std::isfinite(s.min) || !std::isfinite(s.max))
    throw ColorScaleError("colour scale bounds must be finite numbers (got min " + number(s.min) +
                          ", max " + number(s.max) + ")");
  if (s.min > s.max)
    throw ColorScaleError("colour scale black point " + number(s.min) + " is above its white point " +
                          number(s.max) + "; swap them");
  if (s.log && !(std::isfinite(s.log_floor) && s.log_floor > 0))
    throw ColorScaleError("log colour scale needs a positive floor (got " + number(s.log_floor) + ")");
  if (s.split && s.symmetric) throw ColorScaleError("a split colour scale cannot be symmetric; turn one off");
  if (s.split && (!std::isfinite(s.split_at) || (s.log && s.split_at <= 0)))
    throw ColorScaleError("a split colour scale needs a finite threshold (positive on a log scale; got " +
                          number(s.split_at) + ")");
}

// (u - from) * gain maps [from, to] onto [0, 1]; 0 for an empty or reversed span.
float span_gain(double from, double to) {
  const double width = to - from;
  return width > 0 && std::isfinite(width) ? static_cast<float>(1.0 / width) : 0.0f;
}

double symmetric_bound(const ColorScale& s) {
  return std::max(std::abs(static_cast<double>(s.min)), std::abs(static_cast<double>(s.max)));
}

}  // namespace

ScaleMapping scale_mapping(const ColorScale& scale) {
  validate(scale);
  ScaleMapping m;
  m.log = scale.log;
  m.signed_log = scale.log && scale.symmetric;
  double lo = scale.min, hi = scale.max;
  if (scale.log) {
    const double floor = scale.log_floor;
    m.floor = scale.log_floor;
    m.log2_floor = std::log2(scale.log_floor);
    if (scale.symmetric) {
      const double k = std::log2(std::max(symmetric_bound(scale), floor)) - std::log2(floor);
      lo = -k;
      hi = k;
    } else {
      lo = std::log2(std::max(lo, floor));
      hi = std::log2(std::max(hi, floor));
    }
  } else if (scale.symmetric) {
    hi = symmetric_bound(scale);
    lo = -hi;
  }
  if (scale.split) {
    // Each half over its own side of the threshold (float throughout, as the shader does it).
    m.split = true;
    m.split_at = scale.split_at;
    const float split_u = scale.log ? std::log2(std::max(scale.split_at, scale.log_floor)) : scale.split_at;
    m.split_u = split_u;
    m.lo = static_cast<float>(lo);
    m.gain = span_gain(m.lo, split_u);
    m.gain_high = span_gain(split_u, static_cast<float>(hi));
    m.bias = 0.0f;
    return m;
  }
  if (scale.symmetric && hi > 0) {
    // Centred form, so that 0 lands exactly on the middle entry: t = u * (0.5 / hi) + 0.5.
    m.lo = 0.0f;
    m.gain = static_cast<float>(0.5 / hi);
    m.bias = 0.5f;
    return m;
  }
  m.lo = static_cast<float>(lo);
  const float width = static_cast<float>(hi) - m.lo;
  if (width > 0 && std::isfinite(width)) {
    m.gain = 1.0f / width;
    m.bias = 0.0f;
  } else if (hi > lo) {  // wider than a float can hold: still ordered, squeeze it
    m.gain = static_cast<float>(1.0 / (hi - lo));
    m.bias = 0.0f;
  } else {  // zero width: everything maps to the middle
    m.gain = 0.0f;
    m.bias = 0.5f;
  }
  return m;
}

ScaleEnds scale_ends(const ColorScale& scale) {
  validate(scale);
  if (scale.symmetric) {
    const auto m = static_cast<float>(symmetric_bound(scale));
    return {-m, m};
  }
  if (scale.log) return {std::max(scale.min, scale.log_floor), std::max(scale.max, scale.log_floor)};
  return {scale.min, scale.max};
}

double scale_position(const ScaleMapping& m, float x) {
  const auto clamp01 = [](double v) { return v > 0.0 ? (v < 1.0 ? v : 1.0) : 0.0; };
  double u = x;
  if (m.log) {
    const double l2 = std::log2(std::max(std::abs(x), m.floor));
    u = m.signed_log ? (x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0) * (l2 - m.log2_floor) : l2;
  }
  if (m.split)
    return x <= m.split_at ? 0.5 * clamp01((u - m.lo) * m.gain) : 0.5 + 0.5 * clamp01((u - m.split_u) * m.gain_high);
  return clamp01((u - m.lo) * m.gain + m.bias);
}

size_t ValueStats::count(CellClass c) const {
  switch (c) {
    case CellClass::finite: return finite;
    case CellClass::nan: return nan;
    case CellClass::pos_inf: return pos_inf;
    case CellClass::neg_inf: return neg_inf;
    case CellClass::masked: return masked;
    case CellClass::never_written: return never_written;
    case CellClass::not_traced: return not_traced;
    case CellClass::pending: return pending;
  }
  return 0;
}

ValueStats value_stats(std::span<const float> values, std::span<const uint8_t> mask) {
  if (!mask.empty() && mask.size() != values.size())
    throw ColorScaleError("mask has " + std::to_string(mask.size()) + " cells but the array has " +
                          std::to_string(values.size()));
  ValueStats s;
  bool any = false;
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    switch (classify_cell(v, mask.empty() ? 0 : mask[i])) {
      case CellClass::masked: ++s.masked; continue;
      case CellClass::never_written: ++s.never_written; continue;
      case CellClass::not_traced: ++s.not_traced; continue;
      case CellClass::pending: ++s.pending; continue;
      case CellClass::nan: ++s.nan; continue;
      case CellClass::pos_inf: ++s.pos_inf; continue;
      case CellClass::neg_inf: ++s.neg_inf; continue;
      case CellClass::finite: break;
    }
    ++s.finite;
    const float a = std::abs(v);
    if (!any) {
      s.min = s.max = v;
      s.max_abs = a;
      any = true;
    } else {
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
      s.max_abs = std::max(s.max_abs, a);
    }
    if (a > 0 && (s.min_abs_nonzero == 0 || a < s.min_abs_nonzero)) s.min_abs_nonzero = a;
  }
  return s;
}

ValueStats combine(const ValueStats& a, const ValueStats& b) {
  ValueStats s;
  s.finite = a.finite + b.finite;
  s.nan = a.nan + b.nan;
  s.pos_inf = a.pos_inf + b.pos_inf;
  s.neg_inf = a.neg_inf + b.neg_inf;
  s.masked = a.masked + b.masked;
  s.never_written = a.never_written + b.never_written;
  s.not_traced = a.not_traced + b.not_traced;
  s.pending = a.pending + b.pending;
  if (a.finite == 0 || b.finite == 0) {  // extremes come from the side that has any
    const ValueStats& x = a.finite ? a : b;
    s.min = x.min, s.max = x.max, s.max_abs = x.max_abs, s.min_abs_nonzero = x.min_abs_nonzero;
    return s;
  }
  s.min = std::min(a.min, b.min);
  s.max = std::max(a.max, b.max);
  s.max_abs = std::max(a.max_abs, b.max_abs);
  s.min_abs_nonzero = a.min_abs_nonzero == 0   ? b.min_abs_nonzero
                      : b.min_abs_nonzero == 0 ? a.min_abs_nonzero
                                               : std::min(a.min_abs_nonzero, b.min_abs_nonzero);
  return s;
}

ColorScale fit_scale(const ValueStats& s, ColorScale base) {
  ColorScale out = base;
  if (s.finite == 0) {
    out.min = 0.0f;
    out.max = 1.0f;
  } else if (base.symmetric) {
    out.min = -s.max_abs;
    out.max = s.max_abs;
  } else if (base.log) {  // magnitudes: the smallest non-zero |x| (not below the floor, which
                          // is where the scale stops resolving) to the largest
    out.min = std::max(s.min_abs_nonzero, base.log_floor);
    out.max = std::max(s.max_abs, out.min);
  } else {
    out.min = s.min;
    out.max = s.max;
  }
  if (base.split && !base.symmetric) {
    // Both halves in use: the threshold inside the range with room on each side.
    const float t = base.split_at;
    const float below = base.log ? t / 10 : t - std::max(std::abs(t), 1.0f);
    const float above = base.log ? t * 10 : t + std::max(std::abs(t), 1.0f);
    out.min = std::min(s.finite ? out.min : below, below);
    out.max = std::max(s.finite ? out.max : above, above);
    if (base.log) out.min = std::max(out.min, base.log_floor);
  }
  return out;
}

ColorScale autofit(std::span<const float> values, ColorScale base, std::span<const uint8_t> mask) {
  return fit_scale(value_stats(values, mask), base);
}

ColorMapper::ColorMapper(ColormapId colormap, const ColorScale& scale)
    : table_(&colormap_table(colormap)), mapping_(scale_mapping(scale)) {}

int ColorMapper::lut_index(float x) const {
  const ScaleMapping& m = mapping_;
  float u = x;
  if (m.log) {
    const float l2 = std::log2(std::max(std::abs(x), m.floor));
    u = m.signed_log ? (x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f) * (l2 - m.log2_floor) : l2;
  }
  const auto clamp01 = [](float v) { return v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f; };
  if (m.split) {
    // Which half is decided by the value; the index stays in its half whatever the rounding.
    if (x <= m.split_at) return std::min(static_cast<int>(0.5f * clamp01((u - m.lo) * m.gain) * 256.0f), 127);
    return std::clamp(static_cast<int>((0.5f + 0.5f * clamp01((u - m.split_u) * m.gain_high)) * 256.0f), 128, 255);
  }
  float t = (u - m.lo) * m.gain + m.bias;
  t = t > 0.0f ? (t < 1.0f ? t : 1.0f) : 0.0f;  // also sends a NaN to 0
  return std::min(static_cast<int>(t * 256.0f), 255);
}

Rgba8 ColorMapper::operator()(float value, uint8_t absent) const {
  const CellClass c = classify_cell(value, absent);
  if (c != CellClass::finite) return special_color(c);
  return (*table_)[static_cast<size_t>(lut_index(value))];
}

Rgba8 map_value(float value, ColormapId colormap, const ColorScale& scale, uint8_t absent) {
  return ColorMapper(colormap, scale)(value, absent);
}

ColorScale tolerance_scale() {
  ColorScale s;
  s.log = true;
  s.log_floor = kToleranceScaleLow;
  s.min = kToleranceScaleLow;
  s.max = kToleranceScaleHigh;
  s.split = true;
  s.split_at = 1.0f;
  return s;
}

}  // namespace ts
