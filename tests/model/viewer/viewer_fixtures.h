// Runs for the viewer's model and screenshot tests: runs of our kernels captured at test time on
// the CPU backend (small sizes: seconds, also under ASan) with inputs drawn from the test's seed,
// and a user's trace written by the test itself with write_trace, under a stage table of its own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "app/model/run_view.h"
#include "app/model/viewer/loaded_run.h"
#include "base/attention_config.h"

namespace ts::test {

// Split-K, 2 heads, 16 queries x 512 keys, head dim 64, 4 splits, fp32: 2 query tiles, 4 kv
// tiles (one per split); small enough for splitk.tile events by default. With double_count_l
// the partials are right and the reduce is not.
AttentionConfig splitk_small(Fault fault);
// Split-K, causal, 1 head, 64 queries x 64... sized so that early query tiles see no key of the
// later splits: with masked_nan those partials hold NaN.
AttentionConfig splitk_causal_masked(Fault fault);
// Split-K decode with GQA: 2 batches, 8 query heads on 2 kv heads (heads 4k..4k+3 share kv head
// k), 1 query row x 1024 keys, head dim 64, 4 splits, fp32: the decode overview's case.
AttentionConfig splitk_decode_gqa(Fault fault);
// FA-1, 1 head, 80 queries x 200 keys, head dim 32 (2 query tiles, 4 kv tiles).
AttentionConfig fa1_small(Fault fault);

CaptureSpec cpu_spec(const AttentionConfig& config, uint64_t seed);
// Captures and analyses `config` on the CPU backend (optionally saving the trace).
LoadedRun capture_cpu(const AttentionConfig& config, uint64_t seed,
                      const std::optional<std::filesystem::path>& save_to = std::nullopt);
LoadedRun capture_cpu(const CaptureSpec& spec, const std::optional<std::filesystem::path>& save_to = std::nullopt);

// A user's trace, as a recorder of its own would write it (write_trace, no config of our
// kernels): stages it names itself — 0 "my_partial" (state, pass 0), 1 "merge" (merge, pass 1),
// 2 "epilogue" (final, pass 1); 2 query heads on 1 kv head; 40 queries in row blocks of 16, 16
// and 8 rows; 300 keys split unevenly into [0, 70), [70, 200), [200, 300). Per (head, row block)
// a partial per split (block (head * 3 + row block) * 3 + split), then in block head * 3 + row
// block the merge after each split (steps 0-2, keys [0, split end)) and the epilogue (step 3).
// Partials are unnormalised, natural log; merges and epilogue normalised with a base-2 LSE. The
// payloads are the float64 reference in each event's convention, except the merge of head 1, row
// block 1 after split 1, whose O is 1.5 times too large: the run's first divergence. Events are
// written per (head, row block), partials, merges, epilogue: not the kernel's order.
struct UserStageTrace {
  std::filesystem::path path;
  AttentionSpec attention;
  std::vector<StageInfo> stages;
  std::vector<EventHeader> headers;  // as written
  size_t wrong_merge = 0;            // index of the corrupted merge event
  // The index of the event with this identity (split -1 for the epilogue).
  size_t index_of(int32_t stage, int32_t head, int32_t q_begin, int32_t split) const;
};
inline constexpr int32_t kUserPartial = 0, kUserMerge = 1, kUserEpilogue = 2;
inline constexpr int64_t kUserSplitEnds[] = {70, 200, 300};
inline constexpr int32_t kUserRowBlocks[][2] = {{0, 16}, {16, 16}, {32, 8}};  // q_begin, rows
UserStageTrace write_user_stage_trace(const std::filesystem::path& path, uint64_t seed);

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

}  // namespace ts::test
