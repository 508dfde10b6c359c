// The error panel: the ErrorLog's entries drawn in the window (a corrupt file, a failed
// export), each dismissable; nothing when there are none.
#pragma once

#include "app/gui/error_log.h"

namespace ts {

// Draws a panel along the bottom of the main viewport, `bottom_margin` above its edge (the
// status bar's height).
void draw_error_panel(ErrorLog& log, float bottom_margin);

}  // namespace ts
