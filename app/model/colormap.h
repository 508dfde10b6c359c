// Colormaps and colour scales: how a float becomes a colour, on the CPU. The GL heatmap
// shader (shaders/heatmap.frag) uploads the same 256-entry tables and the same ScaleMapping,
// so a cell on screen, a cell in an exported PNG and map_value() agree (the screenshot test
// checks it). NaN, +Inf, -Inf and masked cells are classified here, on the CPU, and get colours
// that no colormap contains.
//
//   ColorScale scale = autofit(values);                 // min/max of the finite values
//   ColorMapper mapper(ColormapId::ember, scale);
//   Rgba8 c = mapper(values[i]);                        // or mapper(values[i], /*masked=*/true)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ts {

struct Rgba8 {
  uint8_t r = 0, g = 0, b = 0, a = 255;
  friend bool operator==(const Rgba8&, const Rgba8&) = default;
};

// "(r, g, b, a)", for messages and test failures.
std::string to_string(Rgba8 c);

// A bad colormap name or colour scale (NaN bounds, a log floor <= 0, ...).
class ColorScaleError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class ColormapId : uint8_t {
  ember,      // sequential: near-black violet -> crimson -> orange -> pale yellow
  glacier,    // sequential: deep indigo -> teal -> green -> yellow
  gray,       // sequential: black -> white, even steps of perceived lightness
  diverging,  // signed values: blue (negative) -> near-white (0) -> red (positive)
};

inline constexpr size_t kColormapSize = 256;
using ColormapTable = std::array<Rgba8, kColormapSize>;

std::span<const ColormapId> all_colormaps();
std::string_view colormap_name(ColormapId id);
// Throws ColorScaleError naming the valid names.
ColormapId colormap_from_name(std::string_view name);
bool colormap_is_diverging(ColormapId id);
// 256 opaque colours, index 0 for the low end. Built once (thread-safe) from the map's
// definition in OKLab: lightness is strictly monotonic for the sequential maps.
const ColormapTable& colormap_table(ColormapId id);

// What a cell holds, decided on the CPU (GLSL's isnan/isinf are not reliable on every
// driver). The numeric values are the ones the shader's class texture stores.
enum class CellClass : uint8_t { finite = 0, nan = 1, pos_inf = 2, neg_inf = 3, masked = 4 };
inline constexpr size_t kCellClassCount = 5;

CellClass classify_cell(float value, bool masked = false);
std::string_view cell_class_name(CellClass c);  // "finite", "NaN", "+Inf", "-Inf", "masked"
// The colour of a non-finite or masked cell; none of these is in any colormap table.
Rgba8 special_color(CellClass c);

// Which values map to the two ends of the colormap.
//  - linear:              [min, max]
//  - symmetric:           [-M, M] with M = max(|min|, |max|) (diffs: 0 sits in the middle)
//  - log:                 log2 of |x|, clamped below at log_floor, over [max(min, floor), max]
//                         (min and max are magnitudes here)
//  - log and symmetric:   signed log: sign(x) * log2(max(|x|, floor) / floor) over [-K, K]
//                         with K = log2(M / floor) (errors spanning orders of magnitude)
// Values outside the range clamp to the ends. A range of zero width maps to the middle.
struct ColorScale {
  float min = 0.0f;
  float max = 1.0f;
  bool log = false;
  float log_floor = 1e-6f;
  bool symmetric = false;

  friend bool operator==(const ColorScale&, const ColorScale&) = default;
};

// The scale reduced to the few numbers both the CPU and the shader evaluate, in float:
//   u = log ? (signed_log ? sign(x) * (log2(max(|x|, floor)) - log2_floor)
//                         : log2(max(|x|, floor)))
//           : x
//   t = clamp((u - lo) * gain + bias, 0, 1);   index = min(int(t * 256), 255)
struct ScaleMapping {
  bool log = false;
  bool signed_log = false;
  float floor = 0.0f;
  float log2_floor = 0.0f;
  float lo = 0.0f;
  float gain = 1.0f;
  float bias = 0.0f;
};

// Throws ColorScaleError for NaN or infinite bounds, min > max, or a log floor that is not a
// positive finite number.
ScaleMapping scale_mapping(const ColorScale& scale);

// The lowest and highest value the colormap's ends stand for (after `symmetric`), for labels.
struct ScaleEnds {
  float low = 0.0f;
  float high = 1.0f;
};
ScaleEnds scale_ends(const ColorScale& scale);

// Counts and extremes of an array, ignoring NaN, +-Inf and masked cells for the extremes.
struct ValueStats {
  size_t finite = 0, nan = 0, pos_inf = 0, neg_inf = 0, masked = 0;
  float min = 0.0f, max = 0.0f;   // of the finite values (0 when there are none)
  float max_abs = 0.0f;           // of the finite values
  float min_abs_nonzero = 0.0f;   // smallest |x| > 0 among the finite values (0 if none)
};
// `mask` is empty or one byte per value (non-zero = masked). Throws ColorScaleError when the
// mask's size differs from the values'.
ValueStats value_stats(std::span<const float> values, std::span<const uint8_t> mask = {});

// Statistics of two arrays taken together.
ValueStats combine(const ValueStats& a, const ValueStats& b);

// `base` with min/max fitted to the finite, unmasked values (its log/symmetric flags and
// floor kept): [min, max]; symmetric: [-max|x|, max|x|]; log: [min non-zero |x|, max |x|]
// with both at least the log floor.
// With no finite value the range is [0, 1].
ColorScale fit_scale(const ValueStats& stats, ColorScale base);
ColorScale autofit(std::span<const float> values, ColorScale base = {},
                   std::span<const uint8_t> mask = {});

// value -> colour, as the shader computes it.
class ColorMapper {
 public:
  ColorMapper(ColormapId colormap, const ColorScale& scale);

  // The table index a finite value maps to (0..255).
  int lut_index(float value) const;
  Rgba8 operator()(float value, bool masked = false) const;

  const ScaleMapping& mapping() const { return mapping_; }
  const ColormapTable& table() const { return *table_; }

 private:
  const ColormapTable* table_;
  ScaleMapping mapping_;
};

// One-off convenience over ColorMapper.
Rgba8 map_value(float value, ColormapId colormap, const ColorScale& scale, bool masked = false);

}  // namespace ts
