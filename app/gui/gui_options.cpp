#include "app/gui/gui_options.h"

#include <charconv>

#include <CLI/CLI.hpp>

#include "app/cli_common/integer_options.h"
#include "app/gui/synthetic_heatmaps.h"
#include "app/gui/error_injection.h"
#include "app/model/viewer/viewer_session.h"
#include "instrumentation/trace/display_text.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/write_target.h"

namespace ts {
namespace {

// "AxB" with positive integers.
bool parse_pair(const std::string& text, char sep, int64_t& a, int64_t& b) {
  const size_t at = text.find(sep);
  if (at == std::string::npos) return false;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto r1 = std::from_chars(begin, begin + at, a);
  auto r2 = std::from_chars(begin + at + 1, end, b);
  return r1.ec == std::errc() && r1.ptr == begin + at && r2.ec == std::errc() && r2.ptr == end;
}

constexpr std::pair<GuiPanel, std::string_view> kPanels[] = {
    {GuiPanel::both, "both"}, {GuiPanel::overview, "overview"}, {GuiPanel::detail, "detail"},
    {GuiPanel::launch, "launch"}, {GuiPanel::ab, "ab"}, {GuiPanel::synthetic, "synthetic"},
    {GuiPanel::timeline, "timeline"}};

}  // namespace

std::string_view to_string(GuiPanel panel) {
  for (const auto& [p, name] : kPanels)
    if (p == panel) return name;
  return "both";
}

GuiOptionsResult parse_gui_options(int argc, const char* const* argv) {
  GuiOptions o;
  std::string run, against, select, panel, screenshot, frame_stats, layout_json, input_script, recent, size,
      synthetic, pick;
  CLI::App app{"tilescope-gui: the tilescope viewer (tiled attention kernels, tile by tile, beside a float64 "
               "reference)."};
  app.footer("Keys: [ ] or PageUp/PageDown step through events in the kernels' order, Home/End, N next failing "
             "event, Shift+N first divergence, D / Shift+D next / previous difference of A and B (A/B), Space "
             "play/pause, arrows move the picked cell, F fits.");
  app.add_option("run", run, "A trace file to open (*.trace.safetensors)");
  app.add_option("--against", against, "A second trace to compare the first with (A/B)");
  app.add_flag("--demo", o.demo, "Capture the built-in demo (Split-K, fault double_count_l, CPU backend) and open it");
  app.add_option("--select", select, "Event to show first: first-divergence or event:N");
  app.add_option("--panel", panel, "What to show: both (overview and detail), overview, detail, launch, ab, synthetic, timeline")
      ->check(CLI::IsMember({"both", "overview", "detail", "launch", "ab", "synthetic", "timeline"}));
  app.add_option("--screenshot", screenshot,
                 "Wait for the run to open, render --frames frames (default 3), save the window as PNG, exit");
  app.add_option("--frames", o.frames, "Exit after this many frames (default: run until closed)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--size", size, "Window size WxH (default 1600x900)");
  app.add_option("--frame-stats", frame_stats, "Write per-frame CPU times (median, p99) as JSON on exit");
  app.add_option("--layout-json", layout_json, "Write where each heatmap and mark was drawn as JSON (tests)");
  app.add_option("--input-script", input_script, "Scripted mouse and key events, one per line (tests)");
  app.add_option("--recent-store", recent, "The recent-files list (default $XDG_CONFIG_HOME/tilescope/recent.json)");
  app.add_option("--synthetic", synthetic, "Show synthetic heatmaps: trace | reference | diff arrays of RxC (e.g. 96x64)");
  app.add_option("--synthetic-seed", o.synthetic_seed, "Seed of the synthetic heatmaps' values (default 1)");
  app.add_option("--max-tile", o.max_tile, "Largest texture tile side (default: the GL limit); forces tiling")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--pick", pick,
                 "Initially picked cell ROW,COL of the first event shown (or the synthetic heatmaps); one outside "
                 "it is an error");
  std::string panels;
  for (std::string_view p : kInjectionPanels) panels += (panels.empty() ? "" : ", ") + std::string(p);
  app.add_option("--inject-error", o.inject_errors,
                 "[PANEL:]MESSAGE: throw MESSAGE while PANEL draws (" + panels +
                     "; default: the main view), once, to test the error panel and recovery");
  std::string values_colormap;
  app.add_option("--values-colormap", values_colormap, "Colormap of the trace and reference (default ember)");
  app.add_option("--values-scale", o.values_scale, "Scale of the trace and reference: linear, log, symmetric, signed-log")
      ->check(CLI::IsMember({"linear", "log", "symmetric", "signed-log"}));
  std::string curves;
  app.add_option("--curves", curves,
                 "Few query rows (decode): the detail's curves run over the selected head's events along the keys "
                 "(keys, the default) or across the query heads sharing its kv head (group)")
      ->check(CLI::IsMember({"keys", "group"}));
  app.add_flag("--animate", o.animate, "Zoom the heatmaps a little every frame, so that each frame re-renders them");
  bool no_vsync = false;
  app.add_flag("--no-vsync", no_vsync, "Do not wait for the display between frames (timing runs)");
  app.add_option("--job-timeout", o.job_timeout_s, "Headless: seconds to wait for opening or capturing (default 900)")
      ->check(CLI::Range(1.0, 86400.0));

  cli::check_integer_options(app);

  GuiOptionsResult result;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    result.output = app.help();
    return result;
  } catch (const CLI::ParseError& e) {
    result.exit_code = 2;
    result.output = std::string("tilescope-gui: ") + e.what() + "\nRun with --help for the options.";
    return result;
  }
  auto fail = [&](const std::string& what) {
    result.exit_code = 2;
    result.output = "tilescope-gui: " + what;
    return result;
  };
  if (!size.empty()) {
    int64_t w = 0, h = 0;
    if (!parse_pair(size, 'x', w, h) || w < 64 || h < 64 || w > 16384 || h > 16384)
      return fail("--size wants WxH between 64x64 and 16384x16384 (got '" + size + "')");
    o.width = static_cast<int>(w);
    o.height = static_cast<int>(h);
  }
  if (!synthetic.empty()) {
    if (!parse_pair(synthetic, 'x', o.synthetic_rows, o.synthetic_cols) || o.synthetic_rows < 1 ||
        o.synthetic_cols < 1 || o.synthetic_rows > kMaxSyntheticHeatmapCells / o.synthetic_cols)
      return fail("--synthetic wants RxC with 1 <= R*C <= " + std::to_string(kMaxSyntheticHeatmapCells) +
                  " cells (larger synthetic heatmaps need gigabytes; got '" + synthetic + "')");
    o.synthetic = true;
  }
  if (!pick.empty()) {
    CellIndex cell;
    if (!parse_pair(pick, ',', cell.row, cell.col) || cell.row < 0 || cell.col < 0)
      return fail("--pick wants ROW,COL (got '" + pick + "')");
    // The synthetic heatmaps' grid is known now; a run's event is checked once it is shown.
    if ((o.synthetic || panel == "synthetic") && (cell.row >= o.synthetic_rows || cell.col >= o.synthetic_cols))
      return fail("--pick " + pick + " is outside the synthetic heatmaps' " + std::to_string(o.synthetic_rows) + " x " +
                  std::to_string(o.synthetic_cols) + " cells: ROW 0-" + std::to_string(o.synthetic_rows - 1) +
                  ", COL 0-" + std::to_string(o.synthetic_cols - 1));
    o.pick = cell;
  }
  if (!values_colormap.empty()) {
    try {
      o.values_colormap = colormap_from_name(values_colormap);
    } catch (const ColorScaleError& e) {
      return fail(std::string("--values-colormap: ") + e.what());
    }
  }
  if (!select.empty()) {
    try {
      (void)parse_select_request(select);
    } catch (const std::invalid_argument& e) {
      return fail(e.what());
    }
    o.select = select;
  }
  if (!panel.empty())
    for (const auto& [p, name] : kPanels)
      if (name == panel) o.panel = p;
  if (!against.empty() && run.empty() && !o.demo) return fail("--against needs a run to compare with: give RUN first");
  if (!run.empty() && o.demo) return fail("give a RUN or --demo, not both");
  if (o.synthetic && (!run.empty() || o.demo)) return fail("--synthetic shows synthetic heatmaps, not a run: drop RUN / --demo");
  if (!run.empty()) o.run = run;
  if (!against.empty()) o.against = against;
  if (!screenshot.empty()) o.screenshot = screenshot;
  if (!frame_stats.empty()) o.frame_stats = frame_stats;
  if (!layout_json.empty()) o.layout_json = layout_json;
  if (!input_script.empty()) o.input_script = input_script;
  if (!recent.empty()) o.recent_store = recent;
  if (o.screenshot && o.frames == 0) o.frames = 3;
  o.vsync = !no_vsync;
  o.curves_over_group = curves == "group";
  // The files a run writes, checked before it starts (write_target.h): a regular file or
  // nothing, in a folder that exists, and never the trace it shows.
  std::vector<std::filesystem::path> inputs;
  for (const auto& p : {o.run, o.against, o.input_script})
    if (p) inputs.push_back(*p);
  struct OutputOption {
    const char* option;
    const std::optional<std::filesystem::path>& path;
    const char* example_name;  // suggested when a folder is named
  };
  for (const auto& [option, path, example_name] :
       {OutputOption{"--screenshot", o.screenshot, "screenshot.png"},
        OutputOption{"--frame-stats", o.frame_stats, "frame-stats.json"},
        OutputOption{"--layout-json", o.layout_json, "layout.json"}}) {
    if (!path) continue;
    try {
      check_output_file(*path, example_name);
      check_not_an_input(*path, inputs, "a file this run reads");
    } catch (const FileWriteError& e) {
      return fail(std::string(option) + ": " + printable(e.what()));
    }
  }
  result.options = o;
  return result;
}

}  // namespace ts
