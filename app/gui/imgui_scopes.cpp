#include "app/gui/imgui_scopes.h"

#include <imgui_internal.h>

namespace ts {

namespace {

// Ends the tables whose window is the current one, newest first, down to `keep`.
void end_tables_of_current_window(const ImGuiTable* keep) {
  ImGuiContext& g = *GImGui;
  while (g.CurrentTable != nullptr && g.CurrentTable != keep &&
         (g.CurrentTable->OuterWindow == g.CurrentWindow || g.CurrentTable->InnerWindow == g.CurrentWindow))
    ImGui::EndTable();
}

// Ends the current window, begun after the recovery point, with what it holds.
void end_current_window() {
  ImGuiContext& g = *GImGui;
  ImGuiWindow* window = g.CurrentWindow;
  const ImGuiStackSizes& on_begin = g.CurrentWindowStack.back().StackSizesOnBegin;
  end_tables_of_current_window(nullptr);
  if (g.CurrentWindow != window) return;  // a table's own scrolling child: ended with its table
  while (g.GroupStack.Size > on_begin.SizeOfGroupStack) ImGui::EndGroup();
  while (window->IDStack.Size > 1) ImGui::PopID();
  if ((window->Flags & ImGuiWindowFlags_MenuBar) && window->DC.MenuBarAppending) ImGui::EndMenuBar();
  if (window->Flags & ImGuiWindowFlags_Popup) ImGui::EndPopup();  // popups, modals, menus
  else if (window->Flags & ImGuiWindowFlags_ChildWindow) ImGui::EndChild();
  else ImGui::End();  // windows, tooltips, the main menu bar
}

}  // namespace

ImGuiRecoveryPoint::ImGuiRecoveryPoint() {
  ImGuiContext& g = *GImGui;
  ImGuiWindow* w = g.CurrentWindow;
  windows_ = g.CurrentWindowStack.Size;
  window_ = w;
  table_ = g.CurrentTable;
  tab_bar_ = g.CurrentTabBar;
  ids_ = w ? w->IDStack.Size : 0;
  groups_ = g.GroupStack.Size;
  text_wraps_ = w ? w->DC.TextWrapPosStack.Size : 0;
  item_widths_ = w ? w->DC.ItemWidthStack.Size : 0;
  clip_rects_ = w ? w->DrawList->_ClipRectStack.Size : 0;
  indent_ = w ? w->DC.Indent.x : 0.0f;
  colors_ = g.ColorStack.Size;
  style_vars_ = g.StyleVarStack.Size;
  fonts_ = g.FontStack.Size;
  item_flags_ = g.ItemFlagsStack.Size;
  focus_scopes_ = g.FocusScopeStack.Size;
  disabled_ = g.DisabledStackSize;
}

void ImGuiRecoveryPoint::restore() const {
  ImGuiContext& g = *GImGui;
  // Windows begun since (children, popups, menus, tooltips), innermost first.
  while (g.CurrentWindowStack.Size > windows_) end_current_window();
  ImGuiWindow* w = g.CurrentWindow;
  if (w == window_ && w != nullptr) {
    end_tables_of_current_window(table_);
    // Tab bars keep no window of their own; those opened since are this window's by now.
    while (g.CurrentTabBar != nullptr && g.CurrentTabBar != tab_bar_) ImGui::EndTabBar();
    while (g.GroupStack.Size > groups_) ImGui::EndGroup();
    while (w->IDStack.Size > ids_) ImGui::PopID();
    while (w->DC.TextWrapPosStack.Size > text_wraps_) ImGui::PopTextWrapPos();
    while (w->DC.ItemWidthStack.Size > item_widths_) ImGui::PopItemWidth();
    while (w->DrawList->_ClipRectStack.Size > clip_rects_) w->DrawList->PopClipRect();
    w->DC.Indent.x = indent_;
  }
  while (g.DisabledStackSize > disabled_) ImGui::EndDisabled();
  while (g.ColorStack.Size > colors_) ImGui::PopStyleColor();
  while (g.StyleVarStack.Size > style_vars_) ImGui::PopStyleVar();
  while (g.FontStack.Size > fonts_) ImGui::PopFont();
  while (g.ItemFlagsStack.Size > item_flags_) ImGui::PopItemFlag();
  while (g.FocusScopeStack.Size > focus_scopes_) ImGui::PopFocusScope();
}

}  // namespace ts
