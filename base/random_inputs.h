// Seeded random Q, K, V, reproducible anywhere: each element is a pure function of (seed,
// tensor, index in the full tensor) through a counter-based generator of our own, written with
// integer operations and correctly rounded float32 arithmetic only (no library exp, log or
// cos, whose last bits differ between libraries). So a trace that records the generator's spec
// instead of the inputs can re-make them bit for bit, in tilescope or in numpy
// (docs/trace-format.md, "Inputs re-made from their seed", gives the algorithm;
// tests/trace/random_inputs_numpy.py implements it and the tests compare); any part of a
// tensor can be made alone (the traced heads of a trace), and generation runs in parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "base/attention_inputs.h"
#include "base/attention_spec.h"
#include "base/head_inputs.h"

namespace ts {

// The generator's name as traces record it. Any change to any value it makes needs a new name,
// so that a trace re-made by another build is refused rather than silently different.
inline constexpr std::string_view kRandomInputsGenerator = "tilescope-counter-1";

enum class InputDistribution : int32_t {
  normal = 0,   // N(0, 1) * scale (Box-Muller; |x| < 5.8 * scale)
  uniform = 1,  // U(-1, 1) * scale
};

enum class InputPreset : int32_t {
  none = 0,
  large_logits = 1,      // Q and K 4x larger: scaled scores of std ~16 x scale^2 (max subtraction matters)
  all_equal_scores = 2,  // every key of a (batch, head) equals its first: all scores of a query tie
};

struct RandomInputSpec {
  uint64_t seed = 0;
  InputDistribution distribution = InputDistribution::normal;
  double scale = 1.0;
  InputPreset preset = InputPreset::none;
};

// Which input a value belongs to (the generator's stream number).
enum class InputTensor : int32_t { q = 0, k = 1, v = 2 };

// Called from the generating threads with the number of elements just made (thread-safe sums
// are the caller's).
using GenerationProgress = std::function<void(int64_t elements)>;

// Inputs in config.dtype (each value made in float32, then rounded to the dtype). Throws
// ConfigError for an invalid config or a scale that is not finite and > 0. `workers`: threads,
// 0 = every core.
AttentionInputs make_random_inputs(const AttentionConfig& config, const RandomInputSpec& spec,
                                   unsigned workers = 0, const GenerationProgress& progress = {});

// The same values for the given (batch, query head) and (batch, kv head) pairs only, as a
// trace stores them ([pairs, seq, head_dim] in attention.dtype): the full tensors are
// [batch, heads_q, seq_q, head_dim] for q and [batch, heads_kv, seq_kv, head_dim] for k and v.
// For a config, equal to the slices of make_random_inputs(config, spec). Throws ConfigError for
// an invalid attention or scale, std::invalid_argument for a pair outside the attention.
HeadInputs make_random_head_inputs(const AttentionSpec& attention, const RandomInputSpec& spec,
                                   std::vector<std::array<int32_t, 2>> q_pairs,
                                   std::vector<std::array<int32_t, 2>> kv_pairs, unsigned workers = 0,
                                   const GenerationProgress& progress = {});

// Where make_random_head_inputs hands each tensor's bytes as they are made: `which`'s bytes in
// order, one piece after the other (every byte once, as inputs.q/k/v hold them), each piece
// while it is still in the cache of the thread that made it. Called from the generating threads,
// never twice at once for one tensor (different tensors may be handed at once).
using InputBytesSink = std::function<void(InputTensor which, std::span<const std::byte> bytes)>;

// The same, handing the bytes to `sink` as they are made (a hash of each tensor taken as it is
// generated, not in a second pass over a GiB).
HeadInputs make_random_head_inputs(const AttentionSpec& attention, const RandomInputSpec& spec,
                                   std::vector<std::array<int32_t, 2>> q_pairs,
                                   std::vector<std::array<int32_t, 2>> kv_pairs, unsigned workers,
                                   const GenerationProgress& progress, const InputBytesSink& sink);

// Elements [first, first + count) of tensor `which`, as float32 before rounding to a dtype, for
// rows of `head_dim` values and key sequences of `seq_kv` rows (the all_equal_scores preset
// repeats the first key row of each (batch, head)). The building block of the two above.
void random_input_values(const RandomInputSpec& spec, InputTensor which, int64_t head_dim, int64_t seq_kv,
                         int64_t first, int64_t count, float* out);

// Throws ConfigError when the scale is not finite and > 0.
void check_random_spec(const RandomInputSpec& spec);

std::string_view to_string(InputDistribution d);
std::string_view to_string(InputPreset p);
std::optional<InputDistribution> distribution_from_name(std::string_view name);  // normal, uniform
std::optional<InputPreset> preset_from_name(std::string_view name);  // none, large_logits, all_equal_scores

}  // namespace ts
