#include "app/model/export/export_run.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

#include "app/model/analysis/event_comparison.h"
#include "app/model/analysis/index_ranges.h"
#include "app/model/analysis/report_json.h"
#include "app/model/analysis/report_text.h"
#include "app/model/analysis/symptoms.h"
#include "app/model/export/export_png.h"
#include "app/model/export/staged_folder.h"
#include "app/model/png_file.h"
#include "app/model/text_raster.h"
#include "instrumentation/trace/atomic_file.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/npy.h"

namespace ts {
namespace {

constexpr Rgba8 kMarker{255, 255, 255, 255};  // frame around the first divergence (ember tops out pale yellow)

// A stage's name as a file name: letters, digits, '-' and '_' kept, anything else '_'; the
// stage index appended when two names of the table would give one file name.
std::string stage_file(const std::vector<StageInfo>& stages, int32_t stage) {
  const auto clean = [](std::string name) {
    for (char& ch : name)
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_')) ch = '_';
    return name;
  };
  const std::string name = clean(stages[static_cast<size_t>(stage)].name);
  for (size_t s = 0; s < stages.size(); ++s)
    if (static_cast<int32_t>(s) != stage && clean(stages[s].name) == name) return name + "_" + std::to_string(stage);
  return name;
}

std::string pair_suffix(int32_t batch, int32_t head) {
  return "_b" + std::to_string(batch) + "_h" + std::to_string(head);
}

// Worst of each block of `kr` consecutive rows x `kc` consecutive columns (NaN wins; masked only
// when every cell of the block is), so that a grid of any size draws within an image's limits.
FloatGrid pool_blocks(const FloatGrid& g, int64_t kr, int64_t kc) {
  if (kr <= 1 && kc <= 1) return g;
  FloatGrid p;
  p.rows = (g.rows + kr - 1) / kr;
  p.cols = (g.cols + kc - 1) / kc;
  p.values.assign(static_cast<size_t>(p.rows * p.cols), 0.0f);
  p.mask.assign(p.values.size(), 1);
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t c = 0; c < g.cols; ++c) {
      const size_t from = static_cast<size_t>(r * g.cols + c), to = static_cast<size_t>((r / kr) * p.cols + c / kc);
      if (!g.mask.empty() && g.mask[from]) continue;
      const float v = g.values[from];
      float& o = p.values[to];
      o = p.mask[to] ? v : ((std::isnan(v) || std::isnan(o)) ? std::numeric_limits<float>::quiet_NaN() : std::max(o, v));
      p.mask[to] = 0;
    }
  return p;
}

// How many consecutive rows (or columns) one cell of a drawn grid pools so that at most `limit`
// remain.
int64_t pool_factor(int64_t count, int64_t limit) { return std::max<int64_t>(1, (count + limit - 1) / limit); }


void frame_cells(RgbaImage& img, const HeatmapPngLayout& L, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const int x0 = L.plot_x + static_cast<int>(c0) * L.cell_w - 2, x1 = L.plot_x + static_cast<int>(c1) * L.cell_w + 2;
  const int y0 = L.plot_y + static_cast<int>(r0) * L.cell_h - 2, y1 = L.plot_y + static_cast<int>(r1) * L.cell_h + 2;
  img.fill_rect(x0, y0, x1, y0 + 2, kMarker);
  img.fill_rect(x0, y1 - 2, x1, y1, kMarker);
  img.fill_rect(x0, y0, x0 + 2, y1, kMarker);
  img.fill_rect(x1 - 2, y0, x1, y1, kMarker);
}

// Absent cells as their negative codes (float_grid.h: absent_cell_npy_value; errors are >= 0).
void write_grid_npy(const std::filesystem::path& path, const FloatGrid& g) {
  std::vector<float> v = g.values;
  for (size_t i = 0; i < v.size(); ++i)
    if (!g.mask.empty() && g.mask[i]) v[i] = absent_cell_npy_value(static_cast<AbsentCell>(g.mask[i]));
  const int64_t shape[] = {g.rows, g.cols};
  write_npy(path, ElemType::F32, shape, v.data());
}

void write_vector_npy(const std::filesystem::path& path, const std::vector<float>& v, std::vector<int64_t> shape) {
  write_npy(path, ElemType::F32, shape, v.data());
}

struct Exporter {
  const RunView& run;
  const AnalysisReport& report;
  std::filesystem::path dir;    // where the files are written (the staging folder)
  std::filesystem::path shown;  // where they will be once the export is committed
  ExportOptions options;
  ExportResult result;
  std::string config_text;
  nlohmann::json grid_columns = nlohmann::json::array();  // per grid file: the keys its columns end at

  void add(const std::string& name, const std::string& what, std::vector<ExportedPanel> panels = {}) {
    result.files.push_back({shown / name, what, std::move(panels)});
  }

  // "white frame: the first divergence (queries 0-7, keys up to 4095)"
  std::string framed_note() const {
    const Divergence& d = report.first_divergence;
    const StageInfo& st = report.stage_table[static_cast<size_t>(d.header.stage)];
    std::string where = "queries " + std::to_string(d.header.q_begin) + "-" +
                        std::to_string(d.header.q_begin + std::max(d.header.rows, 1) - 1) + ", keys up to " +
                        std::to_string(event_key_end(d.header, st, report.attention) - 1);
    return "white frame: the first divergence (" + where + (d.missing ? ", never written" : "") + ")";
  }

  // A ratio grid (overview or stage) as .npy and PNG, the first divergence framed when it lies in
  // it. `title` says what the grid is; the PNG adds the config, the tolerance on the colour bar
  // and what the frame means, so that the picture reads on its own.
  void ratio_grid(const ErrorGrid& g, const std::string& base, const std::string& title) {
    write_grid_npy(dir / (base + ".npy"), g.grid);
    grid_columns.push_back({{"file", base + ".npy"}, {"column_keys", g.column_keys}, {"rows_per_cell", g.rows_per_cell}});
    const std::string rows_axis = g.rows_per_cell > 1 ? "query / " + std::to_string(g.rows_per_cell) : "query";
    add(base + ".npy", title + ": error / tolerance, float32 [" + rows_axis + ", column] (-1 masked: sees no key, -2 never written by " +
                           "the kernel, -3 not traced: filtered); column c covers the keys up to column_keys[c] - 1, listed in summary.json");
    const int64_t k = pool_factor(g.grid.rows, options.max_grid_rows);
    const int64_t kc = pool_factor(g.grid.cols, options.max_grid_cols);
    const FloatGrid pooled = pool_blocks(g.grid, k, kc);
    HeatmapPngOptions o;
    const int64_t rows_per_px = k * g.rows_per_cell;
    o.row_label = rows_per_px > 1 ? "query (worst of " + std::to_string(rows_per_px) + ")" : "query";
    const std::string cols = "keys covered, by where they end";
    o.col_label = kc > 1 ? cols + " (worst of " + std::to_string(kc) + ")" : cols;
    // The one fixed error / tolerance scale of every error map, the viewer's too (colormap.h).
    o.colormap = kToleranceColormap;
    o.scale = tolerance_scale();
    o.autofit = false;
    o.colorbar_mark = HeatmapPngOptions::ColorbarMark{1.0f, "1 = tolerance"};
    HeatmapPngLayout layout;
    RgbaImage img = render_heatmap_image(pooled.view(), o, &layout);
    std::vector<ExportedPanel> panels{{0, 0, layout, o.colormap, k, kc}};
    std::vector<std::string> header{title + ": error / tolerance", config_text};
    const Divergence& d = report.first_divergence;
    const StageInfo* dst = d.found ? &report.stage_table[static_cast<size_t>(d.header.stage)] : nullptr;
    const bool first_here = d.found && d.header.batch == g.batch && d.header.head == g.head &&
                            (g.stage == d.header.stage || (g.stage < 0 && dst->kind != StageKind::final));
    if (first_here) {
      const int64_t col = g.column_of(event_key_end(d.header, *dst, report.attention));
      const int64_t q0 = d.header.q_begin / g.rows_per_cell;
      const int64_t q1 = (int64_t{d.header.q_begin} + std::max(d.header.rows, 1) + g.rows_per_cell - 1) / g.rows_per_cell;
      if (col >= 0 && col / kc < pooled.cols) frame_cells(img, layout, q0 / k, (q1 + k - 1) / k, col / kc, col / kc + 1);
    }
    header.push_back(std::string("log colour scale, 1/1000 to 1000 x tolerance: blue within it, red to yellow over it") +
                     (first_here ? "; " + framed_note() : ""));
    img = with_header(img, header, panels);
    write_png_file(dir / (base + ".png"), img);
    add(base + ".png", title + ": error / tolerance (log scale 1e-3 to 1e3; 1 = the tolerance)", panels);
  }

  void first_divergence() {
    const Divergence& d = report.first_divergence;
    const int64_t index = d.event_index >= 0 ? d.event_index : d.first_failing_event;
    if (index < 0) return;
    RunReference ref(run);
    ref.set_tolerance(report.tolerance);
    const EventComparison c = compare_event(run, ref, static_cast<size_t>(index));
    const std::string where = describe_event(c.header, report.stage_table, report.attention);
    const int64_t shape[] = {c.rows, c.head_dim};
    const std::pair<const char*, const FloatGrid*> arrays[] = {
        {"o_norm_trace", &c.o_norm_trace}, {"o_norm_reference", &c.o_norm_reference}, {"o_norm_diff", &c.o_norm_diff},
        {"o_trace", &c.o_trace},           {"o_reference", &c.o_reference},           {"o_diff", &c.o_diff}};
    for (const auto& [name, g] : arrays) {
      const std::string file = std::string("first_divergence_") + name + ".npy";
      write_npy(dir / file, ElemType::F32, shape, g->values.data());
      add(file, std::string(name) + " of " + where + ", float32 [row, head-dim column]");
    }
    std::vector<float> ml;
    for (const auto* v : {&c.m_trace, &c.m_reference, &c.l_trace, &c.l_reference}) ml.insert(ml.end(), v->begin(), v->end());
    write_vector_npy(dir / "first_divergence_m_l.npy", ml, {4, c.rows});
    add("first_divergence_m_l.npy", "m trace, m reference, l trace, l reference of " + where + ", float32 [4, row]");

    // trace | reference | diff of O/l; trace and reference share one scale.
    const ValueStats both = combine(value_stats(c.o_norm_trace.values), value_stats(c.o_norm_reference.values));
    ColorScale shared;
    shared.symmetric = true;
    shared = fit_scale(both, shared);
    struct Panel {
      const FloatGrid* grid;
      std::string title;
      ColorScale scale;
    };
    ColorScale diff_scale;
    diff_scale.symmetric = true;
    diff_scale = fit_scale(value_stats(c.o_norm_diff.values), diff_scale);
    const Panel panels[] = {{&c.o_norm_trace, "trace O/l", shared},
                            {&c.o_norm_reference, "reference O/l", shared},
                            {&c.o_norm_diff, "trace - reference", diff_scale}};
    std::vector<RgbaImage> images;
    std::vector<ExportedPanel> placed;
    int width = 0, height = 0;
    for (const Panel& p : panels) {
      HeatmapPngOptions o;
      o.title = p.title;
      o.row_label = "row (query " + std::to_string(c.header.q_begin) + " + row)";
      o.col_label = "head-dim column";
      o.colormap = ColormapId::diverging;
      o.scale = p.scale;
      o.autofit = false;
      o.min_plot_px = 256;
      HeatmapPngLayout layout;
      images.push_back(render_heatmap_image(p.grid->view(), o, &layout));
      placed.push_back({width, 0, layout, o.colormap, 1, 1});
      width += images.back().width;
      height = std::max(height, images.back().height);
    }
    // Header lines say which event this is; the panels sit under them.
    RgbaImage body(width, height, kPngBackground);
    for (size_t i = 0; i < images.size(); ++i)
      for (int y = 0; y < images[i].height; ++y)
        for (int x = 0; x < images[i].width; ++x) body.at(placed[i].x_offset + x, y) = images[i].at(x, y);
    std::vector<std::string> header{(d.missing ? "first wrong event written: " : "first divergence: ") + where,
                                    config_text};
    if (d.missing)
      header.push_back("the first divergence, " + describe_event(d.header, report.stage_table, report.attention) +
                       ", was never written (no values to show)");
    const std::vector<int32_t> failing = c.failing_rows();
    header.push_back("O/l (O divided by l) of the event's rows, trace and reference on one scale; " +
                     (failing.empty() ? std::string("no row") : "rows " + format_ranges(std::span<const int32_t>(failing))) +
                     " of the event over tolerance");
    const RgbaImage out = with_header(body, header, placed);
    write_png_file(dir / "first_divergence.png", out);
    add("first_divergence.png", "trace | reference | diff of O/l at " + where + (d.missing ? " (the first event written wrong; the first divergence was never written)" : ""),
        placed);
  }

  void summary() {
    nlohmann::json j = report_json(report);
    nlohmann::json files = nlohmann::json::array();
    for (const ExportedFile& f : result.files) files.push_back({{"file", f.path.filename().string()}, {"what", f.what}});
    files.push_back({{"file", "summary.json"}, {"what", "this report"}});
    j["files"] = files;
    nlohmann::json exported = nlohmann::json::array();
    for (const auto& [b, h] : result.pairs) exported.push_back({b, h});
    j["pairs"] = {{"exported", exported}, {"of", result.pairs_total}};
    j["grids"] = grid_columns;
    j["text"] = report_text(report);
    // Names quote file names, which need not be UTF-8.
    const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    AtomicFileWriter out(dir / "summary.json");
    out.write(text.data(), text.size());
    out.commit();
    add("summary.json", "the report");
  }

  void run_all() {
    config_text = run_line(report);
    // Pairs with their own files: the first divergence's first, then in order.
    std::vector<std::pair<int32_t, int32_t>> pairs;
    if (report.first_divergence.found)
      pairs.emplace_back(report.first_divergence.header.batch, report.first_divergence.header.head);
    std::set<std::pair<int32_t, int32_t>> all(pairs.begin(), pairs.end());
    for (const ErrorGrid& g : report.grids) all.emplace(g.batch, g.head);
    for (const auto& p : all)
      if (static_cast<int>(pairs.size()) < options.max_pairs && std::find(pairs.begin(), pairs.end(), p) == pairs.end())
        pairs.push_back(p);
    result.pairs = pairs;
    result.pairs_total = all.size();
    std::string intermediate;
    for (const StageInfo& st : report.stage_table)
      if (st.kind != StageKind::final) intermediate += (intermediate.empty() ? "" : ", ") + st.name;
    for (const auto& [b, h] : pairs) {
      const std::string pair_text = ", batch " + std::to_string(b) + " head " + std::to_string(h);
      for (const ErrorGrid& g : report.overview)
        if (g.batch == b && g.head == h)
          ratio_grid(g, "overview" + pair_suffix(b, h), "overview (worst of " + intermediate + ")" + pair_text);
      for (const ErrorGrid& g : report.grids) {
        if (g.batch != b || g.head != h) continue;
        const std::string base = stage_file(report.stage_table, g.stage) + pair_suffix(b, h);
        const std::string& name = report.stage_name(g.stage);
        ratio_grid(g, base, name + pair_text);
        const std::vector<float> by_query = report.error_by_query(g.stage, b, h);
        const std::string q = "error_by_query_" + base + ".npy";
        write_vector_npy(dir / q, by_query, {static_cast<int64_t>(by_query.size())});
        add(q, name + ": worst error / tolerance per query, float32 [query" + (g.rows_per_cell > 1 ? " / " + std::to_string(g.rows_per_cell) : std::string()) + "]");
      }
    }
    first_divergence();
    summary();
  }
};

void check_report(const RunView& run, const AnalysisReport& report) {
  if (run.num_events() != report.events.size())
    throw AnalysisError("the report was made from another run (" + std::to_string(report.events.size()) +
                        " events, this run has " + std::to_string(run.num_events()) + ")");
}

// A folder inside the staging folder (A/B's a/ and b/).
std::filesystem::path make_subfolder(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::create_directory(dir, ec) || ec)
    throw FileWriteError(dir, "cannot create the export folder " + dir.string() + ": " +
                                  (ec ? ec.message() : std::string("it exists")));
  return dir;
}

// Writes the export of one run into `dir` (which exists); the files are listed under `shown`.
ExportResult export_into(const RunView& run, const AnalysisReport& report, const std::filesystem::path& dir,
                         const std::filesystem::path& shown, const ExportOptions& options) {
  Exporter e{run, report, dir, shown, options, {}, {}};
  e.run_all();
  return std::move(e.result);
}

}  // namespace

const ExportedFile* ExportResult::find(const std::string& name) const {
  for (const ExportedFile& f : files)
    if (f.path.filename() == name) return &f;
  return nullptr;
}

ExportResult export_run(const RunView& run, const AnalysisReport& report, const std::filesystem::path& dir,
                        const ExportOptions& options) {
  check_report(run, report);
  StagedFolder staged(dir);
  ExportResult result = export_into(run, report, staged.path(), dir, options);
  staged.commit();
  return result;
}

ExportResult export_ab(const RunView& a, const RunView& b, const ABReport& r, const std::filesystem::path& dir,
                       const ExportOptions& options) {
  check_report(a, r.a);
  check_report(b, r.b);
  StagedFolder staged(dir);
  ExportResult result = export_into(a, r.a, make_subfolder(staged.path() / "a"), dir / "a", options);
  ExportResult rb = export_into(b, r.b, make_subfolder(staged.path() / "b"), dir / "b", options);
  result.files.insert(result.files.end(), rb.files.begin(), rb.files.end());
  nlohmann::json j = ab_report_json(r);
  nlohmann::json files = nlohmann::json::array();
  for (const ExportedFile& f : result.files)
    files.push_back({{"file", f.path.lexically_relative(dir).string()}, {"what", f.what}});
  j["files"] = files;
  j["text"] = ab_report_text(r);
  // Names quote file names, which need not be UTF-8.
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  AtomicFileWriter out(staged.path() / "summary.json");
  out.write(text.data(), text.size());
  out.commit();
  result.files.push_back({dir / "summary.json", "the A/B report", {}});
  staged.commit();
  return result;
}

}  // namespace ts
