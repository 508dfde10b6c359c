// The inputs of one attention launch (Q, K, V as host tensors) and their check against the
// config: shapes (q [batch, heads, seq_q, head_dim], k and v [batch, heads_kv, seq_kv,
// head_dim]), dtype, and finite values.
#pragma once

#include <stdexcept>
#include <string>

#include "base/attention_config.h"
#include "base/host_tensor.h"

namespace ts {

struct AttentionInputs {
  HostTensor q;  // [batch, heads,    seq_q,  head_dim]
  HostTensor k;  // [batch, heads_kv, seq_kv, head_dim] (config.kv_heads(): heads for multi-head)
  HostTensor v;  // [batch, heads_kv, seq_kv, head_dim]
};

// Inputs that do not fit the config, or hold NaN / Inf. The message names the tensor and the
// problem (the first bad index, as [b, h, s, d]); tensor() is "q", "k" or "v".
class InputError : public std::runtime_error {
 public:
  InputError(std::string tensor, const std::string& message);
  const std::string& tensor() const { return tensor_; }

 private:
  std::string tensor_;
};

// Throws InputError on the first problem found (shape, then dtype, then values; q, k, v).
void check_inputs(const AttentionConfig& config, const AttentionInputs& inputs);

// The shape and dtype part of check_inputs for one tensor ("q", "k" or "v"), for a reader that
// checks a file's header before it reads the data. Throws InputError.
void check_input_layout(const AttentionConfig& config, const std::string& tensor,
                        const std::vector<int64_t>& shape, DType dtype);

}  // namespace ts
