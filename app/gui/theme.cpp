#include "app/gui/theme.h"

#include <cmath>
#include <filesystem>

namespace ts {
namespace {

GuiFonts g_fonts;

ImFont* load_font(const char* path, float size_px) {
  if (!std::filesystem::exists(path)) return nullptr;
  ImFontConfig config;
  config.OversampleH = 2;
  config.OversampleV = 1;
  // Latin-1 and the general punctuation block: ImGui's default ranges stop at U+00FF, and the
  // reports' sentences use the em dash (U+2014), drawn as '?' without it. DejaVu has them all.
  static const ImWchar ranges[] = {0x0020, 0x00FF, 0x2000, 0x206F, 0};
  return ImGui::GetIO().Fonts->AddFontFromFileTTF(path, size_px, &config, ranges);
}

}  // namespace

void apply_dark_theme() {
  ImGui::StyleColorsDark();
  ImGuiStyle& s = ImGui::GetStyle();
  s.WindowRounding = 3.0f;
  s.ChildRounding = 3.0f;
  s.FrameRounding = 3.0f;
  s.PopupRounding = 3.0f;
  s.GrabRounding = 3.0f;
  s.TabRounding = 3.0f;
  s.WindowBorderSize = 1.0f;
  s.FrameBorderSize = 0.0f;
  s.WindowPadding = ImVec2(10, 8);
  s.FramePadding = ImVec2(7, 4);
  s.ItemSpacing = ImVec2(8, 6);
  s.ItemInnerSpacing = ImVec2(6, 4);
  s.ScrollbarSize = 13.0f;

  ImVec4* c = s.Colors;
  const ImVec4 bg(0.105f, 0.110f, 0.122f, 1.0f);
  const ImVec4 panel(0.135f, 0.141f, 0.156f, 1.0f);
  const ImVec4 frame(0.180f, 0.188f, 0.208f, 1.0f);
  const ImVec4 accent(0.26f, 0.52f, 0.90f, 1.0f);
  c[ImGuiCol_Text] = ImVec4(0.89f, 0.90f, 0.92f, 1.0f);
  c[ImGuiCol_TextDisabled] = ImVec4(0.52f, 0.54f, 0.58f, 1.0f);
  c[ImGuiCol_WindowBg] = bg;
  c[ImGuiCol_ChildBg] = panel;
  c[ImGuiCol_PopupBg] = ImVec4(0.12f, 0.125f, 0.14f, 0.98f);
  c[ImGuiCol_Border] = ImVec4(0.24f, 0.25f, 0.28f, 1.0f);
  c[ImGuiCol_FrameBg] = frame;
  c[ImGuiCol_FrameBgHovered] = ImVec4(0.23f, 0.24f, 0.27f, 1.0f);
  c[ImGuiCol_FrameBgActive] = ImVec4(0.27f, 0.29f, 0.33f, 1.0f);
  c[ImGuiCol_TitleBg] = bg;
  c[ImGuiCol_TitleBgActive] = panel;
  c[ImGuiCol_MenuBarBg] = ImVec4(0.085f, 0.09f, 0.10f, 1.0f);
  c[ImGuiCol_CheckMark] = accent;
  c[ImGuiCol_SliderGrab] = accent;
  c[ImGuiCol_SliderGrabActive] = ImVec4(0.36f, 0.62f, 1.0f, 1.0f);
  c[ImGuiCol_Button] = frame;
  c[ImGuiCol_ButtonHovered] = ImVec4(0.25f, 0.27f, 0.31f, 1.0f);
  c[ImGuiCol_ButtonActive] = ImVec4(0.20f, 0.38f, 0.66f, 1.0f);
  c[ImGuiCol_Header] = ImVec4(0.20f, 0.22f, 0.26f, 1.0f);
  c[ImGuiCol_HeaderHovered] = ImVec4(0.24f, 0.27f, 0.32f, 1.0f);
  c[ImGuiCol_HeaderActive] = ImVec4(0.20f, 0.38f, 0.66f, 1.0f);
  c[ImGuiCol_Separator] = ImVec4(0.24f, 0.25f, 0.28f, 1.0f);
  c[ImGuiCol_TableHeaderBg] = frame;
  c[ImGuiCol_TableBorderStrong] = ImVec4(0.24f, 0.25f, 0.28f, 1.0f);
  c[ImGuiCol_TableBorderLight] = ImVec4(0.19f, 0.20f, 0.22f, 1.0f);
  c[ImGuiCol_TableRowBgAlt] = ImVec4(1.0f, 1.0f, 1.0f, 0.025f);
}

GuiFonts load_fonts(float size_px) {
  ImGuiIO& io = ImGui::GetIO();
  g_fonts.ui = load_font("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", size_px);
  g_fonts.mono = load_font("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf", size_px - 1);
  g_fonts.large = load_font("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", std::round(size_px * 1.45f));
  if (!g_fonts.ui) g_fonts.ui = io.Fonts->AddFontDefault();
  if (!g_fonts.mono) g_fonts.mono = g_fonts.ui;
  if (!g_fonts.large) g_fonts.large = g_fonts.ui;
  io.FontDefault = g_fonts.ui;
  return g_fonts;
}

const GuiFonts& gui_fonts() { return g_fonts; }

}  // namespace ts
