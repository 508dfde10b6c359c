// RAII for Dear ImGui's stacks: every Begin/End and Push/Pop pair the panels use, ended or
// popped also when an exception unwinds through the scope, in exactly the reverse order of
// opening. A panel whose pairs are all scoped leaves ImGui's stacks as it found them whatever it
// throws, so its error path is the ordinary unwinding.
//
// The safety net for anything opened without a scope is guarded_ui(): it records where ImGui's
// stacks were (ImGuiRecoveryPoint), runs the body, and on an exception closes what the body left
// open, back to that point and no further. (ImGui's own ErrorCheckEndWindowRecover is not used:
// it pops the current window's ID stack to its base and ends every tab bar, including the ones
// opened outside the failed panel, so the caller's own scopes then pop or end what is no longer
// there and ImGui's assertions abort the viewer.)
//
// Scopes that may not open (BeginTable, BeginTabItem, a popup, a combo, a menu...) convert to
// bool; they end only what they opened. Windows and children always end (ImGui requires End()
// whatever Begin() returned).
#pragma once

#include <imgui.h>

#include <string_view>

#include "app/gui/error_log.h"

struct ImGuiTable;
struct ImGuiTabBar;
struct ImGuiWindow;

namespace ts {

class ImGuiIdScope {
 public:
  explicit ImGuiIdScope(int id) { ImGui::PushID(id); }
  explicit ImGuiIdScope(const char* id) { ImGui::PushID(id); }
  ~ImGuiIdScope() { ImGui::PopID(); }
  ImGuiIdScope(const ImGuiIdScope&) = delete;
  ImGuiIdScope& operator=(const ImGuiIdScope&) = delete;
};

class ImGuiStyleColorScope {
 public:
  ImGuiStyleColorScope(ImGuiCol idx, ImU32 color) { ImGui::PushStyleColor(idx, color); }
  ImGuiStyleColorScope(ImGuiCol idx, const ImVec4& color) { ImGui::PushStyleColor(idx, color); }
  ~ImGuiStyleColorScope() { ImGui::PopStyleColor(); }
  ImGuiStyleColorScope(const ImGuiStyleColorScope&) = delete;
  ImGuiStyleColorScope& operator=(const ImGuiStyleColorScope&) = delete;
};

class ImGuiStyleVarScope {
 public:
  ImGuiStyleVarScope(ImGuiStyleVar idx, float value) { ImGui::PushStyleVar(idx, value); }
  ImGuiStyleVarScope(ImGuiStyleVar idx, const ImVec2& value) { ImGui::PushStyleVar(idx, value); }
  ~ImGuiStyleVarScope() { ImGui::PopStyleVar(); }
  ImGuiStyleVarScope(const ImGuiStyleVarScope&) = delete;
  ImGuiStyleVarScope& operator=(const ImGuiStyleVarScope&) = delete;
};

class ImGuiFontScope {
 public:
  explicit ImGuiFontScope(ImFont* font) { ImGui::PushFont(font); }
  ~ImGuiFontScope() { ImGui::PopFont(); }
  ImGuiFontScope(const ImGuiFontScope&) = delete;
  ImGuiFontScope& operator=(const ImGuiFontScope&) = delete;
};

class ImGuiTextWrapScope {
 public:
  explicit ImGuiTextWrapScope(float wrap_local_pos_x = 0.0f) { ImGui::PushTextWrapPos(wrap_local_pos_x); }
  ~ImGuiTextWrapScope() { ImGui::PopTextWrapPos(); }
  ImGuiTextWrapScope(const ImGuiTextWrapScope&) = delete;
  ImGuiTextWrapScope& operator=(const ImGuiTextWrapScope&) = delete;
};

class ImGuiIndentScope {
 public:
  explicit ImGuiIndentScope(float width) : width_(width) { ImGui::Indent(width_); }
  ~ImGuiIndentScope() { ImGui::Unindent(width_); }
  ImGuiIndentScope(const ImGuiIndentScope&) = delete;
  ImGuiIndentScope& operator=(const ImGuiIndentScope&) = delete;

 private:
  float width_;
};

// BeginDisabled(false) is valid and ends like any other, so one scope serves both cases.
class ImGuiDisabledScope {
 public:
  explicit ImGuiDisabledScope(bool disabled = true) { ImGui::BeginDisabled(disabled); }
  ~ImGuiDisabledScope() { ImGui::EndDisabled(); }
  ImGuiDisabledScope(const ImGuiDisabledScope&) = delete;
  ImGuiDisabledScope& operator=(const ImGuiDisabledScope&) = delete;
};

class ImGuiGroupScope {
 public:
  ImGuiGroupScope() { ImGui::BeginGroup(); }
  ~ImGuiGroupScope() { ImGui::EndGroup(); }
  ImGuiGroupScope(const ImGuiGroupScope&) = delete;
  ImGuiGroupScope& operator=(const ImGuiGroupScope&) = delete;
};

class ImGuiWindowScope {
 public:
  ImGuiWindowScope(const char* name, bool* p_open = nullptr, ImGuiWindowFlags flags = 0)
      : visible_(ImGui::Begin(name, p_open, flags)) {}
  ~ImGuiWindowScope() { ImGui::End(); }
  explicit operator bool() const { return visible_; }
  ImGuiWindowScope(const ImGuiWindowScope&) = delete;
  ImGuiWindowScope& operator=(const ImGuiWindowScope&) = delete;

 private:
  bool visible_;
};

class ImGuiChildScope {
 public:
  ImGuiChildScope(const char* id, const ImVec2& size = ImVec2(0, 0), bool border = false, ImGuiWindowFlags flags = 0)
      : visible_(ImGui::BeginChild(id, size, border, flags)) {}
  ~ImGuiChildScope() { ImGui::EndChild(); }
  explicit operator bool() const { return visible_; }
  ImGuiChildScope(const ImGuiChildScope&) = delete;
  ImGuiChildScope& operator=(const ImGuiChildScope&) = delete;

 private:
  bool visible_;
};

class ImGuiTableScope {
 public:
  ImGuiTableScope(const char* id, int columns, ImGuiTableFlags flags = 0, const ImVec2& outer_size = ImVec2(0, 0))
      : open_(ImGui::BeginTable(id, columns, flags, outer_size)) {}
  ~ImGuiTableScope() {
    if (open_) ImGui::EndTable();
  }
  explicit operator bool() const { return open_; }
  ImGuiTableScope(const ImGuiTableScope&) = delete;
  ImGuiTableScope& operator=(const ImGuiTableScope&) = delete;

 private:
  bool open_;
};

class ImGuiTabBarScope {
 public:
  explicit ImGuiTabBarScope(const char* id, ImGuiTabBarFlags flags = 0) : open_(ImGui::BeginTabBar(id, flags)) {}
  ~ImGuiTabBarScope() {
    if (open_) ImGui::EndTabBar();
  }
  explicit operator bool() const { return open_; }
  ImGuiTabBarScope(const ImGuiTabBarScope&) = delete;
  ImGuiTabBarScope& operator=(const ImGuiTabBarScope&) = delete;

 private:
  bool open_;
};

class ImGuiTabItemScope {
 public:
  ImGuiTabItemScope(const char* label, bool* p_open = nullptr, ImGuiTabItemFlags flags = 0)
      : open_(ImGui::BeginTabItem(label, p_open, flags)) {}
  ~ImGuiTabItemScope() {
    if (open_) ImGui::EndTabItem();
  }
  explicit operator bool() const { return open_; }
  ImGuiTabItemScope(const ImGuiTabItemScope&) = delete;
  ImGuiTabItemScope& operator=(const ImGuiTabItemScope&) = delete;

 private:
  bool open_;
};

class ImGuiPopupModalScope {
 public:
  ImGuiPopupModalScope(const char* name, bool* p_open = nullptr, ImGuiWindowFlags flags = 0)
      : open_(ImGui::BeginPopupModal(name, p_open, flags)) {}
  ~ImGuiPopupModalScope() {
    if (open_) ImGui::EndPopup();
  }
  explicit operator bool() const { return open_; }
  ImGuiPopupModalScope(const ImGuiPopupModalScope&) = delete;
  ImGuiPopupModalScope& operator=(const ImGuiPopupModalScope&) = delete;

 private:
  bool open_;
};

class ImGuiTooltipScope {
 public:
  ImGuiTooltipScope() { ImGui::BeginTooltip(); }
  ~ImGuiTooltipScope() { ImGui::EndTooltip(); }
  ImGuiTooltipScope(const ImGuiTooltipScope&) = delete;
  ImGuiTooltipScope& operator=(const ImGuiTooltipScope&) = delete;
};

class ImGuiMainMenuBarScope {
 public:
  ImGuiMainMenuBarScope() : open_(ImGui::BeginMainMenuBar()) {}
  ~ImGuiMainMenuBarScope() {
    if (open_) ImGui::EndMainMenuBar();
  }
  explicit operator bool() const { return open_; }
  ImGuiMainMenuBarScope(const ImGuiMainMenuBarScope&) = delete;
  ImGuiMainMenuBarScope& operator=(const ImGuiMainMenuBarScope&) = delete;

 private:
  bool open_;
};

class ImGuiMenuScope {
 public:
  explicit ImGuiMenuScope(const char* label, bool enabled = true) : open_(ImGui::BeginMenu(label, enabled)) {}
  ~ImGuiMenuScope() {
    if (open_) ImGui::EndMenu();
  }
  explicit operator bool() const { return open_; }
  ImGuiMenuScope(const ImGuiMenuScope&) = delete;
  ImGuiMenuScope& operator=(const ImGuiMenuScope&) = delete;

 private:
  bool open_;
};

class ImGuiComboScope {
 public:
  ImGuiComboScope(const char* label, const char* preview, ImGuiComboFlags flags = 0)
      : open_(ImGui::BeginCombo(label, preview, flags)) {}
  ~ImGuiComboScope() {
    if (open_) ImGui::EndCombo();
  }
  explicit operator bool() const { return open_; }
  ImGuiComboScope(const ImGuiComboScope&) = delete;
  ImGuiComboScope& operator=(const ImGuiComboScope&) = delete;

 private:
  bool open_;
};

// A clip rectangle of a draw list (ImDrawList keeps its own stack).
class ImDrawListClipScope {
 public:
  ImDrawListClipScope(ImDrawList* list, const ImVec2& min, const ImVec2& max, bool intersect = true) : list_(list) {
    list_->PushClipRect(min, max, intersect);
  }
  ~ImDrawListClipScope() { list_->PopClipRect(); }
  ImDrawListClipScope(const ImDrawListClipScope&) = delete;
  ImDrawListClipScope& operator=(const ImDrawListClipScope&) = delete;

 private:
  ImDrawList* list_;
};

// Where ImGui's stacks are now: the windows begun, and in the current window its tables, tab
// bars, groups, IDs, text-wrap and item-width stacks, indent and draw-list clip rectangles; the
// global colour, style-variable, font, item-flag, focus-scope and disabled stacks. restore()
// ends and pops, innermost first, whatever was opened since, and nothing that was open before.
class ImGuiRecoveryPoint {
 public:
  ImGuiRecoveryPoint();
  void restore() const;

 private:
  int windows_;
  ImGuiWindow* window_;
  ImGuiTable* table_;
  ImGuiTabBar* tab_bar_;
  int ids_, groups_, text_wraps_, item_widths_, clip_rects_, colors_, style_vars_, fonts_, item_flags_, focus_scopes_,
      disabled_;
  float indent_;
};

// guarded() (error_log.h) for UI code: an exception becomes an entry of `log`, and ImGui's
// stacks are brought back to where they were when body() began. Returns whether body() finished.
template <class Body>
bool guarded_ui(ErrorLog& log, std::string_view where, Body&& body) {
  const ImGuiRecoveryPoint before;
  const bool finished = guarded(log, where, std::forward<Body>(body));
  if (!finished) before.restore();
  return finished;
}

}  // namespace ts
