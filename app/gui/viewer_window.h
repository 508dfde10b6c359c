// The viewer's main window: menus, the run's header, the panels (overview and detail side by
// side, A/B, launch; or synthetic heatmaps), dialogs, keys and drag-and-drop. What they
// ask for (open, compare, launch, re-run, save, export) is forwarded to the controller
// (app/model/viewer/viewer_controller.h), which runs it off the UI thread; the window polls it
// once a frame and shows what changed.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/gui/ab_panel.h"
#include "app/gui/synthetic_window.h"
#include "app/gui/detail_panel.h"
#include "app/gui/error_log.h"
#include "app/gui/export_dialog.h"
#include "app/gui/gui_options.h"
#include "app/gui/heatmap_renderer.h"
#include "app/gui/heatmap_view_layout.h"
#include "app/gui/launch_panel.h"
#include "app/gui/open_dialog.h"
#include "app/gui/overview_panel.h"
#include "app/gui/timeline_panel.h"
#include "app/model/viewer/recent_files.h"
#include "app/model/viewer/viewer_controller.h"
#include "app/model/viewer/viewer_session.h"

namespace ts {

class ViewerWindow {
 public:
  ViewerWindow(const GuiOptions& options, ErrorLog& errors);

  // One frame: polls the job, draws the menu bar and fills [pos, pos + size).
  void draw(HeatmapRenderer& renderer, ImVec2 pos, ImVec2 size, double frame_seconds);

  // Paths dropped on the window: one opens as the run; two open as A and B.
  void drop(const std::vector<std::string>& paths);

  bool busy() const { return controller_.busy(); }
  bool animating() const { return playback_.playing || controller_.busy(); }
  bool quit_requested() const { return quit_; }
  // 0, or the exit code the CLI would give for why the run asked for at start (a trace, a pair,
  // the demo) could not be opened: 2 bad input, 3 failure, 130 cancelled.
  // A --pick outside the first event shown is a bad argument (2) too.
  int startup_exit_code() const { return startup_exit_code_ ? startup_exit_code_ : detail_.bad_pick() ? 2 : 0; }
  std::string title() const;
  std::string status_text() const;

  // For --layout-json: the visible views, the marks drawn on them, and what is shown.
  std::vector<HeatmapViewLayout> layouts() const;
  std::vector<LayoutMark> marks() const;
  nlohmann::json layout_extra() const;
  // Where Ctrl+E offers to export: named after the run and the selected event, never an existing
  // folder (export_naming.h).
  std::filesystem::path default_export_folder() const;

  ViewerSession& session() { return controller_.session(); }

 private:
  // Shows what the controller's poll found: its errors, and the tab a new run asks for.
  void poll_controller();
  void export_current(const ExportRequest& request);
  void show_save_dialog();

  void draw_menu_bar();
  void draw_job_bar();
  void draw_welcome(ImVec2 size);
  void draw_analysis(HeatmapRenderer& renderer, ImVec2 size);
  void draw_help();
  void handle_keys();

  GuiOptions options_;
  ErrorLog& errors_;
  RecentFiles recent_;
  ViewerController controller_;
  ViewerSession& session_;  // the controller's
  Playback playback_;
  int startup_exit_code_ = 0;

  GuiPanel panel_ = GuiPanel::both;
  std::optional<GuiPanel> select_tab_;  // switch tabs on the next frame
  OverviewPanel overview_;
  DetailPanel detail_;
  TimelinePanel timeline_;
  ABPanel ab_;
  LaunchPanel launch_;
  std::unique_ptr<SyntheticWindow> synthetic_;
  OpenDialog open_dialog_;
  ExportDialog export_dialog_;
  SaveTraceDialog save_dialog_;
  // The welcome page's recent files as last drawn: where each name was clicked (--layout-json).
  struct WelcomeRecentRow {
    std::string path, name, folder;
    float min_x = 0, min_y = 0, max_x = 0, max_y = 0;
  };
  std::vector<WelcomeRecentRow> welcome_recent_;
  bool focus_detail_ = false;  // a run was just shown: arrow keys move the detail's pick
  bool show_help_ = false;
  bool quit_ = false;
};

}  // namespace ts
