// What a user asks tilescope to run: which attention kernel, which fault variant, which
// shapes and dtype. Host-only (the kernels themselves see AttentionParams, a plain struct
// the launchers fill from this). Shared by the launchers, the trace files' metadata, the
// reference, the CLI and the GUI's launch panel.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include "base/attention_spec.h"
#include "base/config_error.h"
#include "base/dtype.h"

namespace ts {

// Which dtypes and head dims each is built for: base/kernel_list.h (from kernels/kernel_list.cmake).
enum class KernelKind : int32_t {
  fa1 = 0,     // one pass over the kv tiles with online softmax
  splitk = 1,  // flash-decoding: partial pass over kv splits, then a log-sum-exp reduce
  fa2 = 2,     // FA-1's pass on tensor cores (mma.sync), one warp per 16 or 32 query rows
  splitk2 = 3, // Split-K whose partial pass is FA-2's over a split's kv tiles; Split-K's reduce
};

enum class Backend : int32_t {
  cpu = 0,   // the SIMT runtime runs the CUDA source on host threads
  gpu = 1,   // nvcc build on a CUDA device
  auto_ = 2, // gpu when a device is present, else cpu
};

// The seeds' bugs, reproducible on demand. Each is a variant of a correct kernel; `none`
// is the correct kernel, which is built without any of the faults' code.
enum class Fault : int32_t {
  none = 0,
  double_count_l,     // Split-K reduce weights each split by its local sum twice
  masked_nan,         // no guard for a fully masked tile: exp(-inf - -inf) = NaN
  empty_split,        // more splits than kv tiles; an empty split's state poisons the reduce
  partial_layout,     // partial writer and reducer disagree on the buffer layout (query stride)
  per_tile_softmax,   // FA-1 without online rescaling: right for one kv tile, wrong after
  stale_accumulator,  // the P.V accumulator is not reset between kv tiles
  missing_barrier,    // a shared-memory tile is overwritten before every thread has read it
  fragment_rows,      // FA-2's final store exchanges the accumulator's row halves (r, r + 8)
};

struct FaultInfo {
  Fault fault;
  std::string_view name;         // as typed on the command line: "double_count_l"
  std::string_view description;  // one line: the bug it reproduces
  bool fa1;                      // meaningful for the FA-1 kernel
  bool splitk;                   // meaningful for the Split-K kernel
  bool fa2;                      // meaningful for the FA-2 kernel
  bool splitk2;                  // meaningful for the Split-K 2 kernel
};

std::span<const FaultInfo> all_faults();
const FaultInfo& fault_info(Fault fault);
std::optional<Fault> fault_from_name(std::string_view name);
// Whether `fault` is offered on `kernel` (FaultInfo's flags), and, when it is not, why, as a
// sentence (validate's message).
bool fault_applies(Fault fault, KernelKind kernel);
std::string fault_refusal(Fault fault, KernelKind kernel);

std::string_view to_string(KernelKind kind);
std::string_view to_string(Backend backend);
std::string_view to_string(Fault fault);
std::optional<KernelKind> kernel_from_name(std::string_view name);  // "fa1", "splitk", "fa2", "splitk2"
// Whether the kernel splits the kv tiles into splits merged by a reduce (splitk, splitk2): the
// kernels num_splits applies to.
bool splits_kv(KernelKind kind);
// A few words on what the kernel does, for the CLI's help and the GUI's choices ("one pass,
// online softmax").
std::string_view kernel_description(KernelKind kind);
std::optional<Backend> backend_from_name(std::string_view name);    // "cpu", "gpu", "auto"

// Masks and scores follow base/attention_spec.h (the attention_spec(config) below): the diagonal
// of query row i is key i + seq_kv - seq_q (bottom-right alignment, what decode needs), both for
// the causal mask and for the window.
struct AttentionConfig {
  KernelKind kernel = KernelKind::fa1;
  Fault fault = Fault::none;
  int64_t batch = 1;
  int64_t heads = 1;            // query heads
  int64_t heads_kv = 0;         // kv heads (GQA/MQA): divides heads; 0 (or heads) = multi-head
  int64_t seq_q = 128;
  int64_t seq_kv = 128;
  int64_t head_dim = 64;
  DType dtype = DType::f32;
  bool causal = false;          // query i sees keys j <= i + seq_kv - seq_q
  int64_t window_left = -1;     // sliding window: keys j >= diagonal - window_left; -1 = unbounded
  int64_t window_right = -1;    // keys j <= diagonal + window_right; -1 = unbounded
  double softcap = 0.0;         // logit softcap: scaled scores s -> softcap * tanh(s / softcap); 0 = off
  int64_t num_splits = 0;       // Split-K kernels only (splits_kv); 0 = chosen by the heuristic at launch
  double softmax_scale = 0.0;   // 0 = 1 / sqrt(head_dim)

  double effective_scale() const;
  // The kv heads K and V hold: heads_kv, or heads when heads_kv is 0.
  int64_t kv_heads() const { return heads_kv > 0 ? heads_kv : heads; }
  bool has_window() const { return window_left >= 0 || window_right >= 0; }
  bool operator==(const AttentionConfig&) const = default;
};


// Throws ConfigError for: sizes < 1, a (kernel, dtype, head dim) the kernels are not built for
// (base/kernel_list.h's validate_kernel_build), splits < 0, heads_kv < 0 or not
// dividing heads, window bounds below -1 or past 2^30, a softcap that is neither 0 nor a finite
// positive float32, a fault that does not apply to the kernel, sizes whose element counts
// overflow 2^31 per tensor (the kernels index with 32-bit offsets within a tensor), a non-finite
// or negative softmax scale. Each new field's own check is also available alone
// (validate_heads_kv, validate_window, validate_softcap), for a form that checks fields as they
// are typed; ConfigError::field() names the field.
void validate(const AttentionConfig& config);
void validate_heads_kv(int64_t heads, int64_t heads_kv);
void validate_window(int64_t window_left, int64_t window_right);
void validate_softcap(double softcap);

// The attention a config describes (GQA mapping, bottom-right causal, window, softcap), for the
// reference and trace files.
AttentionSpec attention_spec(const AttentionConfig& config);

// "L,R" (each an integer >= -1; -1 = unbounded) as typed on the command line; nullopt when the
// text has another form. window_text is the inverse ("256,0", "-1,-1").
std::optional<std::pair<int64_t, int64_t>> window_from_text(std::string_view text);
std::string window_text(int64_t window_left, int64_t window_right);

void to_json(nlohmann::json& j, const AttentionConfig& config);
void from_json(const nlohmann::json& j, AttentionConfig& config);  // validates field types

}  // namespace ts
