// Where to put the numbered ticks of a heatmap axis (cells numbered 0..n-1): on multiples of
// a 1-2-5 step, far enough apart for their labels. Shared by the GUI and PNG export.
#pragma once

#include <cstdint>
#include <vector>

namespace ts {

// The smallest step of the form {1, 2, 5} x 10^k (>= 1 cell) that puts ticks at least
// `min_spacing_px` apart when a cell is `px_per_cell` wide.
int64_t tick_step(double px_per_cell, double min_spacing_px);

// Multiples of tick_step() in [begin, end).
std::vector<int64_t> axis_ticks(int64_t begin, int64_t end, double px_per_cell, double min_spacing_px);

}  // namespace ts
