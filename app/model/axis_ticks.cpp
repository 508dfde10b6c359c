#include "app/model/axis_ticks.h"

#include <cmath>

namespace ts {

int64_t tick_step(double px_per_cell, double min_spacing_px) {
  if (!(px_per_cell > 0) || !std::isfinite(px_per_cell)) return 1;
  const double cells = min_spacing_px / px_per_cell;
  if (!(cells > 1)) return 1;
  int64_t decade = 1;
  // 10^18 cells is beyond any array; the bound keeps the loop finite for absurd inputs.
  for (int i = 0; i < 18; ++i, decade *= 10)
    for (int64_t m : {1, 2, 5})
      if (static_cast<double>(m * decade) >= cells) return m * decade;
  return decade;
}

std::vector<int64_t> axis_ticks(int64_t begin, int64_t end, double px_per_cell, double min_spacing_px) {
  std::vector<int64_t> ticks;
  if (end <= begin) return ticks;
  const int64_t step = tick_step(px_per_cell, min_spacing_px);
  int64_t first = begin >= 0 ? (begin + step - 1) / step * step : -((-begin) / step * step);
  for (int64_t t = first; t < end; t += step) ticks.push_back(t);
  return ticks;
}

}  // namespace ts
