// How the viewer prints a cell: exact enough to tell float neighbours apart (9 significant
// digits round-trip a float), and what a special cell is. No GL, no ImGui.
#pragma once

#include <string>

#include "app/model/colormap.h"

namespace ts {

// "-1.23456791e-03", "NaN", "+Inf", "-Inf", "masked (0.5)".
std::string format_cell_value(float value, bool masked = false);
// "%.4g" for labels of ranges and axes.
std::string format_short(double value);

}  // namespace ts
