#include "app/gui/special_cell_pooling.h"

#include <algorithm>
#include <cmath>

namespace ts {

uint8_t special_severity(CellClass c) {
  switch (c) {
    case CellClass::nan: return 3;
    case CellClass::pos_inf: return 2;
    case CellClass::neg_inf: return 1;
    default: return 0;
  }
}

CellClass severity_class(uint8_t s) {
  switch (s) {
    case 3: return CellClass::nan;
    case 2: return CellClass::pos_inf;
    case 1: return CellClass::neg_inf;
    default: return CellClass::finite;
  }
}

PooledSeverity max_pool_severity(std::span<const uint8_t> base, int64_t rows, int64_t cols, int kx, int ky) {
  PooledSeverity out;
  const int64_t bx = int64_t{1} << kx, by = int64_t{1} << ky;
  out.rows = (rows + by - 1) / by;
  out.cols = (cols + bx - 1) / bx;
  out.values.assign(static_cast<size_t>(out.rows * out.cols), 0);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* dst = out.values.data() + (r / by) * out.cols;
    const uint8_t* src = base.data() + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      uint8_t& d = dst[c / bx];
      d = std::max(d, src[c]);
    }
  }
  return out;
}

int pooling_level(double pixels_per_cell) {
  if (!(pixels_per_cell < 1.0) || !(pixels_per_cell > 0)) return 0;
  return std::min(30, static_cast<int>(std::ceil(std::log2(1.0 / pixels_per_cell) - 1e-9)));
}

}  // namespace ts
