// Annotations the exported PNGs add to a rendered heatmap (app/model/heatmap_png.h, which marks
// the tolerance on the colour bar itself), so that a picture read on its own says what it shows:
// header lines over it (what the values are, the run's config, what the marks mean).
#pragma once

#include <string>
#include <vector>

#include "app/model/export/export_run.h"
#include "app/model/png_theme.h"
#include "app/model/rgba_image.h"

namespace ts {


// `body` under header lines (the first large, the others smaller and dimmer), widened so that
// no line is cut. The panels' y offsets move down by the header's height.
RgbaImage with_header(const RgbaImage& body, const std::vector<std::string>& lines,
                      std::vector<ExportedPanel>& panels);

// The height with_header adds for these lines.
int header_height(const std::vector<std::string>& lines);

}  // namespace ts
