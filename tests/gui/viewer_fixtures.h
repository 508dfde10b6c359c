// Runs for the viewer's model and screenshot tests, captured at test time on the CPU backend
// (small sizes: seconds, also under ASan) with inputs drawn from the test's seed.
#pragma once

#include <cstdint>
#include <filesystem>

#include "app/model/run_view.h"
#include "app/model/viewer/loaded_run.h"
#include "base/attention_config.h"

namespace ts::testing {

// Split-K, 2 heads, 16 queries x 512 keys, head dim 64, 4 splits, fp32: 2 query tiles, 4 kv
// tiles (one per split). With double_count_l the partials are right and the reduce is not.
AttentionConfig splitk_small(Fault fault);
// Split-K, causal, 1 head, 64 queries x 64... sized so that early query tiles see no key of the
// later splits: with masked_nan those partials hold NaN.
AttentionConfig splitk_causal_masked(Fault fault);
// FA-1, 1 head, 80 queries x 200 keys, head dim 32 (2 query tiles, 4 kv tiles).
AttentionConfig fa1_small(Fault fault);

CaptureSpec cpu_spec(const AttentionConfig& config, uint64_t seed);
// Captures and analyses `config` on the CPU backend (optionally saving the trace).
LoadedRun capture_cpu(const AttentionConfig& config, uint64_t seed,
                      const std::optional<std::filesystem::path>& save_to = std::nullopt);

// A/B pair on the same inputs: Split-K with double_count_l (A) and the fixed kernel (B), saved
// as dir/faulty.trace.safetensors and dir/fixed.trace.safetensors and opened again from there;
// A's first divergence and B's event with the same key (what the A/B panel shows first).
struct FaultAndFix {
  std::filesystem::path faulty, fixed;
  RunView a, b;
  size_t first = 0;       // event index in A
  size_t first_in_b = 0;  // event index in B
};
FaultAndFix capture_fault_and_fix(const std::filesystem::path& dir, uint64_t seed);

}  // namespace ts::testing
