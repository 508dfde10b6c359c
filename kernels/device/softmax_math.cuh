// The numerics shared by every kernel: the logit softcap, the guarded online-softmax shift, the
// log-sum-exp merge of two unnormalised states, and the final normalisation. `guard = false` is
// the masked_nan fault: the same formulas without the guard for a row that has seen no key
// (m = -inf), where exp(-inf - -inf) = NaN. The correct builds pass a constant true, so the
// guard costs one select and the fault nothing.
#pragma once

#include <cmath>

#include "instrumentation/simt/cuda_compat.h"

namespace ts::device {

inline constexpr float kNegInf = -INFINITY;

// What the exponents subtract from the scores once the running max is m_new: m_new itself, or
// 0 while the row has seen no key, so that masked scores (-inf) give exp = 0 and the old state
// (m = -inf) is scaled by exp(-inf) = 0.
__device__ __forceinline__ float softmax_shift(float m_new, bool guard) {
  return (guard && m_new == kNegInf) ? 0.0f : m_new;
}

// The logit softcap on a scaled score, as base/attention_spec.h defines it (applied before the
// max and the exponents): softcap * tanh(s / softcap), for softcap > 0, with s / softcap taken
// as s * (1 / softcap): an IEEE division brings a slow-path call into the kernel, and a call
// anywhere in the loop changes how ptxas allocates the whole kernel's registers.
__device__ __forceinline__ float softcap_score(float s, float softcap, float softcap_inv) {
  return softcap * tanhf(s * softcap_inv);
}

// Merges the unnormalised state (m_b, l_b, o_b) into (m, l, o) for one element of a row.
// `weight_by_l` is the double_count_l fault: o_b weighted by its own sum l_b again.
__device__ __forceinline__ void merge_state(float& m, float& l, float& o, float m_b, float l_b,
                                            float o_b, bool guard, bool weight_by_l) {
  const float m_new = fmaxf(m, m_b);
  const float shift = softmax_shift(m_new, guard);
  const float a = expf(m - shift);
  const float b = expf(m_b - shift);
  l = l * a + l_b * b;
  o = o * a + (weight_by_l ? l_b * b : b) * o_b;
  m = m_new;
}

// Final output of a row: O / l and LSE = m + log(l); a row that saw no key (l = 0) gets O = 0
// and LSE = -inf, unless the guard is off (masked_nan: 0 / 0 = NaN). The test is l == 0, not
// !(l > 0): a NaN that reached l (e.g. an unwritten partial) must show in the output, not be
// turned into a clean-looking zero.
__device__ __forceinline__ float normalise(float o, float l, bool guard) {
  return (guard && l == 0.0f) ? 0.0f : o / l;
}
__device__ __forceinline__ float log_sum_exp(float m, float l, bool guard) {
  return (guard && l == 0.0f) ? kNegInf : m + logf(l);
}

}  // namespace ts::device
