// The diagnosis tests' own fault variants: bugs kernel authors make in masks, tails, strides,
// scales, log bases, rescaling, merges, index arithmetic and partial writes, none of them one of
// tilescope's eight built-in faults (kernels/). Each lives behind one switch in the test kernels
// of this folder (one_pass_kernel.cuh: an FA-1-style one-pass kernel; split_kernels.cuh: a
// Split-K partial pass and its merge), written as a user writes a kernel: the public probe API
// and nothing of tilescope's own kernels.
#pragma once

#include <span>
#include <string_view>

namespace ts::test {

// Which of the test kernels a variant lives in.
enum class KernelShape { one_pass, split };

enum class TestFault : int {
  none = 0,
  // One-pass kernel (one thread per query row, K/V tiles in shared memory).
  tail_admits_padded_key,      // the tail mask is `key <= seq_kv`: one zero-filled key past the end
  causal_drops_diagonal,       // the causal mask is `key < i + offset`: the diagonal key is masked
  causal_admits_next_key,      // the causal mask is `key <= i + offset + 1`: one key too many
  scale_applied_twice,         // Q is pre-scaled and the scores are scaled again
  o_not_rescaled,              // O += P V without O *= exp(m_old - m_new); l is rescaled
  l_not_rescaled,              // l += sum P without l *= exp(m_old - m_new); O is rescaled
  rescale_inverted,            // O and l rescaled by exp(m_new - m_old) instead of its inverse
  lse_in_log2,                 // the output LSE is written in base-2 units, declared natural
  lse_without_log_l,           // the output LSE is m: log l is never added
  batch_stride_without_heads,  // K/V's batch stride forgets the kv heads: seq_kv * D
  gqa_modulo_head_map,         // kv head = head % heads_kv instead of head / group
  exp2_on_natural_scores,      // exp2f(s - m) on natural-log scores (log2 e not folded in)
  softcap_not_applied,         // the attention has a softcap; the kernel never applies it
  causal_top_left,             // the causal diagonal aligned top-left; the attention says bottom-right
  v_tile_lags,                 // P V of kv tile t reads V of tile t - 1 (t >= 1)
  m_starts_at_zero,            // the running max starts at 0 instead of -inf
  pv_added_twice,              // O += 2 P V (l is right)
  alibi_not_applied,           // the attention has ALiBi slopes; the kernel never subtracts the bias
  output_divided_twice,        // the output is O / l / l (normalised, then divided by l again)
  // Split kernels (a partial pass over splits of kv tiles, then a merge pass).
  last_split_drops_diagonal,   // the last split's causal mask is `key < i + offset`
  splits_shifted_one_key,      // splits after the first read keys [begin - 1, end - 1)
  partial_o_half_columns,      // the partial buffer's O gets only head-dim columns [0, D/2)
  partial_m_in_log2,           // the partial m is stored x log2 e, declared natural
  partial_o_normalized,        // the partial O is stored divided by l, declared unnormalised
  merge_o_not_rescaled,        // the merge adds w O_s without rescaling the running O
  merge_skips_last_split,      // the merge loop stops one split short
  merge_reads_next_query,      // the merge reads the partials of query i + 1 for query i
  merge_l_not_rescaled,        // the merge adds w l_s without rescaling the running l
  merge_weights_swapped,       // the merge's O = w O + alpha O_s (the two weights swapped; l right)
};

struct TestFaultInfo {
  TestFault fault;
  std::string_view name;
  KernelShape shape;
};

inline constexpr TestFaultInfo kTestFaults[] = {
    {TestFault::none, "none", KernelShape::one_pass},
    {TestFault::tail_admits_padded_key, "tail_admits_padded_key", KernelShape::one_pass},
    {TestFault::causal_drops_diagonal, "causal_drops_diagonal", KernelShape::one_pass},
    {TestFault::causal_admits_next_key, "causal_admits_next_key", KernelShape::one_pass},
    {TestFault::scale_applied_twice, "scale_applied_twice", KernelShape::one_pass},
    {TestFault::o_not_rescaled, "o_not_rescaled", KernelShape::one_pass},
    {TestFault::l_not_rescaled, "l_not_rescaled", KernelShape::one_pass},
    {TestFault::rescale_inverted, "rescale_inverted", KernelShape::one_pass},
    {TestFault::lse_in_log2, "lse_in_log2", KernelShape::one_pass},
    {TestFault::lse_without_log_l, "lse_without_log_l", KernelShape::one_pass},
    {TestFault::batch_stride_without_heads, "batch_stride_without_heads", KernelShape::one_pass},
    {TestFault::gqa_modulo_head_map, "gqa_modulo_head_map", KernelShape::one_pass},
    {TestFault::exp2_on_natural_scores, "exp2_on_natural_scores", KernelShape::one_pass},
    {TestFault::softcap_not_applied, "softcap_not_applied", KernelShape::one_pass},
    {TestFault::causal_top_left, "causal_top_left", KernelShape::one_pass},
    {TestFault::v_tile_lags, "v_tile_lags", KernelShape::one_pass},
    {TestFault::m_starts_at_zero, "m_starts_at_zero", KernelShape::one_pass},
    {TestFault::pv_added_twice, "pv_added_twice", KernelShape::one_pass},
    {TestFault::alibi_not_applied, "alibi_not_applied", KernelShape::one_pass},
    {TestFault::output_divided_twice, "output_divided_twice", KernelShape::one_pass},
    {TestFault::last_split_drops_diagonal, "last_split_drops_diagonal", KernelShape::split},
    {TestFault::splits_shifted_one_key, "splits_shifted_one_key", KernelShape::split},
    {TestFault::partial_o_half_columns, "partial_o_half_columns", KernelShape::split},
    {TestFault::partial_m_in_log2, "partial_m_in_log2", KernelShape::split},
    {TestFault::partial_o_normalized, "partial_o_normalized", KernelShape::split},
    {TestFault::merge_o_not_rescaled, "merge_o_not_rescaled", KernelShape::split},
    {TestFault::merge_skips_last_split, "merge_skips_last_split", KernelShape::split},
    {TestFault::merge_reads_next_query, "merge_reads_next_query", KernelShape::split},
    {TestFault::merge_l_not_rescaled, "merge_l_not_rescaled", KernelShape::split},
    {TestFault::merge_weights_swapped, "merge_weights_swapped", KernelShape::split},
};

inline std::string_view to_string(TestFault f) {
  for (const TestFaultInfo& i : kTestFaults)
    if (i.fault == f) return i.name;
  return "?";
}

}  // namespace ts::test
