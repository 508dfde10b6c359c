#include "base/head_inputs.h"

namespace ts {
namespace {

int32_t find_pair(const std::vector<std::array<int32_t, 2>>& pairs, int64_t a, int64_t b) {
  for (size_t i = 0; i < pairs.size(); ++i)
    if (pairs[i][0] == a && pairs[i][1] == b) return static_cast<int32_t>(i);
  return -1;
}

}  // namespace

int32_t HeadInputs::q_index(int64_t batch, int64_t head) const { return find_pair(q_pairs, batch, head); }
int32_t HeadInputs::kv_index(int64_t batch, int64_t kv_head) const {
  return find_pair(kv_pairs, batch, kv_head);
}

}  // namespace ts
