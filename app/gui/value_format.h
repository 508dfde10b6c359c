// How the viewer prints a cell: exact enough to tell float neighbours apart (9 significant
// digits round-trip a float), and what a special cell is. No GL, no ImGui.
#pragma once

#include <cstdint>
#include <string>

#include "app/model/colormap.h"

namespace ts {

// "-1.23456791e-03", "NaN", "+Inf", "-Inf"; an absent cell (`absent`: its FloatGrid mask byte)
// says why it has no value: "masked (sees no key)", "never written by the kernel"...
std::string format_cell_value(float value, uint8_t absent = 0);
// "%.4g" for labels of ranges and axes.
std::string format_short(double value);

}  // namespace ts
