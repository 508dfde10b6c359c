// 2-D float arrays (row-major, rows x cols) with an optional mask: FloatGridView is what
// heatmaps, PNG export and the GUI's textures take (owns nothing); FloatGrid owns its data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ts {

// Why a cell of a grid holds no value: the byte FloatGrid::mask holds for it (0: it holds one).
// colormap.h gives each its class, colour and words; exported .npy grids store each as a
// negative number (absent_cell_npy_value), since every error / tolerance is >= 0.
enum class AbsentCell : uint8_t {
  none = 0,
  masked = 1,         // the cell's rows see no key there (a causal or window mask, a short
                      // sequence): there is nothing to compute, and no event is expected
  never_written = 2,  // the kernel's plan has an event there that it never wrote
  not_traced = 3,     // the capture's filters (batch, heads, query rows, stages) left it out
  pending = 4,        // the viewer's analysis has not reached it yet (streamed analysis)
};
// -1 masked, -2 never written, -3 not traced, -4 pending (an export is never pending); 0 for none.
inline float absent_cell_npy_value(AbsentCell a) { return -static_cast<float>(static_cast<uint8_t>(a)); }

class GridShapeError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct FloatGridView {
  FloatGridView() = default;
  FloatGridView(std::span<const float> v, int64_t r, int64_t c, std::span<const uint8_t> m = {})
      : values(v), rows(r), cols(c), mask(m) {}

  std::span<const float> values;  // rows * cols, row-major
  int64_t rows = 0;
  int64_t cols = 0;
  std::span<const uint8_t> mask;  // empty, or one byte per value (AbsentCell; non-zero = no value)

  // Throws GridShapeError when the sizes disagree or a dimension is not positive.
  void validate() const {
    if (rows <= 0 || cols <= 0)
      throw GridShapeError("heatmap needs at least one row and one column (got " + std::to_string(rows) + " x " +
                           std::to_string(cols) + ")");
    if (static_cast<uint64_t>(rows) > values.size() / static_cast<uint64_t>(cols) ||
        static_cast<size_t>(rows) * static_cast<size_t>(cols) != values.size())
      throw GridShapeError("heatmap of " + std::to_string(rows) + " x " + std::to_string(cols) + " cells given " +
                           std::to_string(values.size()) + " values");
    if (!mask.empty() && mask.size() != values.size())
      throw GridShapeError("heatmap mask has " + std::to_string(mask.size()) + " cells, the array " +
                           std::to_string(values.size()));
  }

  size_t index(int64_t r, int64_t c) const { return static_cast<size_t>(r * cols + c); }
  float at(int64_t r, int64_t c) const { return values[index(r, c)]; }
  bool masked(int64_t r, int64_t c) const { return !mask.empty() && mask[index(r, c)] != 0; }  // any absent cell
  uint8_t absent(int64_t r, int64_t c) const { return mask.empty() ? 0 : mask[index(r, c)]; }
};

// An owned array, for data that must outlive its producer (e.g. what a GUI view shows).
struct FloatGrid {
  std::vector<float> values;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> mask;  // empty, or rows * cols bytes (AbsentCell)

  FloatGridView view() const { return {values, rows, cols, mask}; }
};

}  // namespace ts
