#include "app/gui/heatmap_export.h"

#include <cstdio>

#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/event_identity.h"

#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "app/model/export/staged_folder.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/npy.h"

namespace ts {
namespace {

// A PNG numbers its rows and columns from first_row / first_col; an axis whose cells carry
// numbers of their own says them in its label instead: "keys up to (index 0 = 127, 1 = 255, ...,
// 7 = 1023)".
std::string label_with_numbers(const std::string& label, const std::optional<std::vector<int64_t>>& values) {
  if (!values || values->empty()) return label;
  const std::vector<int64_t>& v = *values;
  std::string s = label + " (index 0 = " + std::to_string(v[0]);
  if (v.size() > 1) s += ", 1 = " + std::to_string(v[1]);
  if (v.size() > 3) s += ", ...";
  if (v.size() > 2) s += ", " + std::to_string(v.size() - 1) + " = " + std::to_string(v.back());
  return s + ")";
}

// The same for rows named instead of numbered: "batch, query head (index 0 = b0 h0, ...)".
std::string label_with_names(const std::string& label, const std::vector<std::string>& names) {
  if (names.empty()) return label;
  std::string s = label + " (index 0 = " + names[0];
  if (names.size() > 1) s += ", 1 = " + names[1];
  if (names.size() > 3) s += ", ...";
  if (names.size() > 2) s += ", " + std::to_string(names.size() - 1) + " = " + names.back();
  return s + ")";
}

}  // namespace

HeatmapPngOptions png_options_for(const HeatmapView& view, const HeatmapDisplay& display, std::string title) {
  HeatmapPngOptions opt;
  opt.title = std::move(title);
  opt.row_label = view.axes.row_names ? label_with_names(view.axes.row_label, *view.axes.row_names)
                                      : label_with_numbers(view.axes.row_label, view.axes.row_values);
  opt.col_label = label_with_numbers(view.axes.col_label, view.axes.col_values);
  opt.first_row = view.axes.first_row;
  opt.first_col = view.axes.first_col;
  opt.colormap = display.colormap;
  opt.scale = display.scale;
  opt.autofit = false;  // exactly the range on screen
  return opt;
}

HeatmapPngLayout export_view_png(const std::filesystem::path& path, const HeatmapView& view,
                                 const HeatmapDisplay& display, std::string title) {
  if (!view.data()) throw GridShapeError("the '" + view.name() + "' view has no data to export");
  return write_heatmap_png(path, view.data()->view(), png_options_for(view, display, std::move(title)));
}

ExportableHeatmap exportable(std::string stem, const HeatmapView& view, std::shared_ptr<const FloatGrid> grid,
                             const HeatmapDisplay& display, std::string title) {
  return {std::move(stem), std::move(grid), png_options_for(view, display, std::move(title))};
}

std::vector<ExportableHeatmap> event_frames(const RunView& run, const RunReference& reference,
                                            std::span<const size_t> events, bool normalised,
                                            const HeatmapDisplay& values, const HeatmapDisplay& diff) {
  std::vector<ExportableHeatmap> out;
  const std::string what = normalised ? "O/l" : "O";
  for (size_t k = 0; k < events.size(); ++k) {
    const EventComparison cmp = compare_event(run, reference, events[k]);
    char prefix[64];
    std::snprintf(prefix, sizeof prefix, "frame_%03zu_event_%zu_", k, events[k]);
    const std::string title = describe_event(cmp.header, run.stages, run.attention);
    const auto options = [&](const HeatmapDisplay& d, const std::string& t) {
      HeatmapPngOptions o;
      o.title = t;
      o.row_label = "query row";
      o.col_label = "head-dim column";
      o.first_row = cmp.header.q_begin;
      o.colormap = d.colormap;
      o.scale = d.scale;
      o.autofit = d.auto_range;  // Auto: each frame's own range, as the view would show it
      return o;
    };
    const auto grid = [](const FloatGrid& g) { return std::make_shared<const FloatGrid>(g); };
    out.push_back({prefix + std::string("trace"), grid(normalised ? cmp.o_norm_trace : cmp.o_trace),
                   options(values, title + "  trace " + what)});
    out.push_back({prefix + std::string("reference"), grid(normalised ? cmp.o_norm_reference : cmp.o_reference),
                   options(values, title + "  reference " + what)});
    out.push_back({prefix + std::string("diff"), grid(normalised ? cmp.o_norm_diff : cmp.o_diff),
                   options(diff, title + "  trace - reference")});
  }
  return out;
}

std::vector<std::filesystem::path> write_heatmap_exports(
    const std::filesystem::path& folder, std::span<const ExportableHeatmap> heatmaps, bool png, bool npy,
    const std::function<std::vector<std::filesystem::path>(const std::filesystem::path& staging)>& also) {
  StagedFolder staged(folder);
  std::vector<std::filesystem::path> written;
  for (const ExportableHeatmap& h : heatmaps) {
    if (!h.grid) continue;
    h.grid->view().validate();
    if (png) {
      write_heatmap_png(staged.path() / (h.stem + ".png"), h.grid->view(), h.png);
      written.push_back(folder / (h.stem + ".png"));
    }
    if (npy) {
      const int64_t shape[] = {h.grid->rows, h.grid->cols};
      write_npy(staged.path() / (h.stem + ".npy"), ElemType::F32, shape, h.grid->values.data());
      written.push_back(folder / (h.stem + ".npy"));
      if (!h.grid->mask.empty()) {
        write_npy(staged.path() / (h.stem + "_mask.npy"), ElemType::U8, shape, h.grid->mask.data());
        written.push_back(folder / (h.stem + "_mask.npy"));
      }
    }
  }
  if (also)
    for (const std::filesystem::path& p : also(staged.path())) written.push_back(folder / p.lexically_relative(staged.path()));
  staged.commit();
  return written;
}

}  // namespace ts
