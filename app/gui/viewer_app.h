// The viewer's main loop: window, menu, the demo heatmaps, status bar, error panel; and the
// headless modes (--screenshot, --frame-stats, --frames). Returns the process exit code:
// 0 fine, 2 bad input (e.g. a screenshot path that cannot be written), 3 no display / no GL.
#pragma once

#include "app/gui/gui_options.h"

namespace ts {

int run_viewer(const GuiOptions& options);

}  // namespace ts
