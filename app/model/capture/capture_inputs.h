// The inputs of a capture: Q, K, V generated from a seed or read from files and checked
// against the config, with their provenance for the trace's metadata; and the slice of them
// a trace keeps (the (batch, head) pairs its filter traces).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "app/model/capture/capture_spec.h"
#include "instrumentation/trace/trace_file.h"
#include "base/attention_inputs.h"

namespace ts {

struct LoadedInputs {
  AttentionInputs tensors;
  // trace_meta::inputs_seed and capture_meta::inputs_distribution/scale/preset for generated
  // inputs; trace_meta::inputs_files and inputs_sha256 (JSON lists, same order) for files.
  std::map<std::string, std::string> provenance;
};

// Generates or loads the inputs and checks them against `config`. Files: one or three
// (check_capture says so to the person; std::invalid_argument here). Throws ConfigError (invalid
// config or random spec), FileError subclasses (missing, unreadable or damaged file, unusable
// dtype or tensor name; the message names the file) or InputError (shape, dtype or NaN/Inf;
// the message names the file and tensor). `progress`: elements generated (random inputs only;
// from the generating threads).
LoadedInputs load_capture_inputs(const AttentionConfig& config, const InputSource& source,
                                 const GenerationProgress& progress = {});

// The (batch, head) pairs a filter keeps within the config's sizes, batch-major.
std::vector<std::array<int32_t, 2>> traced_pairs(const AttentionConfig& config,
                                                 const TraceFilter& filter);

// Those pairs and their kv heads' pairs (each once, in order of first use), without tensors.
HeadInputs traced_head_pairs(const AttentionConfig& config, const TraceFilter& filter);

// Q of those pairs and K, V of their kv heads (each once), copied out of the full inputs
// ([P, seq, head_dim] each).
HeadInputs traced_head_inputs(const AttentionConfig& config, const AttentionInputs& inputs,
                              const TraceFilter& filter);
// The same, taking the full tensors instead of copying them when the filter keeps every pair
// (then the slices are the tensors; a decode capture's inputs are a GiB).
HeadInputs traced_head_inputs(const AttentionConfig& config, AttentionInputs&& inputs, const TraceFilter& filter);

}  // namespace ts
