// Export of what heatmap views show: PNG with the view's array, colormap, range and axis names
// (through the model's CPU renderer, app/model/heatmap_png.h), and the array itself as .npy.
//
//   export_view_png(path, view, display, title);                 // one view, now
//   ExportableHeatmap h = exportable("detail_trace", view, grid, display, title);
//   write_heatmap_exports(folder, {h, ...}, true, true);         // on the worker thread
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "app/gui/heatmap_display.h"
#include "app/gui/heatmap_view.h"
#include "app/model/analysis/run_reference.h"
#include "app/model/heatmap_png.h"
#include "app/model/run_view.h"

namespace ts {

HeatmapPngOptions png_options_for(const HeatmapView& view, const HeatmapDisplay& display, std::string title);

// Throws GridShapeError when the view has no data, FileWriteError when `path` cannot be written.
HeatmapPngLayout export_view_png(const std::filesystem::path& path, const HeatmapView& view,
                                 const HeatmapDisplay& display, std::string title);

// A view's array and how it is drawn, copied out so that another thread can write it.
struct ExportableHeatmap {
  std::string stem;                        // file name without extension, e.g. "detail_trace"
  std::shared_ptr<const FloatGrid> grid;
  HeatmapPngOptions png;
};

ExportableHeatmap exportable(std::string stem, const HeatmapView& view, std::shared_ptr<const FloatGrid> grid,
                             const HeatmapDisplay& display, std::string title);

// The detail view of each of `events` (indices into the run, in the order given) as numbered
// frames: frame_NNN_event_E_{trace,reference,diff}, each the event's O/l (or raw O) beside the
// float64 reference and their difference, drawn with `values` (trace and reference) and `diff`
// (a display whose range follows the data, Auto, is fitted to each frame; a fixed one is kept).
// Computes each comparison (compare_event): for the worker thread. Throws AnalysisError for an
// event that cannot be compared.
std::vector<ExportableHeatmap> event_frames(const RunView& run, const RunReference& reference,
                                            std::span<const size_t> events, bool normalised,
                                            const HeatmapDisplay& values, const HeatmapDisplay& diff);

// Writes <stem>.png (when `png`) and <stem>.npy (float32, rows x cols; when `npy`; a masked
// array also gets <stem>_mask.npy, uint8) for each heatmap, and whatever `also` writes into the
// same folder, as one export folder at `folder` (app/model/export/staged_folder.h: it appears
// whole or not at all, and replaces only an earlier export). Returns the files written (where
// they are once in place). Throws FileWriteError naming the path.
std::vector<std::filesystem::path> write_heatmap_exports(
    const std::filesystem::path& folder, std::span<const ExportableHeatmap> heatmaps, bool png, bool npy,
    const std::function<std::vector<std::filesystem::path>(const std::filesystem::path& staging)>& also = {});

}  // namespace ts
