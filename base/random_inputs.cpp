#include "base/random_inputs.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <thread>
#include <vector>

namespace ts {
namespace {

// SplitMix64's finaliser: a bijective 64-bit mix, good enough to turn counters into bits.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1): 53 random bits, never 0 (Box-Muller takes its log).
double unit_open(uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; }

double draw(uint64_t seed, uint64_t stream, uint64_t index, InputDistribution dist) {
  const uint64_t base = mix64(seed ^ mix64(stream + 0x632be59bd9b4e019ull));
  const uint64_t a = mix64(base + 2 * index);
  if (dist == InputDistribution::uniform) return 2.0 * unit_open(a) - 1.0;
  const uint64_t b = mix64(base + 2 * index + 1);
  return std::sqrt(-2.0 * std::log(unit_open(a))) * std::cos(2.0 * std::numbers::pi * unit_open(b));
}

// Fills tensor `stream` of the inputs; element i of [batch, heads, seq, head_dim] (K and V: kv
// heads) is drawn at counter i, or at the counter of `source_row_of(i)` for presets that repeat
// rows.
template <typename RowMap>
void fill(HostTensor& t, uint64_t seed, uint64_t stream, const RandomInputSpec& spec, double factor,
          RowMap&& source_index) {
  const int64_t n = t.numel();
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int64_t chunk = std::max<int64_t>(int64_t{1} << 16, (n + hw - 1) / hw);
  std::vector<std::thread> workers;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t end = std::min(n, begin + chunk);
    workers.emplace_back([&, begin, end] {
      for (int64_t i = begin; i < end; ++i)
        t.set_float(i, static_cast<float>(
                           draw(seed, stream, static_cast<uint64_t>(source_index(i)),
                                spec.distribution) *
                           spec.scale * factor));
    });
  }
  for (auto& w : workers) w.join();
}

}  // namespace

AttentionInputs make_random_inputs(const AttentionConfig& config, const RandomInputSpec& spec) {
  validate(config);
  if (!std::isfinite(spec.scale) || spec.scale <= 0.0)
    throw ConfigError("scale", "the random inputs' scale must be finite and > 0 (got " +
                                   std::to_string(spec.scale) + ")");
  AttentionInputs in;
  in.q = HostTensor::zeros(config.dtype, {config.batch, config.heads, config.seq_q, config.head_dim});
  in.k = HostTensor::zeros(config.dtype, {config.batch, config.kv_heads(), config.seq_kv, config.head_dim});
  in.v = HostTensor::zeros(config.dtype, {config.batch, config.kv_heads(), config.seq_kv, config.head_dim});
  const double qk_factor = spec.preset == InputPreset::large_logits ? 4.0 : 1.0;
  auto same = [](int64_t i) { return i; };
  fill(in.q, spec.seed, 0, spec, qk_factor, same);
  if (spec.preset == InputPreset::all_equal_scores) {
    // Every key row of a (batch, kv head) is a copy of its first row.
    const int64_t row = config.head_dim, per_head = config.seq_kv * config.head_dim;
    fill(in.k, spec.seed, 1, spec, qk_factor,
         [=](int64_t i) { return (i / per_head) * per_head + i % row; });
  } else {
    fill(in.k, spec.seed, 1, spec, qk_factor, same);
  }
  fill(in.v, spec.seed, 2, spec, 1.0, same);
  return in;
}

std::string_view to_string(InputDistribution d) {
  return d == InputDistribution::uniform ? "uniform" : "normal";
}

std::string_view to_string(InputPreset p) {
  switch (p) {
    case InputPreset::none: return "none";
    case InputPreset::large_logits: return "large_logits";
    case InputPreset::all_equal_scores: return "all_equal_scores";
  }
  return "?";
}

std::optional<InputDistribution> distribution_from_name(std::string_view name) {
  if (name == "normal") return InputDistribution::normal;
  if (name == "uniform") return InputDistribution::uniform;
  return std::nullopt;
}

std::optional<InputPreset> preset_from_name(std::string_view name) {
  for (InputPreset p : {InputPreset::none, InputPreset::large_logits, InputPreset::all_equal_scores})
    if (to_string(p) == name) return p;
  return std::nullopt;
}

}  // namespace ts
