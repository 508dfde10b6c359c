// The evidence of an analysis, written to a folder (`tilescope export RUN -o DIR`):
//   summary.json                          the report (analysis/report_json.h) and the file list
//   overview_b<B>_h<H>.png / .npy         worst error / tolerance by (query x split or kv tile)
//                                         of the intermediate stages, the first divergence framed
//   <stage>_b<B>_h<H>.png / .npy          the same per stage (e.g. splitk_reduce_b0_h0.png)
//   error_by_query_<stage>_b<B>_h<H>.npy  worst error / tolerance per query index
//   first_divergence.png                  the first divergent event: trace | reference | diff of
//                                         O/l (query rows x head-dim columns)
//   first_divergence_{o_norm,o}_{trace,reference,diff}.npy, first_divergence_m_l.npy
//                                         its arrays (O/l, raw O; m and l of trace and reference)
// Grids in .npy are float32: error / tolerance (>= 0), NaN where the trace held NaN, inf where it
// held an infinity the reference does not, and a negative code where a cell has no value
// (float_grid.h: AbsentCell): -1 masked (its rows see no key there), -2 never written by the
// kernel, -3 not traced (left out by the capture's filters). PNGs use the viewer's fixed
// tolerance scale and colormap (colormap.h: tolerance_scale) and special colours (NaN, +Inf,
// -Inf, and the three absent kinds), a colour bar with the tolerance marked, axis labels and a
// title with the config. The folder appears whole or not
// at all (staged_folder.h): written beside the destination under a hidden name, then renamed
// into place; an earlier export there is replaced as a whole, a folder holding anything else is
// refused (FileWriteError), and a failure leaves nothing behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "app/model/analysis/ab_compare.h"
#include "app/model/analysis/analysis_report.h"
#include "app/model/heatmap_png.h"
#include "app/model/run_view.h"

namespace ts {

struct ExportOptions {
  int max_pairs = 4;          // (batch, head) pairs with their own grids (the first divergence's first)
  int max_grid_rows = 4096;   // taller grids are pooled (worst of consecutive queries) to this many
  int max_grid_cols = 4096;   // wider grids (long kv: a column per kv tile) likewise, worst of
                              // consecutive columns
};

// One heatmap panel of a PNG: where it is in the image and how its values were coloured, so
// that a reader (and the tests) can find cell (r, c) and its colour.
struct ExportedPanel {
  int x_offset = 0;           // of the panel's image within the PNG
  int y_offset = 0;
  HeatmapPngLayout layout;
  ColormapId colormap = ColormapId::ember;
  int64_t rows_per_cell = 1;  // query rows pooled into one grid row
  int64_t cols_per_cell = 1;  // columns (splits, kv tiles) pooled into one grid column
};

struct ExportedFile {
  std::filesystem::path path;
  std::string what;                  // one line, also in summary.json
  std::vector<ExportedPanel> panels; // PNGs only
};

struct ExportResult {
  std::vector<ExportedFile> files;
  // The (batch, head) pairs with grids of their own (at most ExportOptions::max_pairs), of the
  // pairs_total the report covers; the others are in the report only.
  std::vector<std::pair<int32_t, int32_t>> pairs;
  size_t pairs_total = 0;
  const ExportedFile* find(const std::string& file_name) const;
};

// Throws FileWriteError naming the path when the folder cannot be created or a file cannot be
// written (nothing is left behind), AnalysisError when the run does not fit the report. The
// paths in the result are under `dir`.
ExportResult export_run(const RunView& run, const AnalysisReport& report, const std::filesystem::path& dir,
                        const ExportOptions& options = {});

// A/B: summary.json (the A/B report) in `dir`, each run's export in dir/a and dir/b.
ExportResult export_ab(const RunView& a, const RunView& b, const ABReport& report, const std::filesystem::path& dir,
                       const ExportOptions& options = {});

}  // namespace ts
