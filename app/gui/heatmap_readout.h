// Exact values at the cell under the cursor and at the picked cell, in every linked view side
// by side (trace | reference | diff): read from the CPU arrays, unaffected by colours.
#pragma once

#include <span>

#include "app/gui/heatmap_navigation.h"
#include "app/gui/heatmap_view.h"

namespace ts {

void draw_cell_readout(const HeatmapNavigation& nav, std::span<const HeatmapView* const> views);

}  // namespace ts
