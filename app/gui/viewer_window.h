// The viewer's main window: menus, the run's header, the panels (overview and detail side by
// side, A/B, launch; or the heatmap test pattern), dialogs, keys, drag-and-drop, and the
// worker-thread job that opens, captures, compares and exports. The UI thread only polls the
// job; whatever the job produced is applied here, between frames.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/gui/ab_panel.h"
#include "app/gui/demo_window.h"
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
#include "app/model/viewer/background_job.h"
#include "app/model/viewer/recent_files.h"
#include "app/model/viewer/viewer_session.h"

namespace ts {

class ViewerWindow {
 public:
  ViewerWindow(const GuiOptions& options, ErrorLog& errors);

  // One frame: polls the job, draws the menu bar and fills [pos, pos + size).
  void draw(HeatmapRenderer& renderer, ImVec2 pos, ImVec2 size, double frame_seconds);

  // Paths dropped on the window: one opens as the run; two open as A and B.
  void drop(const std::vector<std::string>& paths);

  bool busy() const { return job_.running(); }
  bool animating() const { return playback_.playing || job_.running(); }
  bool quit_requested() const { return quit_; }
  // 0, or the exit code the CLI would give for why the run asked for at start (a trace, a pair,
  // the demo) could not be opened: 2 bad input, 3 failure, 130 cancelled.
  int startup_exit_code() const { return startup_exit_code_; }
  std::string title() const;
  std::string status_text() const;

  // For --layout-json: the visible views, the marks drawn on them, and what is shown.
  std::vector<HeatmapViewLayout> layouts() const;
  std::vector<LayoutMark> marks() const;
  nlohmann::json layout_extra() const;
  // Where Ctrl+E offers to export: named after the run and the selected event, never an existing
  // folder (export_naming.h).
  std::filesystem::path default_export_folder() const;

  ViewerSession& session() { return session_; }

 private:
  using Apply = std::function<void(ViewerWindow&)>;

  void start_job(std::string what, std::function<Apply(JobProgress&)> work);
  void poll_job();
  void open_file(const std::filesystem::path& path, OpenTarget target);
  void open_pair(const std::filesystem::path& a, const std::filesystem::path& b);
  void launch(const CaptureRequest& request, bool as_b);
  // Runs of our kernels only: a user's trace has no config to launch again.
  bool can_rerun() const;
  void rerun_on_other_backend();
  void swap_ab();
  void export_current(const ExportRequest& request);
  void save_trace_as(const std::filesystem::path& path);
  void show_save_dialog();
  void show_run(LoadedRun run);
  void remember(const std::filesystem::path& path);

  void draw_menu_bar();
  void draw_job_bar();
  void draw_welcome(ImVec2 size);
  void draw_analysis(HeatmapRenderer& renderer, ImVec2 size);
  void draw_help();
  void handle_keys();

  GuiOptions options_;
  ErrorLog& errors_;
  ViewerSession session_;
  Playback playback_;
  BackgroundJob<Apply> job_;
  RecentFiles recent_;
  std::optional<SelectRequest> pending_select_;
  bool startup_done_ = false;
  int startup_exit_code_ = 0;

  GuiPanel panel_ = GuiPanel::both;
  std::optional<GuiPanel> select_tab_;  // switch tabs on the next frame
  OverviewPanel overview_;
  DetailPanel detail_;
  TimelinePanel timeline_;
  ABPanel ab_;
  LaunchPanel launch_;
  std::unique_ptr<DemoWindow> synthetic_;
  OpenDialog open_dialog_;
  ExportDialog export_dialog_;
  SaveTraceDialog save_dialog_;
  bool focus_detail_ = false;  // a run was just shown: arrow keys move the detail's pick
  bool show_help_ = false;
  bool quit_ = false;
  std::string last_status_;
};

}  // namespace ts
