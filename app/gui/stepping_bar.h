// Stepping through events in the kernels' own order (app/model/viewer/event_stepper.h): the bar
// (first, previous, play / pause with speed, next, last; a slider over the scope; whole run or
// these rows; next failing, first divergence) and the keys, which work wherever no text field
// has the keyboard:
//   [ or PageUp  previous      ] or PageDown  next      Home / End  first / last
//   N  next failing event      Shift+N  first divergence      Space  play / pause
#pragma once

#include "app/model/viewer/event_stepper.h"
#include "app/model/viewer/viewer_session.h"

namespace ts {

// Returns true when the selection changed.
bool draw_stepping_bar(ViewerSession& session, Playback& playback, float width);
bool handle_stepping_keys(ViewerSession& session, Playback& playback);
// Advances playback by the frame's time; pauses at the end of the scope. Returns true when the
// selection changed.
bool advance_playback(ViewerSession& session, Playback& playback, double seconds);

}  // namespace ts
