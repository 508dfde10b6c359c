// Synthetic heatmaps: trace | reference | diff of synthetic data (synthetic_heatmaps.h), linked
// (zoom, pan and the picked cell are shared), with their controls, colour bars, the exact
// values under the cursor and at the picked cell, and PNG export. It exercises every piece a
// trace panel will use, and is what the screenshot tests look at.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "app/gui/synthetic_heatmaps.h"
#include "app/gui/error_log.h"
#include "app/gui/gui_options.h"
#include "app/gui/heatmap_display.h"
#include "app/gui/heatmap_navigation.h"
#include "app/gui/heatmap_renderer.h"
#include "app/gui/heatmap_view.h"

namespace ts {

class SyntheticWindow {
 public:
  explicit SyntheticWindow(const GuiOptions& options);

  // Fills the rectangle [pos, pos + size) of the main viewport.
  void draw(HeatmapRenderer& renderer, ErrorLog& errors, ImVec2 pos, ImVec2 size);
  void open_export_dialog() { export_requested_ = true; }
  HeatmapNavigation& navigation() { return nav_; }

  std::vector<HeatmapViewLayout> layouts() const;

 private:
  void draw_toolbar();
  void draw_export_dialog(ErrorLog& errors);
  void export_pngs(ErrorLog& errors);

  SyntheticHeatmaps data_;
  std::string description_;
  HeatmapView trace_{"Trace"}, reference_{"Reference"}, diff_{"Diff (trace - reference)"};
  HeatmapNavigation nav_;
  HeatmapDisplay values_display_, reference_display_, diff_display_;
  bool link_reference_ = true;
  bool export_requested_ = false;
  bool focus_once_ = true;
  bool animate_ = false;
  int animate_frame_ = 0;
  std::string export_folder_ = "tilescope-synthetic-export";
  std::string export_status_;
};

}  // namespace ts
