// Shared by the kernel tests (CPU and GPU programs): running a config on a backend with seeded
// random inputs, and the comparisons against the float64 reference, including the
// correctness rule of flash-attention's tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/launcher.h"
#include "kernels/naive_attention.h"
#include "base/random_inputs.h"
#include "kernels/reference.h"

namespace ts::test {

// The backend the test program checks: defined by backend_cpu.cpp (test_kernels_cpu) or
// backend_gpu.cpp (test_kernels_gpu), so that the same test bodies run on both.
Backend backend_under_test();
inline bool testing_cpu() { return backend_under_test() == Backend::cpu; }

// Largest |a - b| over the elements; NaN anywhere (in a) makes it +inf, so NaN never passes.
// Elements where both are -inf (LSE of rows that see no key) count as equal.
double max_abs_error(const std::vector<double>& a, const std::vector<double>& b);
std::vector<double> to_double(const std::vector<float>& v);

// The correctness rule: kernel error <= 2 * naive error + floor, for O and for LSE.
struct RuleCheck {
  double o_error = 0, o_naive = 0, lse_error = 0, lse_naive = 0;
  double floor = 0;
  bool passes() const;
  std::string describe() const;
};
double rule_floor(DType dtype);
RuleCheck check_rule(const AttentionConfig& config, const AttentionInputs& inputs,
                     const LaunchOutcome& out, const Reference::Output& ref);

std::string describe(const AttentionConfig& config);

// Per-query-row error of O (max over the row's columns) against the reference output.
std::vector<double> row_errors(const AttentionConfig& config, const HostTensor& o,
                               const Reference::Output& ref);

// Max error of an event's payload against the reference over its valid rows, for m, l and O
// separately: |got - expected| / max(1, |expected|) (unnormalised l and O grow with the keys);
// NaN is +inf, both -inf counts as equal.
struct EventError {
  double m = 0, l = 0, o = 0;
  double max() const;
};
EventError event_error(const CapturedEvents& events, size_t index, const Reference& ref);

// Launch with fresh seeded inputs on a backend, deterministic CPU schedule.
struct Run {
  AttentionInputs inputs;
  LaunchOutcome out;
};
Run run_config(const AttentionConfig& config, Backend backend, uint64_t seed, bool trace = false,
               int cpu_workers = 1);

}  // namespace ts::test
