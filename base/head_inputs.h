// Q, K and V per head: the query rows of some (batch, query head) pairs and the keys and values
// of some (batch, kv head) pairs, each [pairs, seq, head_dim] in the inputs' dtype. What a trace
// stores (only the traced pairs; K and V once per kv head, however many query heads share it),
// and what the float64 reference reads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "base/host_tensor.h"

namespace ts {

struct HeadInputs {
  std::vector<std::array<int32_t, 2>> q_pairs;   // (batch, query head) of each leading index of q
  HostTensor q;                                  // [q_pairs, seq_q, head_dim]
  std::vector<std::array<int32_t, 2>> kv_pairs;  // (batch, kv head) of each leading index of k, v
  HostTensor k, v;                               // [kv_pairs, seq_kv, head_dim], q's dtype

  bool empty() const { return q_pairs.empty() && kv_pairs.empty(); }
  // Index into q_pairs / kv_pairs, or -1 when absent.
  int32_t q_index(int64_t batch, int64_t head) const;
  int32_t kv_index(int64_t batch, int64_t kv_head) const;
};

}  // namespace ts
