// The viewer's main loop: window, the ViewerWindow (menus, panels, dialogs, the worker job),
// status bar, error panel; and the headless modes (--screenshot, --frame-stats, --frames), which
// first wait for the run being opened or captured (frames spent waiting are not counted).
// Returns the process exit code: 0 fine, 2 bad input (e.g. a screenshot path that cannot be
// written), 3 no display / no GL, 4 a headless run whose opening or capture did not finish in
// --job-timeout seconds.
#pragma once

#include "app/gui/gui_options.h"

namespace ts {

int run_viewer(const GuiOptions& options);

}  // namespace ts
