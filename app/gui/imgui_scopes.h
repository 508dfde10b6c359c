// RAII for Dear ImGui's ID stack: popped also when an exception unwinds through the scope.
// ImGui's own recovery (ErrorCheckEndWindowRecover) closes open tables before it pops IDs,
// and EndTable() asserts on a pushed ID; so code that may throw inside a table pushes IDs
// through this, and the recovery finds the ID stack already clean.
#pragma once

#include <imgui.h>

namespace ts {

class ImGuiIdScope {
 public:
  explicit ImGuiIdScope(int id) { ImGui::PushID(id); }
  explicit ImGuiIdScope(const char* id) { ImGui::PushID(id); }
  ~ImGuiIdScope() { ImGui::PopID(); }
  ImGuiIdScope(const ImGuiIdScope&) = delete;
  ImGuiIdScope& operator=(const ImGuiIdScope&) = delete;
};

}  // namespace ts
