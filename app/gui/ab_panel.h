// The A/B panel: two runs of the same problem (GPU vs CPU, a fault vs the fixed kernel, two
// split counts, two schedules) — the A/B report (inputs, tilings, where they first disagree,
// each run's own verdict against the reference) and, for the selected event, A | B | A - B
// side by side where the tilings match, else the final output of the selected pair.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/error_log.h"
#include "app/gui/heatmap_display.h"
#include "app/gui/heatmap_export.h"
#include "app/gui/heatmap_navigation.h"
#include "app/gui/heatmap_renderer.h"
#include "app/gui/heatmap_view.h"
#include "app/model/viewer/viewer_session.h"

namespace ts {

struct ABPanelActions {
  std::function<void()> open_b;      // "Compare with..." (the open dialog, for B)
  std::function<void()> rerun_other; // re-run A on the other backend, as B
  std::function<void()> swap;        // B becomes A and A becomes B
  Playback* playback = nullptr;      // the viewer's playback, for the stepping bar
};

class ABPanel {
 public:
  void draw(ViewerSession& session, HeatmapRenderer& renderer, ErrorLog& errors, const ABPanelActions& actions,
            ImVec2 size);
  std::vector<HeatmapViewLayout> layouts() const;
  std::vector<ExportableHeatmap> exportables() const;

  bool normalised = true;

 private:
  void update(ViewerSession& session, ErrorLog& errors);
  void draw_report(ViewerSession& session);

  const RunView* shown_a_ = nullptr;
  const RunView* shown_b_ = nullptr;
  std::optional<size_t> shown_event_;
  bool shown_normalised_ = true;
  std::string what_;
  std::shared_ptr<const FloatGrid> a_grid_, b_grid_, diff_grid_;
  HeatmapView a_{"A"}, b_{"B"}, diff_{"A - B"};
  HeatmapNavigation nav_;
  HeatmapDisplay values_display_, diff_display_;
};

}  // namespace ts
