#include "app/gui/synthetic_heatmaps.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <string>

namespace ts {
namespace {

// splitmix64: a tiny generator whose output is the same on every platform and library (the
// tests regenerate the arrays and must get the very same floats).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t below(int64_t n) { return static_cast<int64_t>(uniform() * static_cast<double>(n)); }
};

FloatGrid blank(int64_t rows, int64_t cols) {
  FloatGrid g;
  g.rows = rows;
  g.cols = cols;
  g.values.assign(static_cast<size_t>(rows * cols), 0.0f);
  return g;
}

}  // namespace

SyntheticHeatmaps make_synthetic_heatmaps(int64_t rows, int64_t cols, uint64_t seed) {
  if (rows <= 0 || cols <= 0 || rows > kMaxSyntheticHeatmapCells / cols)
    throw GridShapeError("synthetic heatmap size " + std::to_string(rows) + " x " + std::to_string(cols) +
                         " is not between 1 x 1 and " + std::to_string(kMaxSyntheticHeatmapCells) + " cells");
  SplitMix64 rng{seed};
  SyntheticHeatmaps d;
  d.trace = blank(rows, cols);
  d.reference = blank(rows, cols);
  d.diff = blank(rows, cols);
  const double phase = rng.uniform() * 2 * std::numbers::pi;
  std::vector<uint8_t> mask(static_cast<size_t>(rows * cols), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const double y = static_cast<double>(r) / static_cast<double>(rows);
    for (int64_t c = 0; c < cols; ++c) {
      const double x = static_cast<double>(c) / static_cast<double>(cols);
      const size_t i = static_cast<size_t>(r * cols + c);
      const double smooth = std::sin(6.0 * x + phase) * std::cos(4.0 * y - phase) + 0.5 * std::sin(11.0 * x * y);
      const double noise = rng.uniform() - 0.5;
      d.reference.values[i] = static_cast<float>(smooth + 0.1 * noise);
      // The error grows with the query row, as a mis-laid-out partial buffer makes it do.
      const double error = 0.02 * y * (rng.uniform() - 0.3);
      d.trace.values[i] = static_cast<float>(d.reference.values[i] + error);
      // A causal-style masked corner: top-right cells of the first quarter of rows.
      mask[i] = (4 * r < rows && 4 * (cols - c) < cols - 4 * r * cols / rows) ? 1 : 0;
    }
  }
  // A few odd cells in unmasked places.
  auto place = [&](std::vector<CellIndex>& out, float value, int count) {
    for (int k = 0; k < count; ++k) {
      for (int attempt = 0; attempt < 64; ++attempt) {
        const CellIndex cell{rng.below(rows), rng.below(cols)};
        const size_t i = static_cast<size_t>(cell.row * cols + cell.col);
        if (mask[i] || !std::isfinite(d.trace.values[i])) continue;
        d.trace.values[i] = value;
        out.push_back(cell);
        break;
      }
    }
  };
  const int specials = static_cast<int>(std::min<int64_t>(3, rows * cols / 16));
  place(d.nan_cells, std::numeric_limits<float>::quiet_NaN(), specials);
  place(d.pos_inf_cells, std::numeric_limits<float>::infinity(), std::min(specials, 1));
  place(d.neg_inf_cells, -std::numeric_limits<float>::infinity(), std::min(specials, 1));

  for (size_t i = 0; i < d.diff.values.size(); ++i) d.diff.values[i] = d.trace.values[i] - d.reference.values[i];
  d.trace.mask = mask;
  d.reference.mask = mask;
  d.diff.mask = std::move(mask);
  return d;
}

}  // namespace ts
