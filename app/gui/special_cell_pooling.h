// Keeping NaN and Inf visible when zoomed out. With fewer pixels than cells, nearest-neighbour
// drawing shows one cell per pixel and silently skips the rest, so a lone NaN among 8192 rows
// would vanish. The views therefore also keep, per tile, the NaN / Inf "severity" of each cell
// max-pooled over blocks of 2^kx x 2^ky cells; the shader marks a pixel in the special colour
// when any block its footprint touches holds one. No GL here (the pooling is unit-tested).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "app/model/colormap.h"

namespace ts {

// 3 NaN, 2 +Inf, 1 -Inf, 0 anything else (finite or masked: masking is expected, not alarming).
uint8_t special_severity(CellClass c);
CellClass severity_class(uint8_t severity);  // inverse for 1..3; finite for 0

struct PooledSeverity {
  int64_t rows = 0, cols = 0;  // ceil(rows / 2^ky), ceil(cols / 2^kx)
  std::vector<uint8_t> values;
};

// Max over each 2^kx (columns) x 2^ky (rows) block of `base` (rows x cols, row-major).
PooledSeverity max_pool_severity(std::span<const uint8_t> base, int64_t rows, int64_t cols, int kx, int ky);

// The pooling level for a zoom: 0 while a cell covers at least a pixel, else
// ceil(log2(cells per pixel)), at most 30.
int pooling_level(double pixels_per_cell);

}  // namespace ts
