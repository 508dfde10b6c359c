// The detail panel: the selected event beside its float64 reference. Three linked heatmaps —
// trace | reference | diff, rows x head_dim, O/l or raw O — sharing zoom, pan and the picked
// cell, each with its colour controls and colour bar; the exact values under the cursor and at
// the picked cell in all three; m and l over the query rows (trace vs reference) and the error
// by query index of the event's stage, as curves. The stepping bar sits on top.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <optional>
#include <tuple>
#include <vector>

#include "app/gui/curve_plot.h"
#include "app/gui/error_log.h"
#include "app/gui/gui_options.h"
#include "app/gui/heatmap_display.h"
#include "app/gui/heatmap_export.h"
#include "app/gui/heatmap_navigation.h"
#include "app/gui/heatmap_renderer.h"
#include "app/gui/heatmap_view.h"
#include <nlohmann/json.hpp>
#include "app/model/viewer/cell_readout.h"
#include "app/model/viewer/viewer_session.h"

namespace ts {

class DetailPanel {
 public:
  explicit DetailPanel(const GuiOptions& options);

  // Fills `size` at the cursor of the current window.
  void draw(ViewerSession& session, HeatmapRenderer& renderer, ErrorLog& errors, Playback& playback, ImVec2 size);

  std::vector<HeatmapViewLayout> layouts() const;
  std::vector<ExportableHeatmap> exportables() const;
  HeatmapNavigation& navigation() { return nav_; }
  const HeatmapDisplay& values_display() const { return values_display_; }
  const HeatmapDisplay& diff_display() const { return diff_display_; }
  // The picked cell's numbers as last drawn (for --layout-json).
  const std::optional<CellReadout>& readout() const { return readout_; }
  // --pick named a cell outside the first event shown (reported in the error panel; a headless
  // run exits 2, as for any bad argument).
  bool bad_pick() const { return bad_pick_; }
  // The curves as last drawn (for --layout-json): what x counts, the group when they run across
  // one, and per plot its area, frame and series.
  nlohmann::json curves_layout() const;

  bool normalised = true;  // O/l (the attention output so far) or O as stored
  // Few query rows and GQA: the curves run across the selected event's kv-head group (one point
  // per query head, stage_series.h: group_series) instead of over its splits.
  bool curves_over_group = false;

 private:
  void update(ViewerSession& session, ErrorLog& errors);
  void draw_header(ViewerSession& session);
  void draw_toolbar();
  void draw_views(HeatmapRenderer& renderer, float height);
  void draw_curves(ViewerSession& session, float height);
  // The picked cell in numbers (cell_readout.h): where it is in the run, trace, reference, errors,
  // the allowed error and error / tolerance; Copy and Ctrl+C put them on the clipboard as text.
  void draw_how_much(ViewerSession& session);
  // "Worst cell" jumps: in the shown event (largest error / tolerance), and in the run (the
  // analysis's worst cell: selects its event).
  void pick_worst_in_event(ViewerSession& session);
  void pick_worst_in_run(ViewerSession& session);

  // What the views show now; refreshed when the selection or `normalised` changes.
  std::optional<size_t> shown_event_;
  const RunView* shown_run_ = nullptr;
  bool shown_normalised_ = true;
  std::string title_;
  std::shared_ptr<const FloatGrid> trace_grid_, reference_grid_, diff_grid_;
  CurveSeries m_trace_, m_reference_, l_trace_, l_reference_, error_by_query_;
  bool normalised_state_ = false;      // compared as normalised: m is the LSE, l is 1
  bool error_whole_run_ = false;       // error_by_query_ is the stage's grid, not this event's rows
  int64_t error_rows_per_point_ = 1;   // queries pooled into one point of it
  // Few query rows (decode): the curves run over the event's siblings (stage_series.h), x
  // counting this, the selected event at series_selected_.
  std::optional<std::string> series_x_label_;
  size_t series_selected_ = 0;
  int64_t series_first_x_ = 0;
  bool shown_over_group_ = false;
  std::string group_label_;  // the selected event's group ("kv head 0: heads 0-3"), when it has one
  struct DrawnCurve {
    std::string id;
    CurvePlotHover where;
    std::vector<const CurveSeries*> series;
  };
  std::vector<DrawnCurve> drawn_curves_;
  int64_t first_row_ = 0;
  int32_t rows_ = 0;
  bool passes_ = true;
  float worst_ratio_ = 0;
  std::string convention_;
  std::string error_;  // why the selected event cannot be shown

  HeatmapView trace_{"Trace"}, reference_{"Reference"}, diff_{"Diff (trace - reference)"};
  HeatmapNavigation nav_;
  HeatmapDisplay values_display_, reference_display_, diff_display_;
  bool link_ranges_ = true;
  int max_tile_ = 0;
  std::optional<CellIndex> initial_pick_;  // --pick, until the first event is shown
  bool bad_pick_ = false;
  std::optional<CellIndex> pending_pick_;  // a run's worst cell, picked once its event is shown
  bool animate_ = false;
  int animate_frame_ = 0;
  std::optional<CellReadout> readout_;
  bool worst_event_clicked_ = false, worst_run_clicked_ = false;  // this frame's toolbar
};

}  // namespace ts
