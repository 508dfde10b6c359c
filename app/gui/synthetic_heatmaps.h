// Synthetic trace / reference / diff arrays for the viewer's synthetic heatmaps panel
// (tilescope-gui --synthetic) and for the screenshot tests, which rebuild the same arrays from
// the same seed and check the screenshot's pixels against the CPU colormap. No GL.
//
// The story they tell is one of the seeds' bugs: an error that grows with the query row,
// a few NaN and infinite cells, and a masked (causal-style) corner.
#pragma once

#include <cstdint>
#include <vector>

#include "app/gui/heatmap_camera.h"
#include "app/model/float_grid.h"

namespace ts {

struct SyntheticHeatmaps {
  FloatGrid trace;      // reference + an error growing with the row, NaN / +-Inf cells
  FloatGrid reference;  // smooth values in about [-1.5, 1.5]
  FloatGrid diff;       // trace - reference (NaN and Inf carried through)
  std::vector<CellIndex> nan_cells, pos_inf_cells, neg_inf_cells;  // in trace and diff
};

// The largest synthetic heatmaps, in cells: each cell costs about 40 bytes in the viewer (three
// float arrays and their mask here, and a two-channel float texture per view on the GPU or,
// under llvmpipe, in memory), so 2^24 cells are about 700 MB; 2^28 were over 6 GB.
inline constexpr int64_t kMaxSyntheticHeatmapCells = int64_t{1} << 24;

// Throws GridShapeError unless rows and cols are positive and rows * cols <= kMaxSyntheticHeatmapCells.
SyntheticHeatmaps make_synthetic_heatmaps(int64_t rows, int64_t cols, uint64_t seed);

}  // namespace ts
