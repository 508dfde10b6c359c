// The viewer's look: a dark theme in the manner of RenderDoc and other GPU tools, and its
// fonts (DejaVu Sans / Sans Mono from Debian's fonts-dejavu-core when installed, else Dear
// ImGui's built-in font).
#pragma once

#include <imgui.h>

namespace ts {

struct GuiFonts {
  ImFont* ui = nullptr;    // labels, buttons
  ImFont* mono = nullptr;  // numbers in readouts: digits line up
};

// Call once after ImGui::CreateContext(), before the first frame.
void apply_dark_theme();
GuiFonts load_fonts(float size_px);
const GuiFonts& gui_fonts();

// Colours the widgets share.
namespace theme {
inline constexpr ImU32 kImageBackground = IM_COL32(14, 15, 17, 255);
inline constexpr ImU32 kFrame = IM_COL32(86, 90, 98, 255);
inline constexpr ImU32 kTick = IM_COL32(120, 124, 132, 255);
inline constexpr ImU32 kDimText = IM_COL32(150, 154, 162, 255);
inline constexpr ImU32 kAccent = IM_COL32(90, 160, 255, 255);
inline constexpr ImU32 kError = IM_COL32(240, 90, 90, 255);
}  // namespace theme

}  // namespace ts
