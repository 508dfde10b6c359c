// The host side of tilescope's recorder (libtilescope_recorder, no CUDA in it): what a recording
// says about the attention, the user's tensors in whatever layout they have, and TraceWriter,
// which turns the events a kernel recorded, Q, K, V and the kernel's output into a trace file
// (docs/trace-format.md) that `tilescope diff` and `tilescope-gui` open.
//
// Most programs use tilescope/recorder.h, which adds the device side (the trace buffer, copies
// from device memory, the `__device__` symbol) on top of this; TraceWriter alone serves a
// program whose events and tensors are already in host memory.
//
// Errors are RecorderError exceptions whose message names the problem and what to do.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tilescope/event.h"
#include "tilescope/trace_view.h"

namespace tilescope {

class RecorderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Element types of Q, K, V and the output.
enum class DType : int32_t { f32 = 0, f16 = 1, bf16 = 2 };

// Causal mask alignment: query row i of batch b sees keys j <= i + offset, with offset 0
// (top_left, PyTorch's `is_causal` for square shapes) or kv_len(b) - q_len(b) (bottom_right,
// flash-attention's; what decode needs). The two agree when seq_q == seq_kv.
enum class Causal : int32_t { none = 0, bottom_right = 1, top_left = 2 };

// The attention the kernel computes, as the float64 reference will compute it
// (docs/trace-format.md, "The attention description", states the scores and masks):
//   s = scale * q_i . k_j;  s = softcap * tanh(s / softcap) when softcap > 0;
//   s -= alibi_slopes[h] * |i + offset - j| with ALiBi;  masks: causal, window, lengths.
// The inputs' dtype comes from Q (set_inputs).
struct Attention {
  int64_t batch = 1;
  int64_t heads_q = 1;
  int64_t heads_kv = 0;   // 0: heads_q (MHA); a divisor of heads_q for GQA, 1 for MQA
  int64_t seq_q = 0;      // query rows per (batch, head) as stored
  int64_t seq_kv = 0;     // keys per (batch, kv head) as stored
  int64_t head_dim = 0;
  double scale = 0.0;     // the softmax scale; 0: 1 / sqrt(head_dim)
  Causal causal = Causal::none;
  int64_t window_left = -1;   // sliding window: keys before the diagonal; -1: unbounded
  int64_t window_right = -1;  // keys after it; -1: unbounded
  double softcap = 0.0;       // 0: off
  std::vector<int64_t> q_lens;        // per batch (varlen); empty: seq_q each
  std::vector<int64_t> kv_lens;       // per batch (a KV cache's lengths); empty: seq_kv each
  std::vector<double> alibi_slopes;   // per query head; empty: no ALiBi
};

// One entry of the trace's stage table: an event's `stage` is its index. `kind` says what the
// analysis compares (event.h: a state over keys, a merge of earlier states, the final output);
// `pass` is the launch it belongs to (-1: states 0, merges 1, final the last). The flags say how
// the kernel computes a state, so that the analysis's yardstick computes it the same way
// (docs/trace-format.md, the stage table).
struct Stage {
  std::string name;  // 1 to 64 bytes, unique; shown in reports and the viewer
  StageKind kind = StageKind::state;
  int32_t pass = -1;
  // The kernel rounds the softmax weights P to the input dtype before P V (an mma takes 16-bit
  // operands): the stage's O is compared against a float32 textbook that rounds P the same way,
  // and its l against that textbook's l summed before the rounding or after it.
  bool p_rounded = false;
  // The kernel's weights are exp2 of one float32 multiply-add with the scale and log2 e folded in:
  // the stage's m, l and O are compared against a float32 textbook that folds the same way.
  bool exp2_folded = false;
};

// A tensor of the user's, in device or host memory, in any layout: its four dims in attention
// order (batch, heads, sequence, head_dim) and each dim's stride in elements. bhsd / bshd make
// the two usual contiguous layouts; strided any other (a slice, padded rows, a KV cache with
// more room than keys).
struct TensorRef {
  const void* data = nullptr;
  DType dtype = DType::f32;
  std::array<int64_t, 4> sizes{};    // batch, heads, seq, head_dim
  std::array<int64_t, 4> strides{};  // elements between neighbours along each of those dims
};

inline TensorRef strided(const void* data, DType dtype, std::array<int64_t, 4> sizes,
                         std::array<int64_t, 4> strides) {
  return TensorRef{data, dtype, sizes, strides};
}
// Contiguous [batch, heads, seq, head_dim].
inline TensorRef bhsd(const void* data, DType dtype, int64_t batch, int64_t heads, int64_t seq,
                      int64_t head_dim) {
  return strided(data, dtype, {batch, heads, seq, head_dim},
                 {heads * seq * head_dim, seq * head_dim, head_dim, 1});
}
// Contiguous [batch, seq, heads, head_dim] (flash-attention's and most PyTorch code's).
inline TensorRef bshd(const void* data, DType dtype, int64_t batch, int64_t seq, int64_t heads,
                      int64_t head_dim) {
  return strided(data, dtype, {batch, heads, seq, head_dim},
                 {seq * heads * head_dim, head_dim, heads * head_dim, 1});
}

// The kernel's log-sum-exp per (batch, query head, query row): float32, in natural log or in
// base 2 (FlashInfer, FA3: log2 of the sum of 2^(s log2 e)).
enum class LseBase : int32_t { natural = 0, base2 = 1 };
struct LseRef {
  const float* data = nullptr;
  std::array<int64_t, 3> sizes{};    // batch, heads, seq
  std::array<int64_t, 3> strides{};  // elements
  LseBase base = LseBase::natural;
};
// Contiguous [batch, heads, seq] (flash-attention's softmax_lse).
inline LseRef lse_bhs(const float* data, int64_t batch, int64_t heads, int64_t seq,
                      LseBase base = LseBase::natural) {
  return LseRef{data, {batch, heads, seq}, {heads * seq, seq, 1}, base};
}
inline LseRef lse_strided(const float* data, std::array<int64_t, 3> sizes,
                          std::array<int64_t, 3> strides, LseBase base = LseBase::natural) {
  return LseRef{data, sizes, strides, base};
}

// Bytes from a tensor's first element to one past its last (what a copy of it must take), for
// non-negative strides; throws RecorderError naming `what` otherwise.
size_t span_bytes(const TensorRef& t, const char* what);
size_t span_bytes(const LseRef& t, const char* what);

// Builds a trace in host memory and writes it. Every setter checks what it is given against the
// attention and the stage table and throws RecorderError naming the problem.
class TraceWriter {
 public:
  TraceWriter(Attention attention, std::vector<Stage> stages);
  ~TraceWriter();
  TraceWriter(TraceWriter&&) noexcept;
  TraceWriter& operator=(TraceWriter&&) noexcept;

  const Attention& attention() const;
  const std::vector<Stage>& stages() const;

  // Names shown by `tilescope info`, reports and the viewer: the kernel, and this run of it.
  void set_names(std::string kernel, std::string run);
  // Any other metadata (docs/trace-format.md lists the keys tilescope knows: backend, device...).
  void set_metadata(std::string key, std::string value);
  // The buffer the events were recorded with, stored as `tilescope capture` stores its own
  // (metadata trace_filter and trace_capacity); the Recorder sets it at start.
  void set_buffer(const TraceFilter& filter, int64_t capacity);

  // Q [batch, heads_q, seq_q, head_dim], K and V [batch, heads_kv, seq_kv, head_dim], in host
  // memory, all of one dtype (the trace's). Copied now; the traced (batch, head) pairs only
  // (those inside `keep`, the probes' filter), K and V once per kv head.
  void set_inputs(const TensorRef& q, const TensorRef& k, const TensorRef& v,
                  const TraceFilter& keep = {});
  // The kernel's output [batch, heads_q, seq_q, head_dim], in host memory, any float dtype.
  void set_output(const TensorRef& o);
  void set_output_lse(const LseRef& lse);

  // What the setters check before they read anything (dims against the attention, dtypes,
  // strides): the Recorder asks before it copies a tensor out of device memory, so that a wrong
  // description is refused instead of read past its end.
  void check_inputs(const TensorRef& q, const TensorRef& k, const TensorRef& v) const;
  void check_output(const TensorRef& o) const;
  void check_output_lse(const LseRef& lse) const;

  // The trace buffer's contents after the kernels ran, in host memory: `slots` headers (a slot
  // whose stage is -1 was never written), their payloads ([slots][max_rows] m and l,
  // [slots][max_rows][head_dim] O) and the count of events that found no slot. Written events
  // are kept in the kernel's own order (pass of their stage, block, step, rows).
  void set_events(const EventHeader* headers, const float* m, const float* l, const float* o,
                  int64_t slots, int32_t max_rows, uint64_t dropped);
  int64_t num_events() const;
  uint64_t dropped_events() const;

  // Writes the trace atomically (a temporary file renamed over `path`). Throws RecorderError
  // naming the event or tensor that cannot be stored and what to change.
  void write(const std::string& path) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tilescope
