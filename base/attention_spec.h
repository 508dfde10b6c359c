// The attention a kernel computes, described without the kernel: sizes, GQA/MQA head mapping,
// masks (causal with either alignment, sliding window, per-batch lengths), logit softcap, ALiBi
// and the softmax scale. The float64 reference computes any event's state from this and the
// inputs; trace files carry it (metadata "attention", docs/trace-format.md); our kernels'
// AttentionConfig maps onto it (attention_config.h).
//
// Scores. For batch b, query head h, query row i (an index within b's sequence) and key j:
//   s = scale * q_i . k_j                              (kv head of h: h / (heads_q / heads_kv))
//   s = softcap * tanh(s / softcap)                    when softcap > 0
//   s = s - alibi_slopes[h] * |i + offset - j|          when ALiBi slopes are given
// and key j is visible to row i when
//   j < kv_len(b) and i < q_len(b),
//   j <= i + offset                                     when causal,
//   i + offset - window_left <= j <= i + offset + window_right   (a negative bound: none),
// with offset = 0 for top-left alignment and kv_len(b) - q_len(b) for bottom-right (flash-
// attention's and PyTorch's `is_causal` for square shapes; bottom-right is what decode needs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/attention_rules.h"
#include "base/dtype.h"

namespace ts {

enum class CausalAlign : int32_t {
  none = 0,          // no causal mask
  bottom_right = 1,  // query i sees keys j <= i + kv_len - q_len
  top_left = 2,      // query i sees keys j <= i
};
std::string_view to_string(CausalAlign a);
std::optional<CausalAlign> causal_from_name(std::string_view name);  // "none", "bottom_right", "top_left"

struct AttentionSpec {
  int64_t batch = 1;
  int64_t heads_q = 1;
  int64_t heads_kv = 1;  // divides heads_q; 1: MQA; heads_q: MHA
  int64_t seq_q = 1;     // rows of Q per (batch, head) as stored; per-batch lengths may be shorter
  int64_t seq_kv = 1;
  int64_t head_dim = 64;
  DType dtype = DType::f32;       // of Q, K, V and the output
  double scale = 0.0;             // 0: 1 / sqrt(head_dim)
  CausalAlign causal = CausalAlign::none;
  int64_t window_left = -1;       // sliding window, keys before the diagonal; -1: unbounded
  int64_t window_right = -1;      // keys after the diagonal; -1: unbounded
  double softcap = 0.0;           // 0: off
  std::vector<int64_t> q_lens;    // per batch (varlen); empty: every batch has seq_q rows
  std::vector<int64_t> kv_lens;   // per batch (cache_seqlens); empty: every batch has seq_kv
  std::vector<double> alibi_slopes;  // per query head; empty: no ALiBi

  double effective_scale() const;
  int64_t group_size() const { return heads_q / heads_kv; }
  int64_t kv_head_of(int64_t q_head) const { return ts::kv_head_of<int64_t>(q_head, heads_q, heads_kv); }
  int64_t q_len(int64_t b) const { return q_lens.empty() ? seq_q : q_lens[static_cast<size_t>(b)]; }
  int64_t kv_len(int64_t b) const { return kv_lens.empty() ? seq_kv : kv_lens[static_cast<size_t>(b)]; }
  // The diagonal's key for query row i of batch b is i + offset(b).
  int64_t offset(int64_t b) const {
    return causal == CausalAlign::top_left ? 0 : kv_len(b) - q_len(b);
  }
  bool has_window() const { return window_left >= 0 || window_right >= 0; }

  // Keys [begin, end) that row i of batch b sees (the visible keys are always one contiguous
  // range); begin == end when it sees none. The rule itself: base/attention_rules.h.
  using KeySpan = ts::KeySpan;
  KeySpan visible_keys(int64_t b, int64_t i) const;
  // The same rule for any position i >= 0, also one past the batch's queries (a row a kernel
  // computes in its last query tile but never stores); visible_keys is this for query rows.
  KeySpan mask_keys(int64_t b, int64_t i) const;

  bool operator==(const AttentionSpec&) const = default;
};

// Throws ConfigError (attention_config.h) naming the field: sizes < 1, heads_q not a multiple
// of heads_kv, a non-finite or negative scale or softcap, window bounds < -1, per-batch lists
// of the wrong length or with lengths outside [0, seq], ALiBi slopes of the wrong count or not
// finite, element counts that overflow int64.
void validate(const AttentionSpec& spec);

// One line: "batch 2, 32 query heads on 8 kv heads, 1 x 8192 keys, head dim 128, bf16, causal
// (bottom-right), window (256, 0), softcap 30".
std::string describe(const AttentionSpec& spec);

void to_json(nlohmann::json& j, const AttentionSpec& spec);
// Checks every field's type and the spec's consistency (validate); throws ConfigError.
void from_json(const nlohmann::json& j, AttentionSpec& spec);

}  // namespace ts
