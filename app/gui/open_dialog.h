// "Open trace" / "Compare with...": a path field and a simple file list (folders first, then
// traces; a double-click enters a folder or opens a file), the recent files beside it. It only
// chooses a path: opening happens on the worker thread (the caller's job).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/model/viewer/recent_files.h"
#include "app/model/viewer/viewer_controller.h"

namespace ts {

// OpenTarget: viewer_controller.h.
struct OpenChoice {
  OpenTarget target = OpenTarget::a;
  std::filesystem::path path;
};

class OpenDialog {
 public:
  void show(OpenTarget target, const std::filesystem::path& folder);
  // Draws the dialog when shown; returns the chosen file once.
  std::optional<OpenChoice> draw(const RecentFiles& recent);

 private:
  struct Entry {
    std::string name;
    bool folder = false;
    uintmax_t size = 0;
  };
  void list(const std::filesystem::path& folder);

  bool show_requested_ = false;
  OpenTarget target_ = OpenTarget::a;
  std::filesystem::path folder_;
  std::string path_text_;
  std::vector<Entry> entries_;
  std::string list_error_;
  bool all_files_ = false;
};

}  // namespace ts
