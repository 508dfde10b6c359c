// The look of every PNG the model library draws (heatmap_png, the exports' annotations): the
// viewer's dark theme, so exports and screenshots look like one tool, and one text size each
// for titles and labels.
#pragma once

#include "app/model/rgba_image.h"

namespace ts {

inline constexpr Rgba8 kPngBackground{24, 25, 28, 255};
inline constexpr Rgba8 kPngText{226, 228, 233, 255};
inline constexpr Rgba8 kPngDimText{160, 164, 172, 255};
inline constexpr int kPngPad = 20;
inline constexpr int kPngTitleScale = 3;  // text_raster scale of titles
inline constexpr int kPngLabelScale = 2;  // of everything else

}  // namespace ts
