// Exports: PNGs decoded with stb_image have the colours of their values at known cells (NaN in
// its own colour), .npy files carry the right header, shape and values (read back here and by
// numpy), summary.json parses and matches the report; an unwritable folder is a clear error
// that leaves nothing behind.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include <stb_image.h>

#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/event_comparison.h"
#include "app/model/export/export_run.h"
#include "kernels/kernel_stages.h"
#include "app/model/export/staged_folder.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/npy.h"
#include "tests/analysis/launched_run.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_seed.h"

namespace ts {
namespace {

using test::make_config;

struct Image {
  int w = 0, h = 0;
  std::vector<Rgba8> px;
  Rgba8 at(int x, int y) const { return px[static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(x)]; }
};

Image load_png(const std::filesystem::path& path) {
  Image img;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.w, &img.h, &channels, 4);
  if (!data) {
    ADD_FAILURE() << "cannot decode " << path;
    return img;
  }
  img.px.resize(static_cast<size_t>(img.w) * static_cast<size_t>(img.h));
  for (size_t i = 0; i < img.px.size(); ++i) img.px[i] = {data[4 * i], data[4 * i + 1], data[4 * i + 2], data[4 * i + 3]};
  stbi_image_free(data);
  return img;
}

// The colour a cell of a panel must have: its value through the panel's colormap and scale, or
// the special colour of its class.
Rgba8 expected_colour(const ExportedPanel& p, float value, uint8_t absent) {
  const CellClass cls = classify_cell(value, absent);
  if (cls != CellClass::finite) return special_color(cls);
  return map_value(value, p.colormap, p.layout.scale);
}

Rgba8 cell_pixel(const Image& img, const ExportedPanel& p, int64_t r, int64_t c) {
  const int x = p.x_offset + p.layout.plot_x + static_cast<int>(c) * p.layout.cell_w + p.layout.cell_w / 2;
  const int y = p.y_offset + p.layout.plot_y + static_cast<int>(r) * p.layout.cell_h + p.layout.cell_h / 2;
  return img.at(x, y);
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a shell command; its stdout.
std::string shell(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  *status = pclose(pipe);
  return out;
}

std::vector<float> floats(const NpyArray& a) {
  std::vector<float> v(static_cast<size_t>(a.numel()));
  std::memcpy(v.data(), a.bytes.data(), v.size() * sizeof(float));
  return v;
}

bool same_float(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

struct Exported {
  RunView run;
  AnalysisReport report;
  ExportResult result;
};

Exported export_config(const AttentionConfig& c, uint64_t seed, const std::filesystem::path& dir) {
  test::LaunchSpec spec;
  spec.config = c;
  spec.seed = seed;
  Exported e{test::launch_run(spec), {}, {}};
  e.report = analyze_run(e.run);
  e.result = export_run(e.run, e.report, dir);
  return e;
}

TEST(Export, GridPngsHaveTheValuesColoursNaNIncluded) {
  TS_SEEDED(seed);
  test::TempDir tmp;
  // FA-1 masked_nan: queries 0-59 are NaN at the first step; the rest finite.
  const Exported e = export_config(make_config(KernelKind::fa1, Fault::masked_nan, DType::f16, 64, 100, 40, true), seed,
                                   tmp.path());
  const ExportedFile* f = e.result.find("fa1_step_b0_h0.png");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->panels.size(), 1u);
  const ExportedPanel& p = f->panels[0];
  EXPECT_EQ(p.rows_per_cell, 1);
  const Image img = load_png(f->path);
  ASSERT_GT(img.w, 0);
  const ErrorGrid* g = e.report.grid(kFa1StepStage, 0, 0);
  ASSERT_NE(g, nullptr);
  int nan_cells = 0, finite_cells = 0;
  for (int64_t r = 0; r < g->grid.rows; ++r)
    for (int64_t c = 0; c < g->grid.cols; ++c) {
      const size_t at = static_cast<size_t>(r * g->grid.cols + c);
      const float v = g->grid.values[at];
      nan_cells += std::isnan(v);
      finite_cells += std::isfinite(v) && !g->grid.mask[at];
      EXPECT_EQ(cell_pixel(img, p, r, c), expected_colour(p, v, g->grid.mask[at]))
          << "query " << r << " column " << c << " value " << v;
    }
  EXPECT_EQ(nan_cells, 60);
  EXPECT_GT(finite_cells, 0);
  EXPECT_EQ(cell_pixel(img, p, 0, 0), special_color(CellClass::nan));
  EXPECT_NE(special_color(CellClass::nan), map_value(0.5f, p.colormap, p.layout.scale));

  // The first divergence: trace | reference | diff, NaN in the trace panel, the reference finite.
  const ExportedFile* fd = e.result.find("first_divergence.png");
  ASSERT_NE(fd, nullptr);
  ASSERT_EQ(fd->panels.size(), 3u);
  const Image three = load_png(fd->path);
  RunReference ref(e.run);
  ref.set_tolerance(e.report.tolerance);
  const EventComparison cmp = compare_event(e.run, ref, static_cast<size_t>(e.report.first_divergence.event_index));
  const FloatGrid* grids[] = {&cmp.o_norm_trace, &cmp.o_norm_reference, &cmp.o_norm_diff};
  for (size_t k = 0; k < 3; ++k)
    for (int64_t r : {int64_t{0}, int64_t{30}, int64_t{61}, int64_t{63}})
      for (int64_t c : {int64_t{0}, int64_t{17}, int64_t{63}}) {
        const float v = grids[k]->values[static_cast<size_t>(r * grids[k]->cols + c)];
        EXPECT_EQ(cell_pixel(three, fd->panels[k], r, c), expected_colour(fd->panels[k], v, 0))
            << "panel " << k << " row " << r << " col " << c;
      }
  EXPECT_EQ(cell_pixel(three, fd->panels[0], 0, 0), special_color(CellClass::nan));
  EXPECT_NE(cell_pixel(three, fd->panels[1], 0, 0), special_color(CellClass::nan));
}

// Every PNG reads on its own: the tolerance (ratio 1) is marked on the colour bar where the log
// scale puts it, and nothing runs off an edge (the outermost pixels are all background).
TEST(Export, PngsMarkTheToleranceAndCutNothing) {
  TS_SEEDED(seed);
  test::TempDir tmp;
  const Exported e = export_config(make_config(KernelKind::splitk, Fault::double_count_l, DType::f32, 64, 40, 500, false, 3),
                                   seed, tmp.path());
  const Rgba8 background{24, 25, 28, 255}, white{255, 255, 255, 255};
  int pngs = 0;
  for (const ExportedFile& f : e.result.files) {
    if (f.path.extension() != ".png") continue;
    ++pngs;
    const Image img = load_png(f.path);
    ASSERT_GT(img.w, 16) << f.path;
    for (int y = 0; y < img.h; ++y)
      for (int x = 0; x < 6; ++x) {
        ASSERT_EQ(img.at(x, y), background) << f.path << " left edge at y " << y;
        ASSERT_EQ(img.at(img.w - 1 - x, y), background) << f.path << " right edge at y " << y;
      }
    for (int x = 0; x < img.w; ++x)
      for (int y = 0; y < 6; ++y) {
        ASSERT_EQ(img.at(x, y), background) << f.path << " top edge at x " << x;
        ASSERT_EQ(img.at(x, img.h - 1 - y), background) << f.path << " bottom edge at x " << x;
      }
    if (f.path.filename() == "first_divergence.png") continue;
    // Ratio grids: the fixed tolerance scale, log from 1e-3 to 1e3 split at 1: the tolerance is the
    // middle of the bar.
    ASSERT_EQ(f.panels.size(), 1u) << f.path;
    const ExportedPanel& p = f.panels[0];
    ASSERT_NEAR(p.layout.scale.min, 1e-3, 1e-9) << f.path;
    ASSERT_NEAR(p.layout.scale.max, 1e3, 1e-3) << f.path;
    ASSERT_TRUE(p.layout.scale.split) << f.path;
    const double t = 0.5;
    const int bar_top = p.y_offset + p.layout.colorbar_y, x = p.x_offset + p.layout.colorbar_x + p.layout.colorbar_w / 2;
    const double want_y = bar_top + (1.0 - t) * p.layout.colorbar_h;
    std::vector<int> white_rows;
    for (int y = bar_top; y < bar_top + p.layout.colorbar_h; ++y)
      if (img.at(x, y) == white) white_rows.push_back(y);
    ASSERT_FALSE(white_rows.empty()) << f.path << ": no tolerance mark on the colour bar";
    EXPECT_LE(white_rows.size(), 4u) << f.path;
    EXPECT_NEAR((white_rows.front() + white_rows.back()) / 2.0, want_y, 2.5) << f.path;
  }
  EXPECT_GE(pngs, 5);  // overview, partial, reduce, final, first divergence
}

TEST(Export, NpyFilesHoldTheComparedArrays) {
  TS_SEEDED(seed);
  test::TempDir tmp;
  const Exported e = export_config(make_config(KernelKind::splitk, Fault::double_count_l, DType::f32, 64, 20, 500, true, 3),
                                   seed, tmp.path());
  // Grids: float32 [seq_q, key positions], a negative code where no event covers a cell (why).
  for (int32_t s : {kSplitkPartialStage, kSplitkReduceStage, kSplitkFinalStage}) {
    const std::string base = e.report.stage_name(s);
    std::string file = base;
    std::replace(file.begin(), file.end(), '.', '_');
    const NpyArray a = read_npy(tmp.path() / (file + "_b0_h0.npy"));
    const ErrorGrid* g = e.report.grid(s, 0, 0);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(a.type, ElemType::F32);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{g->grid.rows, g->grid.cols}));
    const std::vector<float> v = floats(a);
    for (size_t i = 0; i < v.size(); ++i)
      ASSERT_TRUE(same_float(v[i], g->grid.mask[i] ? absent_cell_npy_value(static_cast<AbsentCell>(g->grid.mask[i])) : g->grid.values[i])) << base << " cell " << i;
    const NpyArray q = read_npy(tmp.path() / ("error_by_query_" + file + "_b0_h0.npy"));
    EXPECT_EQ(q.shape, (std::vector<int64_t>{20}));
    const std::vector<float> by_query = e.report.error_by_query(s, 0, 0);
    const std::vector<float> qv = floats(q);
    for (size_t i = 0; i < qv.size(); ++i) EXPECT_TRUE(same_float(qv[i], by_query[i]));
  }
  // The first divergence's arrays equal compare_event's.
  RunReference ref(e.run);
  ref.set_tolerance(e.report.tolerance);
  const EventComparison cmp = compare_event(e.run, ref, static_cast<size_t>(e.report.first_divergence.event_index));
  const std::pair<const char*, const FloatGrid*> arrays[] = {{"o_norm_trace", &cmp.o_norm_trace},
                                                            {"o_norm_reference", &cmp.o_norm_reference},
                                                            {"o_norm_diff", &cmp.o_norm_diff},
                                                            {"o_trace", &cmp.o_trace},
                                                            {"o_reference", &cmp.o_reference},
                                                            {"o_diff", &cmp.o_diff}};
  for (const auto& [name, g] : arrays) {
    const NpyArray a = read_npy(tmp.path() / (std::string("first_divergence_") + name + ".npy"));
    EXPECT_EQ(a.shape, (std::vector<int64_t>{cmp.rows, cmp.head_dim})) << name;
    EXPECT_EQ(floats(a), g->values) << name;
  }
  const NpyArray ml = read_npy(tmp.path() / "first_divergence_m_l.npy");
  EXPECT_EQ(ml.shape, (std::vector<int64_t>{4, cmp.rows}));
  const std::vector<float> mlv = floats(ml);
  EXPECT_EQ(std::vector<float>(mlv.begin(), mlv.begin() + cmp.rows), cmp.m_trace);
  EXPECT_EQ(std::vector<float>(mlv.begin() + 3 * cmp.rows, mlv.end()), cmp.l_reference);

  // numpy reads them as they are (compared bit for bit: decimal forms of a float differ between
  // formatters in the last digit).
  int status = 0;
  const std::string py = shell("/usr/bin/python3 -c \"import numpy as np, json, sys; d=sys.argv[1]; "
                               "a=np.load(d+'/splitk_reduce_b0_h0.npy'); t=np.load(d+'/first_divergence_o_trace.npy'); "
                               "s=json.load(open(d+'/summary.json')); "
                               "print(a.dtype, a.shape, t.shape, int(a.max().view(np.uint32)), int(t[1,2].view(np.uint32)), s['verdict'])\" " +
                                   tmp.path().string(),
                               &status);
  ASSERT_EQ(status, 0) << py;
  const ErrorGrid* reduce = e.report.grid(kSplitkReduceStage, 0, 0);
  const float reduce_max = *std::max_element(reduce->grid.values.begin(), reduce->grid.values.end());
  char want[256];
  std::snprintf(want, sizeof want, "float32 (20, %d) (%d, 64) %u %u divergence\n", static_cast<int>(reduce->grid.cols), cmp.rows,
                static_cast<unsigned>(std::bit_cast<uint32_t>(reduce_max)),
                static_cast<unsigned>(std::bit_cast<uint32_t>(cmp.o_trace.values[66])));
  EXPECT_EQ(py, want);
}

TEST(Export, LongKvGridsArePooledByColumnAsTallGridsAreByRow) {
  // Was: a valid trace of seq_kv 1048640 (16385 kv tiles, a grid column each) failed with
  // "internal error ... heatmap needs an image over 16384 pixels".
  TS_SEEDED(seed);
  test::TempDir tmp;
  test::LaunchSpec spec;
  spec.config = make_config(KernelKind::fa1, Fault::none, DType::f16, 32, 1, 1048640, false);
  spec.seed = seed;
  spec.cpu_workers = 0;
  spec.filter.stage_mask = (uint64_t{1} << kFa1StepStage) | (uint64_t{1} << kFa1FinalStage);
  const RunView run = test::launch_run(spec);
  const AnalysisReport report = analyze_run(run);
  const ExportResult result = export_run(run, report, tmp.path());
  const ExportedFile* png = result.find("fa1_step_b0_h0.png");
  ASSERT_NE(png, nullptr);
  ASSERT_EQ(png->panels.size(), 1u);
  const ExportedPanel& panel = png->panels[0];
  EXPECT_EQ(panel.cols_per_cell, 5);  // 16385 kv tiles, at most 4096 columns drawn
  const Image img = load_png(tmp.path() / "fa1_step_b0_h0.png");
  EXPECT_GT(img.w, 4096 / 2);
  EXPECT_LE(img.w, 16384);
  // The .npy keeps every kv tile; the drawn cell is the worst of the tiles it pools.
  const NpyArray grid = read_npy(tmp.path() / "fa1_step_b0_h0.npy");
  ASSERT_EQ(grid.shape, (std::vector<int64_t>{1, 16385}));
  const std::vector<float> v = floats(grid);
  const float worst_of_first = *std::max_element(v.begin(), v.begin() + 5);
  EXPECT_EQ(cell_pixel(img, panel, 0, 0), expected_colour(panel, worst_of_first, 0));
}

TEST(Export, SummaryJsonMatchesTheReport) {
  TS_SEEDED(seed);
  test::TempDir tmp;
  const Exported e = export_config(make_config(KernelKind::splitk, Fault::empty_split, DType::bf16, 128, 19, 150, true, 5),
                                   seed, tmp.path());
  const nlohmann::json j = nlohmann::json::parse(read_text(tmp.path() / "summary.json"));
  const AnalysisReport& r = e.report;
  EXPECT_EQ(j["verdict"], "divergence");
  EXPECT_EQ(j["symptom"], r.symptom.line);
  EXPECT_EQ(j["symptom_kind"], "missing_partial");
  const auto& f = j["first_divergence"];
  EXPECT_EQ(f["stage"], "splitk.partial");
  EXPECT_EQ(f["q_begin"], r.first_divergence.header.q_begin);
  EXPECT_EQ(f["split"], r.first_divergence.header.split);
  EXPECT_EQ(f["missing"], true);
  EXPECT_EQ(j["missing_events"].size(), r.missing.size());
  for (const StageReport& s : r.stages) {
    if (!s.traced) continue;
    const auto& js = j["stages"][s.info.name];
    EXPECT_EQ(js["events"]["compared"], s.events_compared);
    EXPECT_EQ(js["events"]["failing"], s.events_failing);
    EXPECT_EQ(js["events"]["missing"], s.events_missing);
    EXPECT_EQ(js["non_finite"]["nan"], s.non_finite.nan);
  }
  // Every file listed exists, and every file written is listed (beside the export's own list of
  // its files, staged_folder.h); no temporary file is left.
  std::set<std::string> listed{kExportListName};
  for (const auto& file : j["files"]) {
    listed.insert(file["file"].get<std::string>());
    EXPECT_TRUE(std::filesystem::exists(tmp.path() / file["file"].get<std::string>())) << file["file"];
  }
  for (const auto& entry : std::filesystem::directory_iterator(tmp.path()))
    EXPECT_TRUE(listed.count(entry.path().filename().string())) << "unlisted file " << entry.path();
  EXPECT_EQ(listed.size(), e.result.files.size() + 1);
}

TEST(Export, UnwritableFolderIsAClearErrorAndLeavesNothing) {
  TS_SEEDED(seed);
  test::TempDir tmp;
  test::LaunchSpec spec;
  spec.config = make_config(KernelKind::fa1, Fault::none, DType::f32, 64, 64, 64, false);
  spec.seed = seed;
  const RunView run = test::launch_run(spec);
  const AnalysisReport r = analyze_run(run);
  std::ofstream(tmp.path() / "a_file") << "x";
  try {
    export_run(run, r, tmp.path() / "a_file" / "out");
    FAIL() << "expected FileWriteError";
  } catch (const FileWriteError& e) {
    EXPECT_NE(std::string(e.what()).find("a_file"), std::string::npos) << e.what();
  }
  std::filesystem::create_directories(tmp.path() / "ro");
  std::filesystem::permissions(tmp.path() / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  if (::access((tmp.path() / "ro").c_str(), W_OK) != 0) {  // root can write anywhere
    EXPECT_THROW(export_run(run, r, tmp.path() / "ro"), FileWriteError);
    EXPECT_TRUE(std::filesystem::is_empty(tmp.path() / "ro"));
  }
  std::filesystem::permissions(tmp.path() / "ro", std::filesystem::perms::owner_all);
  // A report of another run is refused.
  AnalysisReport other = r;
  other.events.pop_back();
  EXPECT_THROW(export_run(run, other, tmp.path() / "x"), AnalysisError);
}

TEST(Export, ABWritesBothRunsAndTheirComparison) {
  TS_SEEDED(seed);
  test::TempDir tmp;
  AttentionConfig c = make_config(KernelKind::fa1, Fault::stale_accumulator, DType::f32, 32, 64, 200, false);
  test::LaunchSpec spec;
  spec.config = c;
  spec.seed = seed;
  const RunView a = test::launch_run(spec);
  spec.config.fault = Fault::none;
  const RunView b = test::launch_run(spec);
  const ABReport r = compare_runs(a, b);
  const ExportResult res = export_ab(a, b, r, tmp.path());
  const nlohmann::json j = nlohmann::json::parse(read_text(tmp.path() / "summary.json"));
  EXPECT_EQ(j["verdict"], "divergence");
  EXPECT_EQ(j["first_difference"]["stage"], "fa1.step");
  EXPECT_EQ(j["first_difference"]["step"], 1);
  EXPECT_EQ(j["first_difference"]["keys"], nlohmann::json::parse("[[0, 128]]")) << "the second kv tile of 64 keys";
  EXPECT_EQ(j["a"]["symptom_kind"], "stale_state");
  EXPECT_EQ(j["b"]["verdict"], "clean");
  EXPECT_TRUE(std::filesystem::exists(tmp.path() / "a" / "first_divergence.png"));
  EXPECT_TRUE(std::filesystem::exists(tmp.path() / "b" / "summary.json"));
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "b" / "first_divergence.png")) << "B has no divergence";
  for (const auto& f : j["files"]) EXPECT_TRUE(std::filesystem::exists(tmp.path() / f["file"].get<std::string>()));
}

}  // namespace
}  // namespace ts
