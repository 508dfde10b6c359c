// Helpers of the capture, trace session and CLI tests: configs drawn from a seed, the command-line arguments
// that ask for a config, and event-by-event comparison of runs.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "app/model/run_view.h"
#include "base/attention_config.h"
#include "base/attention_inputs.h"
#include "kernels/launcher.h"

namespace ts::test {

// A small config (fast on 2 cores, also under ASan): kernel, an applicable fault (or none when
// `with_fault` is false), sizes, kv heads, dtype, causal, window, softcap, splits and scale drawn
// from `rng`.
AttentionConfig random_small_config(std::mt19937_64& rng, bool with_fault);

// --kernel ... --scale ... for `c` (without backend, inputs or output).
std::vector<std::string> config_args(const AttentionConfig& c);
// "capture" followed by config_args(c).
std::vector<std::string> capture_args(const AttentionConfig& c);

// Same coordinates (stage, batch, head, q_tile, kv range, split, step, rows, convention,
// block) and bit-identical payload rows. Returns "" or what differs.
std::string event_difference(const RunView& a, size_t i, const RunView& b, size_t j);

// Every event of `a` and `b` (same count, same order) by event_difference; "" when equal.
std::string run_events_difference(const RunView& a, const RunView& b);

// A RunView of an in-process launch (no filter: every pair's inputs).
RunView launch_view(const LaunchRequest& request, const AttentionInputs& inputs);

bool same_bytes(const HostTensor& a, const HostTensor& b);

}  // namespace ts::test
