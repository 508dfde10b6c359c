// The viewer's command line. No GL: parsed and tested without a display.
//
//   tilescope-gui                                     the demo heatmaps, interactive
//   tilescope-gui --screenshot out.png [--frames N] [--size WxH]
//                                                     render N frames, save the window, exit
//   tilescope-gui --frame-stats stats.json --frames 300 --demo-size 8192x128
//                                                     per-frame CPU time (median, p99), exit
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/heatmap_camera.h"
#include "app/model/colormap.h"

namespace ts {

struct GuiOptions {
  std::optional<std::filesystem::path> screenshot;   // PNG of the window after the last frame
  std::optional<std::filesystem::path> frame_stats;  // JSON of per-frame CPU times
  std::optional<std::filesystem::path> layout_json;  // where each heatmap landed (for tests)
  std::optional<std::filesystem::path> input_script; // scripted mouse / keys (input_script.h)
  int frames = 0;                                    // stop after this many (0 = run until closed)
  int width = 1600, height = 900;                    // window size in screen coordinates
  int64_t demo_rows = 96, demo_cols = 64;
  uint64_t demo_seed = 1;
  int max_tile = 0;                  // texture tile side limit; 0 = GL_MAX_TEXTURE_SIZE
  std::optional<CellIndex> pick;     // initially picked cell
  std::vector<std::string> inject_errors;  // thrown mid-frame, one per frame: the error path
  std::optional<ColormapId> values_colormap;  // trace and reference: colormap...
  std::string values_scale = "linear";        // ...and scale: linear, log, symmetric, signed-log
  bool vsync = true;
  bool animate = false;  // zoom the views a little every frame (timing of re-rendered frames)

  bool headless_run() const { return screenshot || frames > 0; }
};

struct GuiOptionsResult {
  std::optional<GuiOptions> options;  // set when the viewer should run
  int exit_code = 0;                  // otherwise: 0 after --help, 2 after a usage error
  std::string output;                 // help text or the error message
};

GuiOptionsResult parse_gui_options(int argc, const char* const* argv);

}  // namespace ts
