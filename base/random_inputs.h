// Seeded random Q, K, V for a config, reproducible on every machine: each element is a pure
// function of (seed, tensor, index) through a counter-based generator of our own (the C++
// library's distributions differ between implementations), so a trace that records the seed
// can be re-created anywhere, and generation runs in parallel.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/attention_inputs.h"

namespace ts {

enum class InputDistribution : int32_t {
  normal = 0,   // N(0, 1) * scale
  uniform = 1,  // U[-1, 1) * scale
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

// Inputs in config.dtype (each value rounded to it). Throws ConfigError for an invalid config
// or a scale that is not finite and > 0.
AttentionInputs make_random_inputs(const AttentionConfig& config, const RandomInputSpec& spec);

std::string_view to_string(InputDistribution d);
std::string_view to_string(InputPreset p);
std::optional<InputDistribution> distribution_from_name(std::string_view name);  // normal, uniform
std::optional<InputPreset> preset_from_name(std::string_view name);  // none, large_logits, all_equal_scores

}  // namespace ts
