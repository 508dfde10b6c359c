// The viewer's command line. No GL: parsed and tested without a display.
//
//   tilescope-gui                                   interactive: open or launch a run from the window
//   tilescope-gui RUN.trace.safetensors [--against B.trace.safetensors]
//                                                   open a trace (and compare it with another)
//   tilescope-gui --demo                            capture the built-in demo (Split-K with a fault,
//                                                   CPU backend, on the worker thread) and open it
//   tilescope-gui RUN --screenshot out.png [--frames N] [--size WxH] [--select first-divergence|event:N]
//                 [--panel overview|detail|both|launch|ab|synthetic]
//                                                   headless: wait for the run to open, render N
//                                                   frames, save the window, exit
//   tilescope-gui RUN --frame-stats stats.json --frames 300
//                                                   per-frame times (median, p99), exit
//   tilescope-gui --synthetic 8192x128 [--synthetic-seed N]
//                                                   synthetic heatmaps (seeded arrays)
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/heatmap_camera.h"
#include "app/model/colormap.h"

namespace ts {

// What the main area shows (--panel; the View menu).
enum class GuiPanel { both, overview, detail, launch, ab, synthetic, timeline };
std::string_view to_string(GuiPanel panel);

struct GuiOptions {
  std::optional<std::filesystem::path> run;           // opened at start
  std::optional<std::filesystem::path> against;       // run B, compared with it
  bool demo = false;                                  // capture the built-in demo and open it
  std::optional<std::string> select;                  // "first-divergence" or "event:N" (checked)
  std::optional<GuiPanel> panel;                      // default: both with a run, launch without
  std::optional<std::filesystem::path> screenshot;   // PNG of the window after the last frame
  std::optional<std::filesystem::path> frame_stats;  // JSON of per-frame CPU times
  std::optional<std::filesystem::path> layout_json;  // where each heatmap landed (for tests)
  std::optional<std::filesystem::path> input_script; // scripted mouse / keys (input_script.h)
  std::optional<std::filesystem::path> recent_store; // recent files list (default: XDG config)
  int frames = 0;                                    // stop after this many (0 = run until closed)
  int width = 1600, height = 900;                    // window size in screen coordinates
  bool synthetic = false;                            // --synthetic given: the synthetic heatmaps panel
  int64_t synthetic_rows = 96, synthetic_cols = 64;
  uint64_t synthetic_seed = 1;
  int max_tile = 0;                  // texture tile side limit; 0 = GL_MAX_TEXTURE_SIZE
  std::optional<CellIndex> pick;     // initially picked cell (synthetic and detail views)
  std::vector<std::string> inject_errors;  // thrown mid-frame, one per frame: the error path
  std::optional<ColormapId> values_colormap;  // trace and reference: colormap...
  std::string values_scale = "linear";        // ...and scale: linear, log, symmetric, signed-log
  bool vsync = true;
  bool curves_over_group = false;  // --curves group: the detail's curves across the GQA group
  bool animate = false;  // zoom the views a little every frame (timing of re-rendered frames)
  double job_timeout_s = 900;  // headless: give up waiting for opening / capturing after this

  bool headless_run() const { return screenshot || frames > 0; }
};

struct GuiOptionsResult {
  std::optional<GuiOptions> options;  // set when the viewer should run
  int exit_code = 0;                  // otherwise: 0 after --help, 2 after a usage error
  std::string output;                 // help text or the error message
};

GuiOptionsResult parse_gui_options(int argc, const char* const* argv);

}  // namespace ts
