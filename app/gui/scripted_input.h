// Feeds an input script (input_script.h) to Dear ImGui frame by frame, overriding what the
// GLFW backend read from the real devices. Call apply() between the backend's NewFrame and
// ImGui::NewFrame.
#pragma once

#include <vector>

#include "app/gui/input_script.h"

namespace ts {

class ScriptedInput {
 public:
  explicit ScriptedInput(std::vector<InputEvent> events) : events_(std::move(events)) {}
  void apply(int frame);

 private:
  std::vector<InputEvent> events_;
  float x_ = -1e30f, y_ = -1e30f;  // off-window until the first move
  bool down_[3] = {false, false, false};
  std::vector<int> keys_released_next_;
};

}  // namespace ts
