// The viewer's look: a dark theme in the manner of RenderDoc and other GPU tools, and its
// fonts (DejaVu Sans / Sans Mono from Debian's fonts-dejavu-core when installed, else Dear
// ImGui's built-in font).
#pragma once

#include <imgui.h>

namespace ts {

struct GuiFonts {
  ImFont* ui = nullptr;    // labels, buttons
  ImFont* mono = nullptr;  // numbers in readouts: digits line up
  ImFont* large = nullptr; // the symptom line and verdicts: read from across the room
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
inline constexpr ImU32 kPass = IM_COL32(92, 200, 120, 255);     // a verdict within tolerance
inline constexpr ImU32 kFail = IM_COL32(255, 96, 84, 255);      // a verdict over tolerance
inline constexpr ImU32 kWarn = IM_COL32(240, 190, 80, 255);     // dropped or missing events
// The first divergence, framed on the overview's grids: a colour no colormap or special
// cell has (the screenshot tests look for it).
inline constexpr ImU32 kDivergenceMark = IM_COL32(64, 224, 255, 255);
inline constexpr ImU32 kSelectionMark = IM_COL32(90, 160, 255, 255);
// Curve series: trace and reference.
inline constexpr ImU32 kTraceCurve = IM_COL32(255, 140, 70, 255);
inline constexpr ImU32 kReferenceCurve = IM_COL32(110, 180, 255, 255);
}  // namespace theme

}  // namespace ts
