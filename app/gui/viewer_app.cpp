#include "app/gui/viewer_app.h"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

#include "app/cli_common/cli_errors.h"
#include "app/gui/error_injection.h"
#include "app/gui/error_log.h"
#include "app/gui/error_panel.h"
#include "app/gui/frame_stats.h"
#include "app/gui/gl_api.h"
#include "app/gui/gui_window.h"
#include "app/gui/heatmap_renderer.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/screenshot.h"
#include "app/gui/scripted_input.h"
#include "app/gui/theme.h"
#include "app/gui/viewer_window.h"
#include "app/model/png_file.h"
#include "instrumentation/trace/display_text.h"

namespace ts {
namespace {

void draw_status_bar(const GuiWindow& window, const ViewerWindow& viewer, double last_frame_ms, float height) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x, vp->WorkPos.y + vp->WorkSize.y - height));
  ImGui::SetNextWindowSize(ImVec2(vp->WorkSize.x, height));
  const ImGuiStyleVarScope padding(ImGuiStyleVar_WindowPadding, ImVec2(10, 3));
  const ImGuiStyleColorScope background(ImGuiCol_WindowBg, ImGui::GetStyleColorVec4(ImGuiCol_MenuBarBg));
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                                 ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoInputs;
  if (const ImGuiWindowScope bar("##status", nullptr, flags); bar) {
    ImGui::TextDisabled("%s", printable(viewer.status_text()).c_str());
    error_injection().throw_if_aimed_at("status");
    char right[256];
    std::snprintf(right, sizeof right, "%s   |   GL max texture %d   |   %.1f ms/frame   |   Help: keys",
                  window.gl_renderer().c_str(), window.max_texture_size(), last_frame_ms);
    ImGui::SameLine(std::max(ImGui::GetCursorPosX() + 20, ImGui::GetWindowContentRegionMax().x - ImGui::CalcTextSize(right).x));
    ImGui::TextDisabled("%s", right);
  }
}

// CPU time of the whole process (all threads: with Mesa's llvmpipe the rasteriser's too),
// which machine load inflates less than wall time.
double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

}  // namespace

int run_viewer(const GuiOptions& o) {
  std::unique_ptr<GuiWindow> window;
  std::unique_ptr<HeatmapRenderer> renderer;
  try {
    window = std::make_unique<GuiWindow>("tilescope", o.width, o.height, o.vsync && !o.headless_run());
    renderer = std::make_unique<HeatmapRenderer>();
  } catch (const NoDisplayError& e) {
    cli::print_error("tilescope-gui", e.what());
    return cli::kExitRunFailure;
  } catch (const std::exception& e) {
    cli::print_error("tilescope-gui", std::string("cannot start: ") + e.what());
    return cli::kExitRunFailure;
  }
  // Headless runs ignore the pointer: whatever the X server's cursor is over must not show up
  // as a hovered cell in a screenshot.
  if (o.headless_run() && !o.input_script) ImGui::GetIO().ConfigFlags |= ImGuiConfigFlags_NoMouse;
  std::unique_ptr<ScriptedInput> scripted;
  if (o.input_script) {
    try {
      scripted = std::make_unique<ScriptedInput>(load_input_script(*o.input_script));
    } catch (const std::exception& e) {
      return cli::report_error("tilescope-gui", e);
    }
  }

  error_injection().set(o.inject_errors, o.synthetic ? "synthetic" : "detail");
  ErrorLog errors;
  std::unique_ptr<ViewerWindow> viewer;
  try {
    viewer = std::make_unique<ViewerWindow>(o, errors);
  } catch (const std::exception& e) {
    return cli::report_error("tilescope-gui", e);
  }
  FrameStats stats;
  int exit_code = 0;
  double last_ms = 0, last_frame_s = 1.0 / 60;
  std::string title;
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();

  // `counted`: frames that count toward --frames; a headless run does not count the frames
  // spent waiting for the run to open (and the scripted input starts after them).
  for (int counted = 0; !window->should_close() && !viewer->quit_requested();) {
    const bool waiting = o.headless_run() && viewer->busy();
    if (!o.headless_run()) {
      if (viewer->animating()) window->request_redraw();  // progress bar, playback
      window->wait_if_idle();
    } else if (waiting) {
      if (std::chrono::duration<double>(clock::now() - started).count() > o.job_timeout_s) {
        std::fprintf(stderr, "tilescope-gui: gave up waiting for the run after %.0f s (--job-timeout)\n", o.job_timeout_s);
        return 4;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the worker needs the cores
    }
    const auto t0 = clock::now();
    const double cpu0 = process_cpu_ms();
    const int frame = counted;
    window->begin_frame(scripted && !waiting ? std::function<void()>([&] { scripted->apply(frame); })
                                             : std::function<void()>());
    renderer->begin_frame();
    const std::vector<std::string> dropped = window->take_dropped_paths();
    if (!dropped.empty()) viewer->drop(dropped);

    const auto t_ui = clock::now();
    const float status_h = ImGui::GetTextLineHeight() + 8;
    guarded_ui(errors, "viewer", [&] {
      const ImGuiViewport* vp = ImGui::GetMainViewport();
      viewer->draw(*renderer, vp->WorkPos, ImVec2(vp->WorkSize.x, vp->WorkSize.y - status_h), last_frame_s);
    });
    guarded_ui(errors, "status bar", [&] { draw_status_bar(*window, *viewer, last_ms, status_h); });
    draw_error_panel(errors, status_h);
    const auto t_render = clock::now();
    window->end_frame(ImGui::GetStyleColorVec4(ImGuiCol_WindowBg));  // the panels draw no background
    const auto t_rendered = clock::now();
    if (const std::string t = viewer->title(); t != title) window->set_title(title = t);

    const bool counts = !(o.headless_run() && viewer->busy()) && !waiting;
    const bool last = counts && o.frames > 0 && counted + 1 >= o.frames;
    if (last && o.screenshot) {
      try {
        write_png_file(*o.screenshot, read_back_buffer(window->framebuffer_width(), window->framebuffer_height()));
      } catch (const std::exception& e) {
        exit_code = cli::report_error("tilescope-gui: screenshot", e);
      }
    }
    if (last && o.layout_json) {
      try {
        const ImVec2 s = ImGui::GetIO().DisplayFramebufferScale;
        write_layout_json(*o.layout_json, viewer->layouts(), s.x, s.y, viewer->marks(), viewer->layout_extra());
      } catch (const std::exception& e) {
        exit_code = cli::report_error("tilescope-gui: layout", e);
      }
    }
    const auto t_present = clock::now();
    window->swap();
    const auto t1 = clock::now();
    const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    last_ms = ms(t0, t1);
    last_frame_s = std::min(0.25, std::chrono::duration<double>(t1 - t0).count());
    if (counts) {
      stats.add(last_ms);
      stats.add_part("events", ms(t0, t_ui));            // input, ImGui frame start
      stats.add_part("ui", ms(t_ui, t_render));          // building the widgets
      stats.add_part("render", ms(t_render, t_rendered));  // GL commands (and the driver's work)
      stats.add_part("present", ms(t_present, t1));      // swap: the rasteriser finishing, the copy out
      stats.add_part("process_cpu", process_cpu_ms() - cpu0);
      ++counted;
    }
    if (last) break;
  }
  // A headless run whose trace (or demo) could not be opened failed, as the CLI would have.
  if (o.headless_run() && exit_code == 0) exit_code = viewer->startup_exit_code();

  if (o.frame_stats) {
    try {
      const std::string what = o.run ? o.run->filename().string()
                               : o.synthetic ? "synthetic " + std::to_string(o.synthetic_rows) + "x" +
                                                   std::to_string(o.synthetic_cols)
                                             : std::string(o.demo ? "demo" : "none");
      stats.write_json(*o.frame_stats, {{"renderer", window->gl_renderer()},
                                        {"window", std::to_string(o.width) + "x" + std::to_string(o.height)},
                                        {"shown", what},
                                        {"panel", std::string(to_string(o.panel.value_or(GuiPanel::both)))},
                                        {"animate", o.animate ? "yes" : "no"},
                                        {"heatmap_renders", std::to_string(renderer->renders())}});
      const FrameSummary s = stats.summary();
      std::printf("frames %zu  median %.2f ms  p99 %.2f ms  mean %.2f ms  max %.2f ms  (heatmap renders %llu)\n",
                  s.frames, s.median_ms, s.p99_ms, s.mean_ms, s.max_ms,
                  static_cast<unsigned long long>(renderer->renders()));
      for (const char* part : {"events", "ui", "render", "present", "process_cpu"}) {
        const FrameSummary p = stats.part_summary(part);
        std::printf("  %-8s median %.2f ms  p99 %.2f ms\n", part, p.median_ms, p.p99_ms);
      }
    } catch (const std::exception& e) {
      exit_code = cli::report_error("tilescope-gui: frame stats", e);
    }
  }
  return exit_code;
}

}  // namespace ts
