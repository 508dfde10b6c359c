// The timeline panel: where and when the kernel's events ran (app/model/viewer/timeline.h). One
// lane per SM (GPU) or SIMT worker (CPU), each event a box from its block's previous event to
// itself, coloured by its worst error / tolerance on the one fixed tolerance scale (colormap.h)
// or by its split; hover for the event, click to select it (the detail follows). Beside it, the
// duration of each stage and of each split, with the straggler split and the wait between
// passes (does the reduce wait for the slowest split?); a click on a row zooms to it. Wheel zooms
// time around the cursor, a drag pans, a double-click fits.
#pragma once

#include <memory>
#include <optional>

#include <imgui.h>
#include <nlohmann/json.hpp>

#include "app/model/viewer/timeline.h"
#include "app/model/viewer/viewer_session.h"

namespace ts {

class TimelinePanel {
 public:
  void draw(ViewerSession& session, ImVec2 size);

  bool colour_by_split = false;  // else by error / tolerance
  bool collapse_gaps = true;     // idle spans (between passes) drawn narrow (timeline.h: TimelineAxis)

  // For --layout-json: lanes, boxes, the clock and where the lanes were drawn (screen pixels).
  nlohmann::json layout() const;

 private:
  void update(const ViewerSession& session);
  void draw_durations(const ViewerSession& session, float width);
  void draw_lanes(ViewerSession& session, ImVec2 size);
  void zoom_to(const TimelineSpan& span);  // the lanes' time window on a stage's or a split's events

  const RunView* shown_run_ = nullptr;
  Timeline timeline_;
  TimelineAxis axis_;
  bool axis_collapsed_ = true;  // what axis_ was made with
  // The visible window, in axis units (ns from the timeline's origin where no gap is cut).
  double view_begin_ = 0, view_end_ = 1;
  float plot_[4] = {0, 0, 0, 0};  // x, y, w, h of the lanes as last drawn (0: not drawn)
};

}  // namespace ts
