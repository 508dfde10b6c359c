// The overview panel: the whole run at a glance, for whatever stages its trace declares. The
// per-stage verdict table (the stage table's names and kinds; events, failing rows, worst errors,
// NaN / +Inf / -Inf counts; a click selects the stage's first failing event); the error grid —
// worst error / tolerance by query index and the keys covered, of the non-final stages or of one
// stage — with the first divergence framed; and the event navigator, per stage a row per row
// block and a column per key position, each cell its event coloured by its worst error. A click
// on a grid cell or a navigator cell selects its event (event_grids.h says which); the selection
// is outlined in both. When query rows are few (decode) the error grid is the decode overview
// instead (pair_overview.h): every (batch, query head) as a row, grouped by kv head, by key
// position; a click on a cell selects that pair's event there.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "app/gui/error_log.h"
#include "app/gui/heatmap_display.h"
#include "app/gui/heatmap_export.h"
#include "app/gui/heatmap_navigation.h"
#include "app/gui/heatmap_renderer.h"
#include "app/gui/heatmap_view.h"
#include "app/gui/heatmap_view_layout.h"
#include "app/model/viewer/pair_overview.h"
#include "app/model/viewer/viewer_session.h"

namespace ts {

class OverviewPanel {
 public:
  OverviewPanel();

  // Fills `size` at the cursor of the current window.
  void draw(ViewerSession& session, HeatmapRenderer& renderer, ErrorLog& errors, ImVec2 size);

  std::vector<HeatmapViewLayout> layouts() const;
  const std::vector<LayoutMark>& marks() const { return marks_; }
  std::vector<ExportableHeatmap> exportables() const;
  // For --layout-json: the stages the verdict table lists, and what the error grid shows.
  const std::vector<std::string>& listed_stages() const { return listed_stages_; }
  const std::string& grid_name() const { return grid_name_; }

 private:
  struct NavigatorView {
    int32_t stage = 0;
    std::unique_ptr<HeatmapView> view;
    HeatmapNavigation nav;
    std::shared_ptr<const FloatGrid> grid;
  };

  void update(ViewerSession& session);
  void draw_selectors(ViewerSession& session);
  void draw_verdict_table(ViewerSession& session);
  void draw_error_grid(ViewerSession& session, HeatmapRenderer& renderer, ImVec2 size);
  void draw_pair_overview(ViewerSession& session, HeatmapRenderer& renderer, ImVec2 size);
  void draw_navigator(ViewerSession& session, HeatmapRenderer& renderer, ImVec2 size);
  // Frames cells of a view (screen rectangle from its layout) and records the mark.
  void frame_cells(const HeatmapView& view, const CellRect& cells, const char* name, bool divergence);

  const RunView* shown_run_ = nullptr;
  std::pair<int32_t, int32_t> shown_pair_{-1, -1};
  int32_t shown_stage_ = kOverviewGrid;

  std::shared_ptr<const FloatGrid> grid_;
  std::string grid_title_;
  std::string grid_name_;  // what the grid shows: "worst of fa1.step", or a stage's name
  HeatmapView grid_view_{"Error by query"};
  HeatmapNavigation grid_nav_;
  std::optional<CellIndex> last_grid_pick_;
  HeatmapDisplay grid_display_;
  // The decode overview of the shown run (empty when its query rows are not few).
  std::optional<PairOverview> pairs_;
  std::shared_ptr<const FloatGrid> pairs_grid_;
  HeatmapView pairs_view_{"Error by pair"};
  HeatmapNavigation pairs_nav_;
  std::optional<CellIndex> last_pairs_pick_;
  std::vector<NavigatorView> navigator_;
  HeatmapDisplay navigator_display_;
  std::vector<LayoutMark> marks_;
  std::vector<std::string> listed_stages_;
};

}  // namespace ts
