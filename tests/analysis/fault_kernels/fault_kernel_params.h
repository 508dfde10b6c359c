// What the test kernels of this folder see: one plain struct for both kernel shapes, filled by
// fault_kernel_run.cpp. Tensors are [batch, heads, seq, head_dim] row-major in the input dtype;
// the split kernels' partial buffers are float32 [batch, heads_q, seq_q, splits] (m, l) and
// [..., head_dim] (O).
#pragma once

#include "tilescope/trace_view.h"

namespace ts::test {

// The stage tables the test kernels declare (their names are the kernels' own; the analysis
// knows stages by kind only).
enum OnePassStage : int { kOnePassStep = 0, kOnePassOut = 1 };
enum SplitStage : int { kSplitTile = 0, kSplitPartial = 1, kSplitMerge = 2, kSplitOut = 3 };

// Compile-time bounds of the test kernels' register and shared-memory arrays.
inline constexpr int kFaultKernelMaxD = 128;
inline constexpr int kFaultKernelMaxBlockN = 64;

// How the one-pass kernel weights V, as a tensor-core kernel does (its mma takes P in the input
// dtype): P as computed (float32), or P rounded to the input dtype before P V with the row sum l
// taken before the rounding (FlashAttention-2) or after it (the weights P V actually used). Each is
// a correct kernel.
enum class PRounding : int { none = 0, sum_before = 1, sum_after = 2 };

struct FaultKernelParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;      // output, input dtype
  float* lse = nullptr;   // [batch, heads_q, seq_q]
  float* part_m = nullptr;
  float* part_l = nullptr;
  float* part_o = nullptr;
  int batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_kv = 1, head_dim = 64;
  float scale = 1.0f;
  float softcap = 0.0f;   // 0: none
  const float* alibi_slopes = nullptr;  // per query head; nullptr: no ALiBi (one-pass kernel only)
  int causal = 0;         // 0 none, 1 bottom-right, 2 top-left (AttentionSpec's CausalAlign)
  int block_m = 16, block_n = 32;
  int num_kv_tiles = 1;
  int num_splits = 1, tiles_per_split = 1;
  int fault = 0;          // TestFault
  int p_rounding = 0;     // PRounding (one-pass kernel)
  tilescope::TraceView trace;
};

}  // namespace ts::test
