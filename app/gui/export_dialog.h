// "Export...": where to, and what — the heatmaps on screen as PNG (with colour bar, axes and
// title, exactly their colormap and range) and as .npy arrays, and the analysis's evidence
// folder (app/model/export/export_run.h: summary.json, error grids, the first divergence). It
// only asks; the writing runs on the worker thread, and errors land in the error panel.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ts {

struct ExportRequest {
  std::filesystem::path folder;
  bool png = true;      // the heatmaps on screen as PNG
  bool npy = true;      // their arrays as .npy
  bool report = false;  // the analysis's evidence (export_run) in folder/report
  // The detail view of every event of the selected event's query rows, in the kernel's order, as
  // numbered frames (heatmap_export.h: event_frames), beside what is on screen.
  bool frames = false;
};

class ExportDialog {
 public:
  void show(const std::filesystem::path& folder);
  std::optional<ExportRequest> draw(bool have_run);

 private:
  bool show_requested_ = false;
  std::string folder_;
  ExportRequest choice_;
};

// "Save trace as...": a path for the open run's trace.
class SaveTraceDialog {
 public:
  void show(const std::filesystem::path& suggestion);
  std::optional<std::filesystem::path> draw();

 private:
  bool show_requested_ = false;
  std::string path_;
};

}  // namespace ts
