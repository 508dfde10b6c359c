#include "app/gui/viewer_app.h"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>

#include <imgui_internal.h>  // ErrorCheckEndFrameRecover

#include "app/gui/gl_api.h"
#include "app/gui/demo_window.h"
#include "app/gui/error_log.h"
#include "app/gui/error_panel.h"
#include "app/gui/frame_stats.h"
#include "app/gui/gui_window.h"
#include "app/gui/heatmap_renderer.h"
#include "app/gui/screenshot.h"
#include "app/gui/scripted_input.h"
#include "app/gui/theme.h"
#include "app/model/png_file.h"

namespace ts {
namespace {

struct ViewerState {
  bool show_help = false;
  bool quit = false;
};

void draw_menu_bar(ViewerState& state, DemoWindow& demo) {
  if (!ImGui::BeginMainMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Export heatmaps as PNG...")) demo.open_export_dialog();
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) state.quit = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    if (ImGui::MenuItem("Fit", "F")) demo.navigation().request_fit();
    if (ImGui::MenuItem("Square cells", nullptr, &demo.navigation().square_cells)) demo.navigation().request_fit();
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    if (ImGui::MenuItem("Controls")) state.show_help = true;
    ImGui::EndMenu();
  }
  ImGui::EndMainMenuBar();
}

void draw_help(ViewerState& state) {
  if (state.show_help) ImGui::OpenPopup("Controls");
  state.show_help = false;
  if (ImGui::BeginPopupModal("Controls", nullptr, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings)) {
    const char* rows[][2] = {{"Mouse wheel", "zoom around the cursor"},
                             {"Drag (any button)", "pan"},
                             {"Click", "pick a cell (outlined in every view)"},
                             {"Arrow keys", "move the picked cell (Shift: by 8)"},
                             {"F, double-click", "fit the arrays to the view"},
                             {"Black / white point", "drag the fields; Autofit fits the finite values"}};
    if (ImGui::BeginTable("##keys", 2, ImGuiTableFlags_RowBg)) {
      for (const auto& r : rows) {
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(r[0]);
        ImGui::TableNextColumn();
        ImGui::TextDisabled("%s", r[1]);
      }
      ImGui::EndTable();
    }
    if (ImGui::Button("Close", ImVec2(120, 0))) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
  }
}

void draw_status_bar(const GuiWindow& window, const DemoWindow& demo, double last_frame_ms, float height) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x, vp->WorkPos.y + vp->WorkSize.y - height));
  ImGui::SetNextWindowSize(ImVec2(vp->WorkSize.x, height));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(10, 3));
  ImGui::PushStyleColor(ImGuiCol_WindowBg, ImGui::GetStyleColorVec4(ImGuiCol_MenuBarBg));
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                                 ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoInputs;
  if (ImGui::Begin("##status", nullptr, flags)) {
    const auto layouts = demo.layouts();
    const HeatmapViewLayout& l = layouts.front();
    ImGui::TextDisabled("%s   |   GL max texture %d, %zu tile%s of <= %d per view   |   %.1f ms/frame",
                        window.gl_renderer().c_str(), window.max_texture_size(), l.tiles, l.tiles == 1 ? "" : "s",
                        l.tile_side, last_frame_ms);
  }
  ImGui::End();
  ImGui::PopStyleColor();
  ImGui::PopStyleVar();
}

}  // namespace

int run_viewer(const GuiOptions& o) {
  std::unique_ptr<GuiWindow> window;
  std::unique_ptr<HeatmapRenderer> renderer;
  try {
    window = std::make_unique<GuiWindow>("tilescope", o.width, o.height, o.vsync && !o.headless_run());
    renderer = std::make_unique<HeatmapRenderer>();
  } catch (const NoDisplayError& e) {
    std::fprintf(stderr, "tilescope-gui: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilescope-gui: cannot start: %s\n", e.what());
    return 3;
  }
  // Headless runs ignore the pointer: whatever the X server's cursor is over must not show up
  // as a hovered cell in a screenshot.
  if (o.headless_run() && !o.input_script) ImGui::GetIO().ConfigFlags |= ImGuiConfigFlags_NoMouse;
  std::unique_ptr<ScriptedInput> scripted;
  if (o.input_script) {
    try {
      scripted = std::make_unique<ScriptedInput>(load_input_script(*o.input_script));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tilescope-gui: %s\n", e.what());
      return 2;
    }
  }

  ErrorLog errors;
  DemoWindow demo(o);
  ViewerState state;
  FrameStats stats;
  int exit_code = 0;
  double last_ms = 0;
  using clock = std::chrono::steady_clock;

  // CPU time of the whole process (all threads: with Mesa's llvmpipe the rasteriser's too),
  // which machine load inflates less than wall time.
  const auto process_cpu_ms = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
  };

  for (int frame = 0; !window->should_close() && !state.quit; ++frame) {
    if (!o.headless_run()) window->wait_if_idle();  // headless runs render every frame
    const auto t0 = clock::now();
    const double cpu0 = process_cpu_ms();
    window->begin_frame(scripted ? std::function<void()>([&] { scripted->apply(frame); }) : std::function<void()>());
    renderer->begin_frame();
    if (ImGui::GetIO().KeyCtrl && ImGui::IsKeyPressed('Q', false)) state.quit = true;

    const auto t_ui = clock::now();
    const float status_h = ImGui::GetTextLineHeight() + 8;
    const bool finished = guarded(errors, "viewer", [&] {
      draw_menu_bar(state, demo);
      const ImGuiViewport* vp = ImGui::GetMainViewport();
      demo.draw(*renderer, errors, vp->WorkPos, ImVec2(vp->WorkSize.x, vp->WorkSize.y - status_h));
      draw_status_bar(*window, demo, last_ms, status_h);
      draw_help(state);
    });
    if (!finished) ImGui::ErrorCheckEndFrameRecover(nullptr);  // close whatever the throw left open
    draw_error_panel(errors, status_h);
    const auto t_render = clock::now();
    window->end_frame(ImGui::GetStyleColorVec4(ImGuiCol_WindowBg));  // the demo window draws no background
    const auto t_rendered = clock::now();

    const bool last = o.frames > 0 && frame + 1 >= o.frames;
    if (last && o.screenshot) {
      try {
        write_png_file(*o.screenshot, read_back_buffer(window->framebuffer_width(), window->framebuffer_height()));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tilescope-gui: screenshot: %s\n", e.what());
        exit_code = 2;
      }
    }
    if (last && o.layout_json) {
      try {
        const ImVec2 s = ImGui::GetIO().DisplayFramebufferScale;
        write_layout_json(*o.layout_json, demo.layouts(), s.x, s.y);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tilescope-gui: layout: %s\n", e.what());
        exit_code = 2;
      }
    }
    const auto t_present = clock::now();
    window->swap();
    const auto t1 = clock::now();
    const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    last_ms = ms(t0, t1);
    stats.add(last_ms);
    stats.add_part("events", ms(t0, t_ui));            // input, ImGui frame start
    stats.add_part("ui", ms(t_ui, t_render));          // building the widgets
    stats.add_part("render", ms(t_render, t_rendered));  // GL commands (and the driver's work)
    stats.add_part("present", ms(t_present, t1));      // swap: the rasteriser finishing, the copy out
    stats.add_part("process_cpu", process_cpu_ms() - cpu0);
    if (last) break;
  }

  if (o.frame_stats) {
    try {
      stats.write_json(*o.frame_stats, {{"renderer", window->gl_renderer()},
                                        {"window", std::to_string(o.width) + "x" + std::to_string(o.height)},
                                        {"demo_size", std::to_string(o.demo_rows) + "x" + std::to_string(o.demo_cols)},
                                        {"views", "3"},
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
      std::fprintf(stderr, "tilescope-gui: frame stats: %s\n", e.what());
      exit_code = 2;
    }
  }
  return exit_code;
}

}  // namespace ts
