#include "app/gui/scripted_input.h"

#include <imgui.h>

namespace ts {
namespace {

// The GLFW backend maps ImGui's navigation keys to GLFW key codes (io.KeyMap); letters and
// brackets are GLFW's codes, which are their ASCII codes.
int key_index(const std::string& key) {
  if (key == "left") return ImGui::GetKeyIndex(ImGuiKey_LeftArrow);
  if (key == "right") return ImGui::GetKeyIndex(ImGuiKey_RightArrow);
  if (key == "up") return ImGui::GetKeyIndex(ImGuiKey_UpArrow);
  if (key == "down") return ImGui::GetKeyIndex(ImGuiKey_DownArrow);
  if (key == "pageup") return ImGui::GetKeyIndex(ImGuiKey_PageUp);
  if (key == "pagedown") return ImGui::GetKeyIndex(ImGuiKey_PageDown);
  if (key == "home") return ImGui::GetKeyIndex(ImGuiKey_Home);
  if (key == "end") return ImGui::GetKeyIndex(ImGuiKey_End);
  if (key == "space") return ImGui::GetKeyIndex(ImGuiKey_Space);
  if (key == "n" || key == "shift+n") return 'N';  // GLFW_KEY_N
  if (key == "d" || key == "shift+d") return 'D';  // GLFW_KEY_D
  if (key == "lbracket") return '[';               // GLFW_KEY_LEFT_BRACKET
  if (key == "rbracket") return ']';               // GLFW_KEY_RIGHT_BRACKET
  if (key == "ctrl+e") return 'E';                 // GLFW_KEY_E
  if (key == "ctrl+o") return 'O';                 // GLFW_KEY_O
  if (key == "ctrl+s") return 'S';                 // GLFW_KEY_S
  if (key == "ctrl+h") return 'H';                 // GLFW_KEY_H
  return 'F';  // GLFW_KEY_F
}

}  // namespace

void ScriptedInput::apply(int frame) {
  ImGuiIO& io = ImGui::GetIO();
  // A scripted run owns the keyboard: the X server's focus moving to another window on the same
  // display (tests run side by side under one Xvfb) would otherwise make ImGui release every key
  // in its next NewFrame, dropping the scripted key press of that frame.
  io.AppFocusLost = false;
  for (int k : keys_released_next_) io.KeysDown[k] = false;
  keys_released_next_.clear();
  io.KeyShift = false;
  io.KeyCtrl = false;
  float wheel = 0;
  for (const InputEvent& e : events_) {
    if (e.frame != frame) continue;
    switch (e.kind) {
      case InputEvent::Kind::move: x_ = e.x, y_ = e.y; break;
      case InputEvent::Kind::down: down_[e.button] = true; break;
      case InputEvent::Kind::up: down_[e.button] = false; break;
      case InputEvent::Kind::wheel: wheel += e.steps; break;
      case InputEvent::Kind::key: {
        const int k = key_index(e.key);
        if (k >= 0 && k < IM_ARRAYSIZE(io.KeysDown)) {
          io.KeysDown[k] = true;
          keys_released_next_.push_back(k);
          if (e.key.rfind("shift+", 0) == 0) io.KeyShift = true;
          if (e.key.rfind("ctrl+", 0) == 0) io.KeyCtrl = true;
        }
        break;
      }
    }
  }
  io.MousePos = ImVec2(x_, y_);
  for (int b = 0; b < 3; ++b) io.MouseDown[b] = down_[b];
  io.MouseWheel = wheel;
}

}  // namespace ts
