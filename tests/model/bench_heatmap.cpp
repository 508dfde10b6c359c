// CPU side of heatmaps: colour mapping, autofit and PNG export of large arrays.
//   cmake --preset release -B build/release && cmake --build build/release --target bench_heatmap
//   build/release/tests/model/bench_heatmap
#include <benchmark/benchmark.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "app/model/colormap.h"
#include "app/model/heatmap_png.h"
#include "app/model/png_file.h"

namespace ts {
namespace {

std::vector<float> random_values(size_t n, bool with_nan) {
  std::mt19937_64 rng(12345);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  if (with_nan)
    for (size_t i = 0; i < n; i += 997) v[i] = std::numeric_limits<float>::quiet_NaN();
  return v;
}

void BM_MapValues(benchmark::State& state) {
  const bool log = state.range(0) != 0;
  const std::vector<float> v = random_values(1 << 20, true);
  const ColorMapper mapper(ColormapId::ember, {log ? 1e-3f : -4.0f, 4.0f, log, 1e-6f, false});
  std::vector<Rgba8> out(v.size());
  for (auto _ : state) {
    for (size_t i = 0; i < v.size(); ++i) out[i] = mapper(v[i]);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * v.size()));
  state.SetLabel(log ? "log" : "linear");
}
BENCHMARK(BM_MapValues)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_Autofit(benchmark::State& state) {
  const std::vector<float> v = random_values(1 << 20, true);
  for (auto _ : state) benchmark::DoNotOptimize(autofit(v));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * v.size()));
}
BENCHMARK(BM_Autofit)->Unit(benchmark::kMillisecond);

// 8192 query rows x 128 head-dim columns (the large trace), and a 64 x 64 tile.
void BM_RenderHeatmapImage(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const std::vector<float> v = random_values(static_cast<size_t>(rows * cols), true);
  HeatmapPngOptions opt;
  opt.title = "bench";
  for (auto _ : state) benchmark::DoNotOptimize(render_heatmap_image({v, rows, cols}, opt));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * v.size()));
}
BENCHMARK(BM_RenderHeatmapImage)->Args({8192, 128})->Args({64, 64})->Unit(benchmark::kMillisecond);

void BM_EncodePng(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const std::vector<float> v = random_values(static_cast<size_t>(rows * cols), true);
  const RgbaImage img = render_heatmap_image({v, rows, cols}, {});
  for (auto _ : state) benchmark::DoNotOptimize(encode_png(img));
  state.counters["pixels"] = static_cast<double>(img.pixels.size());
}
BENCHMARK(BM_EncodePng)->Args({8192, 128})->Args({64, 64})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ts

BENCHMARK_MAIN();
