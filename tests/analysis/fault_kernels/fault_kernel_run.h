// Runs the test kernels of this folder (one_pass_kernel.cuh, split_kernels.cuh) on the CPU
// through the SIMT runtime with seeded random inputs, records their events through the public
// probe API into host TraceView buffers, and builds the RunView a user's own recorder would: the
// attention description, the kernel's stage table, the events, and the inputs of every head.
// Nothing in the run names the kernel or its fault.
#pragma once

#include <cstdint>
#include <vector>

#include "app/model/run_view.h"
#include "base/attention_spec.h"
#include "tests/analysis/fault_kernels/fault_kernel_params.h"
#include "tests/analysis/fault_kernels/fault_variants.h"

namespace ts::test {

struct FaultKernelRun {
  TestFault fault = TestFault::none;
  KernelShape shape = KernelShape::one_pass;
  // batch, heads_q, heads_kv, seq_q, seq_kv, head_dim (<= 128), dtype, scale, causal (any
  // alignment), softcap, ALiBi (the one-pass kernel); no window or per-batch lengths.
  AttentionSpec attention;
  int splits = 2;        // split kernels
  int block_m = 16;      // query rows per block (threads)
  int block_n = 32;      // keys per kv tile (<= 64)
  // The one-pass kernel's P before P V (fault_kernel_params.h); other than none, its step stage
  // declares p_rounded.
  PRounding p_rounding = PRounding::none;
  uint64_t seed = 1;
  int cpu_workers = 2;
};

// Throws std::runtime_error when the launch fails or the run asks what the kernels cannot do.
RunView run_fault_kernel(const FaultKernelRun& run);

// The kv tiles of the run and, for the split kernels, the keys [begin, end) of split s.
int num_kv_tiles(const FaultKernelRun& run);
int tiles_per_split(const FaultKernelRun& run);
std::pair<int64_t, int64_t> split_keys(const FaultKernelRun& run, int split);

}  // namespace ts::test
