// The rules of base/attention_spec.h that device code needs too, written once as host/device
// functions: which kv head a query head reads (GQA/MQA), and which keys a query row sees (causal
// and sliding-window masks). AttentionSpec (the reference, trace files) calls these, and so do
// our kernels and their launch planner (kernels/tile_shapes.h: KernelMask), so that what the
// kernels mask and what the reference expects cannot drift apart. No dependencies.
#pragma once

#include <cstdint>

#include "base/host_device.h"

namespace ts {

// GQA / MQA: heads_kv divides heads_q, and query head h reads kv head h / (heads_q / heads_kv)
// (consecutive query heads share a kv head; heads_kv == heads_q is MHA, heads_kv == 1 MQA). In
// the integer type of the caller: the kernels divide in 32 bits (a 64-bit division is a call).
template <typename Int>
TS_HOST_DEVICE constexpr Int kv_head_of(Int q_head, Int heads_q, Int heads_kv) {
  return q_head / (heads_q / heads_kv);
}

// Keys [begin, end); empty when end <= begin.
struct KeySpan {
  int64_t begin = 0, end = 0;
  TS_HOST_DEVICE constexpr bool empty() const { return end <= begin; }
};

// The mask's two bounds for a query row whose diagonal key is `diagonal` (i + offset, see
// attention_spec.h). The first key it may see: the window's left bound, else key 0.
TS_HOST_DEVICE constexpr int64_t first_visible_key(int64_t diagonal, int64_t window_left) {
  return window_left >= 0 && diagonal - window_left > 0 ? diagonal - window_left : 0;
}
// One past the last key it may see: the batch's kv length, the diagonal when causal, the window's
// right bound; the smallest of them.
TS_HOST_DEVICE constexpr int64_t visible_keys_end(int64_t diagonal, int64_t kv_len, bool causal,
                                                  int64_t window_right) {
  int64_t end = kv_len;
  if (causal && diagonal + 1 < end) end = diagonal + 1;
  if (window_right >= 0 && diagonal + window_right + 1 < end) end = diagonal + window_right + 1;
  return end;
}

// The keys the row sees: always one contiguous range; begin == end when it sees none.
TS_HOST_DEVICE constexpr KeySpan visible_key_span(int64_t diagonal, int64_t kv_len, bool causal,
                                                  int64_t window_left, int64_t window_right) {
  const int64_t begin = first_visible_key(diagonal, window_left);
  const int64_t end = visible_keys_end(diagonal, kv_len, causal, window_right);
  return {begin, end > begin ? end : begin};
}

// The keys that consecutive rows, with diagonals first_diagonal .. last_diagonal (one apart), see
// together: [first_visible_key(first), visible_keys_end(last)). Both bounds grow with the
// diagonal, and before clipping to [0, kv_len) a row's keys [diagonal - left, diagonal + right + 1)
// hold at least one key and move by one key per row, so the rows' keys leave no gap between them.
TS_HOST_DEVICE constexpr KeySpan rows_visible_key_span(int64_t first_diagonal, int64_t last_diagonal,
                                                       int64_t kv_len, bool causal, int64_t window_left,
                                                       int64_t window_right) {
  const int64_t begin = first_visible_key(first_diagonal, window_left);
  const int64_t end = visible_keys_end(last_diagonal, kv_len, causal, window_right);
  return {begin, end > begin ? end : begin};
}

}  // namespace ts
