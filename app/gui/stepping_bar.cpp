#include "app/gui/stepping_bar.h"

#include <cstdio>
#include <string>

#include <imgui.h>

#include "app/gui/error_injection.h"
#include "app/gui/imgui_scopes.h"
#include "app/gui/theme.h"

namespace ts {
namespace {

bool button(const char* label, const char* tip, bool enabled = true) {
  bool clicked = false;
  {
    const ImGuiDisabledScope disabled(!enabled);
    clicked = ImGui::Button(label);
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", tip);
  return clicked;
}

}  // namespace

bool draw_stepping_bar(ViewerSession& s, Playback& playback, float width) {
  EventStepper& st = s.stepper();
  const std::optional<size_t> before = st.selected();
  const bool any = st.num_events() > 0;
  const ImGuiIdScope id("stepping");
  if (button("|<", "First event (Home)", any)) st.to_first();
  ImGui::SameLine(0, 4);
  if (button("<", "Previous event in the kernel's order ([ or PageUp)", any)) st.step(-1);
  ImGui::SameLine(0, 4);
  if (button(playback.playing ? "Pause" : "Play", "Play through the events (Space)", any)) playback.toggle();
  ImGui::SameLine(0, 4);
  if (button(">", "Next event in the kernel's order (] or PageDown)", any)) st.step(1);
  ImGui::SameLine(0, 4);
  if (button(">|", "Last event (End)", any)) st.to_last();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("00.0 ev/s").x + 40);
  float speed = static_cast<float>(playback.events_per_second);
  if (ImGui::DragFloat("##speed", &speed, 0.1f, 0.25f, 240.0f, "%.1f ev/s", ImGuiSliderFlags_Logarithmic))
    playback.events_per_second = speed;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Playback speed, events per second");
  ImGui::SameLine();
  error_injection().throw_if_aimed_at("stepping");  // mid-bar, its ID pushed

  int scope = st.scope == StepScope::run ? 0 : 1;
  if (ImGui::RadioButton("Whole run", &scope, 0)) st.scope = StepScope::run;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Step through every event of the run");
  ImGui::SameLine();
  if (ImGui::RadioButton("These rows", &scope, 1)) st.scope = StepScope::row_block;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Step through the events of the selected event's query rows only: their states, a merge "
                      "taking in one state after another, the final rows");
  ImGui::SameLine();
  if (button("Next failing (N)", "The next event over tolerance in the kernel's order", st.num_failing() > 0))
    st.next_failing();
  ImGui::SameLine(0, 4);
  if (button("First divergence (Shift+N)", "The first event over tolerance, where the bug starts",
             st.first_divergence_event().has_value()))
    st.to_first_divergence();
  // The position slider gets a row of its own: the whole width, so that one pixel is a few
  // events even in a run of thousands, and its "event i of n" is never under the grab.
  const size_t n = st.scope_size();
  int pos = static_cast<int>(st.scope_position());
  // "event N" is the event's index in the trace everywhere (--select event:N, the readout, the
  // timeline, --layout-json); the slider's own position is a step in the kernel's order.
  char overlay[96];
  if (st.selected())
    std::snprintf(overlay, sizeof overlay, "step %d of %zu: event %zu", n ? pos + 1 : 0, n, *st.selected());
  else
    std::snprintf(overlay, sizeof overlay, "step %d of %zu", n ? pos + 1 : 0, n);
  ImGui::SetNextItemWidth(std::max(120.0f, width - (ImGui::GetCursorPosX() - ImGui::GetWindowContentRegionMin().x)));
  if (n > 1 && ImGui::SliderInt("##position", &pos, 0, static_cast<int>(n) - 1, overlay, ImGuiSliderFlags_AlwaysClamp))
    st.select_scope_position(static_cast<size_t>(pos));
  else if (n <= 1) {
    const ImGuiDisabledScope disabled;
    int zero = 0;
    ImGui::SliderInt("##position", &zero, 0, 1, overlay);
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Events in the kernel's own order (a stage's pass first: the states a merge reads come before it)");
  return st.selected() != before;
}

bool handle_stepping_keys(ViewerSession& s, Playback& playback) {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || !s.has_run()) return false;
  EventStepper& st = s.stepper();
  const std::optional<size_t> before = st.selected();
  auto pressed = [](int key, bool repeat = true) { return ImGui::IsKeyPressed(key, repeat); };
  if (pressed('[') || pressed(ImGui::GetKeyIndex(ImGuiKey_PageUp))) st.step(-1);
  if (pressed(']') || pressed(ImGui::GetKeyIndex(ImGuiKey_PageDown))) st.step(1);
  if (pressed(ImGui::GetKeyIndex(ImGuiKey_Home), false)) st.to_first();
  if (pressed(ImGui::GetKeyIndex(ImGuiKey_End), false)) st.to_last();
  if (!io.KeyCtrl && pressed('N', false)) {
    if (io.KeyShift) st.to_first_divergence();
    else st.next_failing();
  }
  if (pressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) playback.toggle();
  return st.selected() != before;
}

bool advance_playback(ViewerSession& s, Playback& playback, double seconds) {
  if (!playback.playing || !s.has_run()) return false;
  const long steps = playback.advance(seconds);
  if (steps == 0) return false;
  const bool moved = s.stepper().step(steps);
  if (!moved || s.stepper().scope_position() + 1 >= s.stepper().scope_size()) playback.pause();
  return moved;
}

}  // namespace ts
