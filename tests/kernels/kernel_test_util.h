// Shared by the kernel tests (CPU and GPU programs): running a config on a backend with seeded
// random inputs, the comparisons against the float64 reference (kernels/reference.h: the
// output, and any event's state over its own key ranges), the correctness rule of flash-
// attention's tests, and the launch plan's slots seen from the slot table alone.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/random_inputs.h"
#include "kernels/launch_plan.h"
#include "kernels/launcher.h"
#include "kernels/naive_attention.h"
#include "kernels/reference.h"
#include "tests/support/test_seed.h"

namespace ts::test {

// The backend the test program checks: defined by backend_cpu.cpp (test_kernels_cpu) or
// backend_gpu.cpp (test_kernels_gpu), so that the same test bodies run on both.
Backend backend_under_test();
inline bool testing_cpu() { return backend_under_test() == Backend::cpu; }

// The inputs seed of one case: the test's fresh seed (TS_SEEDED; TILESCOPE_TEST_SEED replays
// it) mixed with a salt per case, so that the cases of one test draw different inputs.
uint64_t case_seed(uint64_t test_seed, uint64_t salt);

// Largest |a - b| over the elements; NaN anywhere makes it +inf, so NaN never passes.
// Elements where both are -inf (LSE of rows that see no key) count as equal.
double max_abs_error(const std::vector<double>& a, const std::vector<double>& b);
std::vector<double> to_double(const std::vector<float>& v);

// A config's inputs (q [batch, heads, seq_q, head_dim], k and v [batch, heads_kv, seq_kv,
// head_dim]) as the reference reads them: every (batch, query head) and (batch, kv head) pair.
HeadInputs head_inputs(const AttentionConfig& config, const AttentionInputs& inputs);
// The float64 output of a config's attention on these inputs.
ReferenceOutput reference_of(const AttentionConfig& config, const AttentionInputs& inputs);

// The correctness rule: kernel error <= 2 * naive error + floor, for O and for LSE.
struct RuleCheck {
  double o_error = 0, o_naive = 0, lse_error = 0, lse_naive = 0;
  double floor = 0;
  bool passes() const;
  std::string describe() const;
};
double rule_floor(DType dtype);
RuleCheck check_rule(const AttentionConfig& config, const AttentionInputs& inputs,
                     const LaunchOutcome& out, const ReferenceOutput& ref);

std::string describe(const AttentionConfig& config);

// Per-query-row error of O (max over the row's columns) against the reference output.
std::vector<double> row_errors(const AttentionConfig& config, const HostTensor& o,
                               const ReferenceOutput& ref);

// The reference of a run's events: each event's (batch, head, query rows) is a row block,
// computed once with the key-range ends of all its events as boundaries; an event's expected
// payload is its row block's state over the event's own key ranges (stage kinds state and
// merge) or the rows' output (kind final), expressed in the event's convention.
class EventReference {
 public:
  EventReference(const AttentionConfig& config, const AttentionInputs& inputs,
                 const CapturedEvents& events);
  RefState expected(const EventHeader& h) const;
  const RowBlockReference& row_block(const RowBlock& block) const;
  const AttentionSpec& spec() const { return inputs_.spec(); }

 private:
  ReferenceInputs inputs_;
  std::vector<StageInfo> stages_;
  std::map<RowBlock, std::vector<int64_t>> boundaries_;
  mutable std::map<RowBlock, std::shared_ptr<const RowBlockReference>> blocks_;
};

// Max error of an event's payload against the reference over its rows, for m, l and O
// separately: |got - expected| / max(1, |expected|) (unnormalised l and O grow with the keys);
// NaN is +inf, both -inf counts as equal; a channel the event's convention does not record (l
// of a normalised state, m with kNoMax) counts 0.
struct EventError {
  double m = 0, l = 0, o = 0;
  double max() const;
};
EventError event_error(const CapturedEvents& events, size_t index, const EventReference& ref);

// The error a kernel's float32 state may have against the float64 reference (relative, as
// event_error measures it), and the final output's, which is rounded to the inputs' dtype as
// written (two units in the last place of an O(1) value).
inline constexpr double kStateTolerance = 2e-5;
double final_tolerance(DType dtype);

// Launch with fresh seeded inputs on a backend (CPU: `cpu_workers` workers; 1 is a
// deterministic schedule).
struct RunOptions {
  bool trace = false;
  int cpu_workers = 1;
  std::optional<bool> tile_events = std::nullopt;  // Split-K: nullopt = by size
  TraceFilter filter{};
  int64_t capacity_events = int64_t{1} << 20;
};
struct Run {
  AttentionInputs inputs;
  LaunchOutcome out;
};
Run run_config(const AttentionConfig& config, Backend backend, uint64_t seed, const RunOptions& options);
Run run_config(const AttentionConfig& config, Backend backend, uint64_t seed, bool trace = false,
               int cpu_workers = 1);

// The plan a finished run was launched with (its config has the splits resolved, so any SM
// count gives the same tiling), for the trace request of `options`.
LaunchPlan plan_of(const LaunchOutcome& out, const RunOptions& options);

// What the plan's slot table says slot s holds: the kernel and block that write it, the stage
// and the event's index among the block's events of that stage. Derived from the slot table
// alone (every (block, stage) owns the slots from its base to the next base in slot order),
// not from the planner's own enumeration, so that a test can hold the planner to it.
struct SlotOwner {
  const PlannedKernel* kernel = nullptr;
  uint64_t block = 0;
  int32_t stage = -1;
  int32_t index = 0;
};
std::vector<SlotOwner> slot_owners(const LaunchPlan& plan);

// Whether two headers say the same event: every field but `where` and `time_ns` (which say
// where and when it ran), and key ranges past num_key_ranges.
bool same_identity(const EventHeader& a, const EventHeader& b);
std::string describe(const EventHeader& h);

}  // namespace ts::test
