// The run's header line above the panels: the verdict and the symptom line in large text (what
// the shape of the errors says about the bug), then what was run — file, config, fault, backend
// and device, events and dropped events, the tolerance — with the symptom's evidence on hover.
#pragma once

#include "app/model/viewer/viewer_session.h"

namespace ts {

void draw_run_header(const ViewerSession& session, float width);

}  // namespace ts
