#include "app/gui/viewer_window.h"

#include "app/model/viewer/cell_readout.h"
#include "app/model/viewer/export_naming.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <imgui.h>

#include "app/cli_common/cli_errors.h"
#include "app/gui/error_injection.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/run_header.h"
#include "app/gui/stepping_bar.h"
#include "app/gui/theme.h"
#include "app/model/analysis/report_text.h"
#include "app/model/export/export_run.h"
#include "instrumentation/trace/atomic_file.h"
#include "instrumentation/trace/display_text.h"
#include "instrumentation/trace/file_bytes.h"
#include "instrumentation/trace/file_error.h"

namespace ts {
namespace {

constexpr ImGuiWindowFlags kPanelFlags = ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse;

bool analysis_panel(GuiPanel p) { return p == GuiPanel::both || p == GuiPanel::overview || p == GuiPanel::detail; }

}  // namespace

ViewerWindow::ViewerWindow(const GuiOptions& o, ErrorLog& errors)
    : options_(o),
      errors_(errors),
      recent_(o.recent_store.value_or(RecentFiles::default_store())),
      controller_(recent_),
      session_(controller_.session()),
      detail_(o) {
  if (const std::string why = recent_.load(); !why.empty()) errors_.report("recent files", why);
  StartupRequest start{o.run, o.against, o.demo, std::nullopt};
  if (o.select) start.select = parse_select_request(*o.select);
  // Two runs (--against) are opened to be compared: the A/B tab, unless --panel says otherwise.
  panel_ = o.panel.value_or(o.synthetic                ? GuiPanel::synthetic
                            : (o.run && o.against)     ? GuiPanel::ab
                            : (o.run || o.demo)        ? GuiPanel::both
                                                       : GuiPanel::launch);
  if (panel_ == GuiPanel::synthetic) synthetic_ = std::make_unique<SyntheticWindow>(o);
  select_tab_ = panel_;
  controller_.start(start);
  poll_controller();  // a request refused at once (a bad --select is only known later)
}

std::string ViewerWindow::title() const {
  if (!session_.has_run()) return "tilescope";
  return "tilescope - " + session_.run().display_name() +
         (session_.has_b() ? " vs " + session_.b().display_name() : std::string());
}

std::string ViewerWindow::status_text() const {
  std::string s;
  if (session_.has_run()) {
    const auto& st = session_.stepper();
    s = std::to_string(session_.view().num_events()) + " events, " + std::to_string(st.num_failing()) + " failing";
    if (st.selected()) s += "   |   event " + std::to_string(*st.selected());
    if (playback_.playing) s += "   |   playing";
  } else {
    s = "no run open: File > Open, drop a trace on the window, or launch one";
  }
  if (!controller_.status().empty()) s += "   |   " + controller_.status();
  return s;
}

// --- the controller ---------------------------------------------------------------------------

void ViewerWindow::poll_controller() {
  const ControllerUpdate u = controller_.poll();
  for (const ControllerUpdate::Problem& p : u.problems) errors_.report(p.where, p.error);
  if (u.run_shown) {
    playback_.pause();
    focus_detail_ = true;
    // A run opened later shows the analysis; the one opened at start shows what --panel asked.
    if (!u.shown_at_startup) {
      if (!analysis_panel(panel_)) panel_ = GuiPanel::both;
      select_tab_ = panel_;
    }
  }
  if (u.b_shown) select_tab_ = panel_ = GuiPanel::ab;
  if (u.startup) {
    if (u.startup->state == JobState::failed) startup_exit_code_ = cli::exit_code_for(u.startup->error);
    else if (u.startup->state == JobState::cancelled) startup_exit_code_ = 130;
    else if (u.startup->bad_select) startup_exit_code_ = 2;
  }
}

std::filesystem::path ViewerWindow::default_export_folder() const {
  std::string name = "tilescope-export";
  if (session_.has_run()) {
    const LoadedRun& r = session_.run();
    name = export_folder_name(r.path ? r.path->filename().string() : r.display_name(), &session_.view(),
                              session_.selected());
  }
  return unused_path(std::filesystem::current_path() / name);
}

void ViewerWindow::export_current(const ExportRequest& req) {
  std::vector<ExportableHeatmap> items;
  if (panel_ == GuiPanel::ab) items = ab_.exportables();
  else if (analysis_panel(panel_)) {
    items = detail_.exportables();
    for (ExportableHeatmap& e : overview_.exportables()) items.push_back(std::move(e));
  }
  std::optional<LoadedRun> run;
  if ((req.report || req.frames) && session_.has_run()) run = session_.run();
  // Frames: the selected event's query rows, every step of them in the kernel's order.
  std::vector<size_t> frame_events;
  if (req.frames && session_.selected()) {
    EventStepper rows = session_.stepper();
    rows.scope = StepScope::row_block;
    frame_events = rows.scope_events();
  }
  const bool normalised = detail_.normalised;
  const HeatmapDisplay values = detail_.values_display(), diff = detail_.diff_display();
  controller_.export_files(req.folder, [items, req, run, frame_events, normalised, values,
                                        diff](JobProgress& p) mutable -> size_t {
    if (!frame_events.empty() && run) {
      p.set_phase("comparing " + std::to_string(frame_events.size()) + " frames");
      for (ExportableHeatmap& h : event_frames(*run->run, *run->reference, frame_events, normalised, values, diff))
        items.push_back(std::move(h));
    }
    p.set_phase("writing heatmaps");
    // One export folder: the heatmaps, and the analysis's evidence in report/ (its own export).
    const auto report = [&](const std::filesystem::path& staging) {
      std::vector<std::filesystem::path> files;
      if (!run || !req.report) return files;
      p.set_phase("writing the analysis's evidence");
      for (const ExportedFile& f : export_run(*run->run, *run->report, staging / "report").files) files.push_back(f.path);
      return files;
    };
    return write_heatmap_exports(req.folder, items, req.png, req.npy, report).size();
  });
}

void ViewerWindow::drop(const std::vector<std::string>& paths) {
  if (paths.empty()) return;
  if (paths.size() >= 2) controller_.open_pair(paths[0], paths[1]);
  else controller_.open(paths[0], OpenTarget::a);
}

// --- drawing ----------------------------------------------------------------------------------

void ViewerWindow::draw_menu_bar() {
  const ImGuiMainMenuBarScope bar;
  if (!bar) return;
  const bool has_run = session_.has_run();
  if (const ImGuiMenuScope file("File"); file) {
    if (ImGui::MenuItem("Open trace...", "Ctrl+O")) open_dialog_.show(OpenTarget::a, std::filesystem::current_path());
    if (const ImGuiMenuScope recent("Open recent", !recent_.entries().empty()); recent) {
      for (size_t i = 0; i < recent_.entries().size(); ++i) {
        const std::filesystem::path& p = recent_.entries()[i];
        const ImGuiIdScope id(static_cast<int>(i));  // names repeat across folders
        if (ImGui::MenuItem(printable(p.filename().string()).c_str(), printable(p.parent_path().string()).c_str()))
          controller_.open(p, OpenTarget::a);
      }
    }
    if (ImGui::MenuItem("Compare with...", nullptr, false, has_run))
      open_dialog_.show(OpenTarget::b, std::filesystem::current_path());
    ImGui::Separator();
    if (ImGui::MenuItem("Save trace as...", "Ctrl+S", false, has_run)) show_save_dialog();
    if (ImGui::MenuItem("Export...", "Ctrl+E", false, has_run || panel_ == GuiPanel::synthetic)) {
      if (panel_ == GuiPanel::synthetic && synthetic_) synthetic_->open_export_dialog();
      else export_dialog_.show(default_export_folder());
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) quit_ = true;
  }
  if (const ImGuiMenuScope run("Run"); run) {
    if (ImGui::MenuItem("Launch...")) select_tab_ = panel_ = GuiPanel::launch;
    if (ImGui::MenuItem("Capture the built-in demo (CPU)")) {
      controller_.launch_demo();
    }
    if (ImGui::MenuItem("Re-run on the other backend", nullptr, false, has_run && !busy() && controller_.can_rerun()))
      controller_.rerun_on_other_backend();
    if (ImGui::MenuItem("Cancel the running task", nullptr, false, busy())) controller_.cancel();
  }
  if (const ImGuiMenuScope view("View"); view) {
    if (ImGui::MenuItem("Overview and detail", nullptr, panel_ == GuiPanel::both)) select_tab_ = panel_ = GuiPanel::both;
    if (ImGui::MenuItem("Overview only", nullptr, panel_ == GuiPanel::overview)) select_tab_ = panel_ = GuiPanel::overview;
    if (ImGui::MenuItem("Detail only", nullptr, panel_ == GuiPanel::detail)) select_tab_ = panel_ = GuiPanel::detail;
    if (ImGui::MenuItem("A/B", nullptr, panel_ == GuiPanel::ab)) select_tab_ = panel_ = GuiPanel::ab;
    if (ImGui::MenuItem("Timeline", nullptr, panel_ == GuiPanel::timeline)) select_tab_ = panel_ = GuiPanel::timeline;
    if (ImGui::MenuItem("Launch", nullptr, panel_ == GuiPanel::launch)) select_tab_ = panel_ = GuiPanel::launch;
    ImGui::Separator();
    if (ImGui::MenuItem("Synthetic heatmaps", nullptr, panel_ == GuiPanel::synthetic)) {
      if (!synthetic_) synthetic_ = std::make_unique<SyntheticWindow>(options_);
      panel_ = GuiPanel::synthetic;
    }
  }
  if (const ImGuiMenuScope help("Help"); help) {
    if (ImGui::MenuItem("Keys and mouse", "Ctrl+H")) show_help_ = true;
  }
  // The bar is drawn every frame; an error aimed at it is thrown here, with the bar open.
  error_injection().throw_if_aimed_at("menu");
}

void ViewerWindow::show_save_dialog() {
  if (!session_.has_run()) return;
  save_dialog_.show(session_.run().path ? session_.run().path->parent_path() / "copy.trace.safetensors"
                                        : std::filesystem::current_path() / "capture.trace.safetensors");
}

void ViewerWindow::draw_job_bar() {
  if (!controller_.busy()) return;
  const JobProgress::Snapshot p = controller_.progress();
  const auto fraction = p.fraction();
  ImGui::AlignTextToFramePadding();
  ImGui::TextColored(ImColor(theme::kAccent), "%s", controller_.job_what().c_str());
  ImGui::SameLine();
  char overlay[200];
  if (fraction) std::snprintf(overlay, sizeof overlay, "%s  %d%%", p.phase.c_str(), static_cast<int>(*fraction * 100));
  else std::snprintf(overlay, sizeof overlay, "%s", p.phase.c_str());
  // Unknown amount of work: a bar that sweeps, so that it is visibly alive.
  const float sweep = std::fmod(static_cast<float>(ImGui::GetTime()) * 0.6f, 1.0f);
  ImGui::ProgressBar(fraction ? static_cast<float>(*fraction) : sweep, ImVec2(420, 0), overlay);
  ImGui::SameLine();
  if (controller_.cancel_requested()) ImGui::TextDisabled("cancelling...");
  else if (ImGui::Button("Cancel")) controller_.cancel();
  if (const std::vector<std::string> next = controller_.waiting(); !next.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("then: %s", printable(next.front()).c_str());
  }
}

void ViewerWindow::draw_welcome(ImVec2 size) {
  const float w = std::min(720.0f, size.x - 40);
  ImGui::SetCursorPos(ImVec2(ImGui::GetCursorPosX() + (size.x - w) / 2, ImGui::GetCursorPosY() + 40));
  const ImGuiGroupScope group;
  {
    const ImGuiFontScope font(gui_fonts().large);
    ImGui::TextUnformatted("tilescope");
  }
  {
    const ImGuiTextWrapScope wrap(ImGui::GetCursorPosX() + w);
    ImGui::TextDisabled("What an attention kernel computed, event by event, beside a float64 reference: which stage, "
                        "which split, which query rows and which keys went wrong.");
    error_injection().throw_if_aimed_at("welcome");
  }
  ImGui::Spacing();
  if (ImGui::Button("Open a trace...", ImVec2(220, 0))) open_dialog_.show(OpenTarget::a, std::filesystem::current_path());
  ImGui::SameLine();
  if (ImGui::Button("Capture the built-in demo", ImVec2(220, 0))) {
    controller_.launch_demo();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Split-K whose reduce double-counts the splits' sums, on the CPU backend");
  ImGui::SameLine();
  if (ImGui::Button("Launch...", ImVec2(220, 0))) select_tab_ = panel_ = GuiPanel::launch;
  ImGui::Spacing();
  ImGui::TextDisabled("or drop a *.trace.safetensors file on this window (two files: an A/B comparison).");
  ImGui::Spacing();
  // A rule as wide as the column (ImGui's separator would run on to the window's right edge).
  const ImVec2 rule = ImGui::GetCursorScreenPos();
  ImGui::GetWindowDrawList()->AddLine(rule, ImVec2(rule.x + w, rule.y), ImGui::GetColorU32(ImGuiCol_Separator));
  ImGui::Dummy(ImVec2(w, 4));
  ImGui::TextUnformatted("Recent");
  if (recent_.entries().empty()) ImGui::TextDisabled("(none yet)");
  // Each entry under an ID of its own, and its folder beside its name: two traces of one name in
  // different folders (run.trace.safetensors) are two entries, told apart and each openable.
  welcome_recent_.clear();
  for (size_t i = 0; i < recent_.entries().size(); ++i) {
    const std::filesystem::path& p = recent_.entries()[i];
    const ImGuiIdScope id(static_cast<int>(i));
    const std::string name = printable(p.filename().string()), folder = printable(p.parent_path().string());
    const ImVec2 at = ImGui::GetCursorScreenPos();
    if (ImGui::Selectable(name.c_str(), false, 0, ImVec2(ImGui::CalcTextSize(name.c_str()).x, 0)))
      controller_.open(p, OpenTarget::a);
    const bool hovered = ImGui::IsItemHovered();
    const ImVec2 end = ImGui::GetItemRectMax();
    ImGui::SameLine();
    ImGui::TextDisabled("%s", folder.c_str());
    if (hovered) ImGui::SetTooltip("%s", printable(p.string()).c_str());
    welcome_recent_.push_back({p.string(), name, folder, at.x, at.y, end.x, end.y});
  }
}

void ViewerWindow::draw_analysis(HeatmapRenderer& renderer, ImVec2 size) {
  const float gap = 10;
  const bool show_overview = panel_ != GuiPanel::detail, show_detail = panel_ != GuiPanel::overview;
  const float overview_w = !show_detail ? size.x : !show_overview ? 0.0f : std::floor(std::max(420.0f, size.x * 0.38f));
  if (show_overview) {
    const ImGuiChildScope child("##overview", ImVec2(overview_w, size.y), false, kPanelFlags);
    guarded_ui(errors_, "overview", [&] { overview_.draw(session_, renderer, errors_, ImVec2(overview_w, size.y)); });
  }
  if (show_overview && show_detail) ImGui::SameLine(0, gap);
  if (show_detail) {
    const float w = size.x - (show_overview ? overview_w + gap : 0.0f);
    const ImGuiChildScope child("##detail", ImVec2(w, size.y), false, kPanelFlags);
    // Keyboard focus starts on the detail, so the arrow keys move its picked cell at once
    // (else they do nothing until the user has clicked into a panel).
    if (focus_detail_) {
      ImGui::SetWindowFocus();
      focus_detail_ = false;
    }
    guarded_ui(errors_, "detail", [&] { detail_.draw(session_, renderer, errors_, playback_, ImVec2(w, size.y)); });
  }
}

void ViewerWindow::draw_help() {
  if (show_help_) ImGui::OpenPopup("Keys and mouse");
  show_help_ = false;
  const ImGuiPopupModalScope popup("Keys and mouse", nullptr,
                                   ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings);
  if (!popup) return;
  const char* rows[][2] = {{"[  or  PageUp", "previous event in the kernel's order"},
                           {"]  or  PageDown", "next event"},
                           {"Home / End", "first / last event (of the run, or of the selected rows)"},
                           {"N", "next failing event"},
                           {"Shift+N", "the first divergence"},
                           {"D / Shift+D", "A/B: the next / previous event where A and B differ"},
                           {"Space", "play / pause"},
                           {"Mouse wheel", "zoom around the cursor"},
                           {"Drag (any button)", "pan"},
                           {"Click", "pick a cell (outlined in every linked view); on the overview: select its event"},
                           {"Arrow keys", "move the picked cell (Shift: by 8)"},
                           {"F, double-click", "fit the arrays to the view"},
                           {"W / Shift+W", "pick the event's worst cell / select the run's worst cell"},
                           {"Ctrl+C", "copy the picked cell's numbers"},
                           {"Ctrl+O / Ctrl+E / Ctrl+S / Ctrl+Q", "open / export / save trace as / quit"},
                           {"Ctrl+H", "this list"},
                           {"Drop files", "one: open it; two: compare them (A/B)"}};
  if (const ImGuiTableScope table("##keys", 2, ImGuiTableFlags_RowBg); table) {
    for (const auto& r : rows) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(r[0]);
      ImGui::TableNextColumn();
      ImGui::TextDisabled("%s", r[1]);
      error_injection().throw_if_aimed_at("help");
    }
  }
  if (ImGui::Button("Close", ImVec2(120, 0))) ImGui::CloseCurrentPopup();
}

void ViewerWindow::handle_keys() {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  if (io.KeyCtrl && ImGui::IsKeyPressed('Q', false)) quit_ = true;
  if (io.KeyCtrl && ImGui::IsKeyPressed('O', false)) open_dialog_.show(OpenTarget::a, std::filesystem::current_path());
  if (io.KeyCtrl && ImGui::IsKeyPressed('E', false) && session_.has_run())
    export_dialog_.show(default_export_folder());
  if (io.KeyCtrl && ImGui::IsKeyPressed('S', false)) show_save_dialog();
  if (io.KeyCtrl && ImGui::IsKeyPressed('H', false)) show_help_ = true;
  if (ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId)) return;
  if (analysis_panel(panel_) || panel_ == GuiPanel::ab || panel_ == GuiPanel::timeline)
    handle_stepping_keys(session_, playback_);
}

void ViewerWindow::draw(HeatmapRenderer& renderer, ImVec2 pos, ImVec2 size, double frame_seconds) {
  poll_controller();
  // The panels draw no background of their own: the frame is cleared to the window colour, and
  // a full-window fill per panel is what a CPU rasteriser (llvmpipe) spends most of a frame on.
  const ImGuiStyleColorScope no_child_background(ImGuiCol_ChildBg, IM_COL32(0, 0, 0, 0));
  advance_playback(session_, playback_, frame_seconds);
  guarded_ui(errors_, "menu", [&] { draw_menu_bar(); });

  if (panel_ == GuiPanel::synthetic && synthetic_) {
    synthetic_->draw(renderer, errors_, pos, size);
    handle_keys();
    return;
  }
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus |
                                 ImGuiWindowFlags_NoBackground;
  if (const ImGuiWindowScope main("tilescope##main", nullptr, flags); main) {
    guarded_ui(errors_, "viewer", [&] {
      draw_job_bar();
      guarded_ui(errors_, "header", [&] { draw_run_header(session_, ImGui::GetContentRegionAvail().x); });
      if (const ImGuiTabBarScope tabs("##tabs"); tabs) {
        // select_tab_: a one-frame request to show a panel's tab. Without one, the tab the
        // user clicked decides the panel.
        auto tab_flags = [&](GuiPanel p) -> ImGuiTabItemFlags {
          const bool wanted = select_tab_ && (*select_tab_ == p || (analysis_panel(*select_tab_) && analysis_panel(p)));
          return wanted ? ImGuiTabItemFlags_SetSelected : 0;
        };
        if (const ImGuiTabItemScope tab("Analysis", nullptr, tab_flags(GuiPanel::both)); tab) {
          if (!analysis_panel(panel_) && !select_tab_) panel_ = GuiPanel::both;
          const ImVec2 avail = ImGui::GetContentRegionAvail();
          error_injection().throw_if_aimed_at("viewer");  // inside the main window, its tab bar and a tab
          if (session_.has_run()) draw_analysis(renderer, avail);
          else guarded_ui(errors_, "welcome", [&] { draw_welcome(avail); });
        }
        if (const ImGuiTabItemScope tab("A/B", nullptr, tab_flags(GuiPanel::ab)); tab) {
          if (!select_tab_) panel_ = GuiPanel::ab;
          const ImGuiChildScope child("##ab", ImGui::GetContentRegionAvail(), false, kPanelFlags);
          const ABPanelActions actions{[this] { open_dialog_.show(OpenTarget::b, std::filesystem::current_path()); },
                                       [this] { controller_.rerun_on_other_backend(); }, [this] { controller_.swap_ab(); }, &playback_};
          guarded_ui(errors_, "A/B", [&] { ab_.draw(session_, renderer, errors_, actions, ImGui::GetContentRegionAvail()); });
        }
        if (const ImGuiTabItemScope tab("Timeline", nullptr, tab_flags(GuiPanel::timeline)); tab) {
          if (!select_tab_) panel_ = GuiPanel::timeline;
          const ImGuiChildScope child("##timeline", ImGui::GetContentRegionAvail(), false, kPanelFlags);
          if (session_.has_run())
            guarded_ui(errors_, "timeline", [&] { timeline_.draw(session_, ImGui::GetContentRegionAvail()); });
          else ImGui::TextDisabled("Open a trace to see where and when its events ran.");
        }
        if (const ImGuiTabItemScope tab("Launch", nullptr, tab_flags(GuiPanel::launch)); tab) {
          if (!select_tab_) panel_ = GuiPanel::launch;
          guarded_ui(errors_, "launch", [&] {
            bool cancel = false;
            launch_.gpu = controller_.gpu_state();
            if (const auto request = launch_.draw(controller_.busy(), controller_.progress(), cancel,
                                                  ImGui::GetContentRegionAvail()))
              controller_.launch(*request, false);
            if (cancel) controller_.cancel();
          });
        }
      }
      select_tab_.reset();
    });
  }

  guarded_ui(errors_, "open", [&] {
    if (const auto choice = open_dialog_.draw(recent_)) controller_.open(choice->path, choice->target);
  });
  guarded_ui(errors_, "export", [&] {
    if (const auto req = export_dialog_.draw(session_.has_run())) export_current(*req);
  });
  guarded_ui(errors_, "save trace as", [&] {
    if (const auto path = save_dialog_.draw()) controller_.save_trace_as(*path);
  });
  guarded_ui(errors_, "help", [&] { draw_help(); });
  handle_keys();
}

// --- layout report ----------------------------------------------------------------------------

std::vector<HeatmapViewLayout> ViewerWindow::layouts() const {
  if (panel_ == GuiPanel::synthetic && synthetic_) return synthetic_->layouts();
  std::vector<HeatmapViewLayout> out;
  if (panel_ == GuiPanel::ab) return ab_.layouts();
  if (!analysis_panel(panel_) || !session_.has_run()) return out;
  if (panel_ != GuiPanel::detail) out = overview_.layouts();
  if (panel_ != GuiPanel::overview)
    for (const HeatmapViewLayout& l : detail_.layouts()) out.push_back(l);
  return out;
}

std::vector<LayoutMark> ViewerWindow::marks() const {
  if (!analysis_panel(panel_) || panel_ == GuiPanel::detail) return {};
  return overview_.marks();
}

nlohmann::json ViewerWindow::layout_extra() const {
  nlohmann::json j;
  j["panel"] = std::string(to_string(panel_));
  j["busy"] = controller_.busy();
  j["run"] = session_.has_run() ? nlohmann::json(session_.run().display_name()) : nlohmann::json(nullptr);
  j["run_b"] = session_.has_b() ? nlohmann::json(session_.b().display_name()) : nlohmann::json(nullptr);
  // The A/B verdict as the header and the A/B panel write it.
  j["ab_verdict"] = session_.has_b() ? nlohmann::json(ab_verdict_text(session_.ab_report())) : nlohmann::json(nullptr);
  const auto sel = session_.selected();
  j["selected_event"] = sel ? nlohmann::json(*sel) : nlohmann::json(nullptr);
  const auto div = session_.has_run() ? session_.stepper().first_divergence_event() : std::nullopt;
  j["first_divergence_event"] = div ? nlohmann::json(*div) : nlohmann::json(nullptr);
  // What the overview lists, by the trace's own stage names.
  j["stages"] = overview_.listed_stages();
  j["grid"] = overview_.grid_name();
  if (panel_ == GuiPanel::timeline) j["timeline"] = timeline_.layout();
  if (!session_.has_run() && analysis_panel(panel_)) {
    j["recent"] = nlohmann::json::array();
    for (const WelcomeRecentRow& r : welcome_recent_)
      j["recent"].push_back({{"path", r.path}, {"name", r.name}, {"folder", r.folder},
                             {"rect", {r.min_x, r.min_y, r.max_x, r.max_y}}});
  }
  if (const auto& r = detail_.readout()) j["readout"] = to_text(*r);
  if (panel_ == GuiPanel::both || panel_ == GuiPanel::detail) j["curves"] = detail_.curves_layout();
  j["errors"] = nlohmann::json::array();
  for (const ErrorEntry& e : errors_.entries()) j["errors"].push_back(e.where + ": " + e.message);
  return j;
}

}  // namespace ts
