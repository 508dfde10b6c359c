// Colormaps and colour scales: how a float becomes a colour, on the CPU. The GL heatmap
// shader (shaders/heatmap.frag) uploads the same 256-entry tables and the same ScaleMapping,
// so a cell on screen, a cell in an exported PNG and map_value() agree (the screenshot test
// checks it). NaN, +Inf, -Inf and absent cells (masked, never written, not traced, pending) are
// classified here, on the CPU, and get colours that no colormap contains.
//
//   ColorScale scale = autofit(values);                 // min/max of the finite values
//   ColorMapper mapper(ColormapId::ember, scale);
//   Rgba8 c = mapper(values[i]);                        // or mapper(values[i], grid.mask[i])
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
  // error / tolerance: the lower half a cool ramp (dark blue -> teal: within tolerance), the
  // upper half a hot one (red -> orange -> pale yellow: over it). Meant for a split scale
  // (ColorScale::split) whose middle is the tolerance, so pass / fail reads at a glance.
  tolerance,
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
// driver). The numeric values are the ones the shader's class texture stores. The last four
// are cells that hold no value, for different reasons (float_grid.h: AbsentCell, the mask codes
// that say which): three facts about the run, and one about the viewer.
enum class CellClass : uint8_t {
  finite = 0,
  nan = 1,
  pos_inf = 2,
  neg_inf = 3,
  masked = 4,         // the rows see no key there: nothing to compute (by design)
  never_written = 5,  // the kernel was to write it and did not (a bug)
  not_traced = 6,     // the capture's filters left it out
  pending = 7,        // the analysis has not reached it yet
};
inline constexpr size_t kCellClassCount = 8;

// `absent` is a FloatGrid mask byte (float_grid.h: AbsentCell); non-zero wins over the value.
CellClass classify_cell(float value, uint8_t absent = 0);
// Short legend words: "finite", "NaN", "+Inf", "-Inf", "masked", "never written", "not traced",
// "pending".
std::string_view cell_class_name(CellClass c);
// What the class means, in a few words, for tooltips and legends of exported pictures:
// "masked (sees no key)", "never written by the kernel", "not traced (filtered)"...
std::string_view cell_class_meaning(CellClass c);
// The colour of a non-finite or absent cell; none of these is in any colormap table. The one
// definition the GUI's shader, the PNG export and the legends use.
Rgba8 special_color(CellClass c);

// Which values map to the two ends of the colormap.
//  - linear:              [min, max]
//  - symmetric:           [-M, M] with M = max(|min|, |max|) (diffs: 0 sits in the middle)
//  - log:                 log2 of |x|, clamped below at log_floor, over [max(min, floor), max]
//                         (min and max are magnitudes here)
//  - log and symmetric:   signed log: sign(x) * log2(max(|x|, floor) / floor) over [-K, K]
//                         with K = log2(M / floor) (errors spanning orders of magnitude)
// Values outside the range clamp to the ends. A range of zero width maps to the middle.
//  - split (not with symmetric): values <= split_at take the lower half of the colormap, over
//                         [min, split_at], values above it the upper half, over [split_at, max]
//                         (log or linear each side): the threshold is the middle of the bar,
//                         and which half a value lands in is decided on the value itself, not
//                         on a rounded colour index, so a cell just over it never looks like
//                         one under it.
struct ColorScale {
  float min = 0.0f;
  float max = 1.0f;
  bool log = false;
  float log_floor = 1e-6f;
  bool symmetric = false;
  bool split = false;
  float split_at = 1.0f;

  friend bool operator==(const ColorScale&, const ColorScale&) = default;
};

// The scale reduced to the few numbers both the CPU and the shader evaluate, in float:
//   u = log ? (signed_log ? sign(x) * (log2(max(|x|, floor)) - log2_floor)
//                         : log2(max(|x|, floor)))
//           : x
//   t = clamp((u - lo) * gain + bias, 0, 1);   index = min(int(t * 256), 255)
// With `split`: t = x <= split_at ? 0.5 * clamp((u - lo) * gain, 0, 1)
//                                  : 0.5 + 0.5 * clamp((u - split_u) * gain_high, 0, 1)
// and the index kept in [0, 127] or [128, 255] by the same comparison.
struct ScaleMapping {
  bool log = false;
  bool signed_log = false;
  float floor = 0.0f;
  float log2_floor = 0.0f;
  float lo = 0.0f;
  float gain = 1.0f;
  float bias = 0.0f;
  bool split = false;
  float split_at = 0.0f;   // compared with the value
  float split_u = 0.0f;    // split_at after the log, where the upper half starts
  float gain_high = 0.0f;

  friend bool operator==(const ScaleMapping&, const ScaleMapping&) = default;
};

// Throws ColorScaleError for NaN or infinite bounds, min > max, or a log floor that is not a
// positive finite number, a split with symmetric or a split_at that is not finite (positive on a
// log scale).
ScaleMapping scale_mapping(const ColorScale& scale);

// The lowest and highest value the colormap's ends stand for (after `symmetric`), for labels.
struct ScaleEnds {
  float low = 0.0f;
  float high = 1.0f;
};
ScaleEnds scale_ends(const ColorScale& scale);

// Where a finite value sits along the colour bar, 0 (low end) to 1 (high end), clamped: the t of
// ScaleMapping before it becomes a table index. For marks on colour bars (the tolerance: 0.5 on a
// split scale whose threshold it is).
double scale_position(const ScaleMapping& m, float value);

// Counts and extremes of an array, ignoring NaN, +-Inf and absent cells for the extremes.
struct ValueStats {
  size_t finite = 0, nan = 0, pos_inf = 0, neg_inf = 0;
  size_t masked = 0, never_written = 0, not_traced = 0, pending = 0;  // absent cells, by why
  size_t count(CellClass c) const;
  float min = 0.0f, max = 0.0f;   // of the finite values (0 when there are none)
  float max_abs = 0.0f;           // of the finite values
  float min_abs_nonzero = 0.0f;   // smallest |x| > 0 among the finite values (0 if none)
};
// `mask` is empty or one byte per value (non-zero: absent, AbsentCell says why). Throws ColorScaleError when the
// mask's size differs from the values'.
ValueStats value_stats(std::span<const float> values, std::span<const uint8_t> mask = {});

// Statistics of two arrays taken together.
ValueStats combine(const ValueStats& a, const ValueStats& b);

// `base` with min/max fitted to the finite, unmasked values (its log/symmetric/split flags and
// floor kept): [min, max]; symmetric: [-max|x|, max|x|]; log: [min non-zero |x|, max |x|]
// with both at least the log floor; split: widened to hold split_at with a decade (log) or
// the threshold's own size (linear) on each side, so that both halves stay in use.
// With no finite value the range is [0, 1] (split: the decade around split_at).
ColorScale fit_scale(const ValueStats& stats, ColorScale base);
ColorScale autofit(std::span<const float> values, ColorScale base = {},
                   std::span<const uint8_t> mask = {});

// value -> colour, as the shader computes it.
class ColorMapper {
 public:
  ColorMapper(ColormapId colormap, const ColorScale& scale);

  // The table index a finite value maps to (0..255).
  int lut_index(float value) const;
  Rgba8 operator()(float value, uint8_t absent = 0) const;

  const ScaleMapping& mapping() const { return mapping_; }
  const ColormapTable& table() const { return *table_; }

 private:
  const ColormapTable* table_;
  ScaleMapping mapping_;
};

// One-off convenience over ColorMapper.
Rgba8 map_value(float value, ColormapId colormap, const ColorScale& scale, uint8_t absent = 0);

// Every error / tolerance map (overview grids, event navigators, the timeline, exports) is
// drawn with one fixed scale, so that colour means the same thing in every run: log, from
// 1/1000 of the tolerance to 1000 times it, split at 1 (the tolerance) — cool within it, hot
// over it — on the `tolerance` colormap. A clean run is blue whatever its errors' size; a
// failing one is red to yellow. Auto-fit stays available (fit_scale keeps the split).
inline constexpr float kToleranceScaleLow = 1e-3f;
inline constexpr float kToleranceScaleHigh = 1e3f;
inline constexpr ColormapId kToleranceColormap = ColormapId::tolerance;
ColorScale tolerance_scale();

}  // namespace ts
