// tilescope trace files: a safetensors file with a fixed schema (docs/trace-format.md).
//
// One 1-D tensor per EventHeader field ("events.stage" I32 [N], ..., "events.time_ns" I64 [N]),
// the payloads "events.m" / "events.l" F32 [N, block_m] and "events.o" F32 [N, block_m,
// head_dim]; optionally the inputs of the traced (batch, head) pairs ("inputs.pairs" I32 [P, 2],
// "inputs.q" / "inputs.k" / "inputs.v" [P, seq, head_dim] in the run's dtype) and the final
// output ("output.o" [batch, heads, seq_q, head_dim]); the run's description in __metadata__.
//
//   write_trace("run.trace.safetensors", {.events = &captured, .metadata = meta, ...});
//   TraceFile trace = TraceFile::open("run.trace.safetensors");   // checked, mapped
//   for (size_t i = 0; i < trace.num_events(); ++i) {
//     TraceEvent e = trace.event(i);      // header rebuilt from the columns; spans into the map
//   }
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/trace_capture.h"
#include "instrumentation/trace/trace_event.h"
#include "base/host_tensor.h"

namespace ts {

// The schema version this build writes and reads.
inline constexpr int kTraceFormatVersion = 1;

// Tensor names.
namespace trace_tensor {
// Event columns, one element per event; EventHeader's int32 fields in declaration order.
inline constexpr std::string_view stage = "events.stage";
inline constexpr std::string_view convention = "events.convention";
inline constexpr std::string_view batch = "events.batch";
inline constexpr std::string_view head = "events.head";
inline constexpr std::string_view q_tile = "events.q_tile";
inline constexpr std::string_view kv_tile_begin = "events.kv_tile_begin";
inline constexpr std::string_view kv_tile_end = "events.kv_tile_end";
inline constexpr std::string_view split = "events.split";
inline constexpr std::string_view step = "events.step";
inline constexpr std::string_view rows = "events.rows";
inline constexpr std::string_view where = "events.where";
inline constexpr std::string_view block = "events.block";
inline constexpr std::string_view time_ns = "events.time_ns";  // I64 (EventHeader's uint64 bits)
inline constexpr std::string_view m = "events.m";              // F32 [N, block_m]
inline constexpr std::string_view l = "events.l";              // F32 [N, block_m]
inline constexpr std::string_view o = "events.o";              // F32 [N, block_m, head_dim]
// Optional.
inline constexpr std::string_view inputs_pairs = "inputs.pairs";  // I32 [P, 2]: (batch, head)
inline constexpr std::string_view inputs_q = "inputs.q";          // [P, seq_q, head_dim]
inline constexpr std::string_view inputs_k = "inputs.k";          // [P, seq_kv, head_dim]
inline constexpr std::string_view inputs_v = "inputs.v";          // [P, seq_kv, head_dim]
inline constexpr std::string_view output = "output.o";            // [batch, heads, seq_q, head_dim]
}  // namespace trace_tensor

// Metadata keys (every value is a string).
namespace trace_meta {
// Written by write_trace itself; a caller's metadata may not hold them.
inline constexpr std::string_view format = "tilescope_format";    // "1"
inline constexpr std::string_view block_m = "block_m";            // decimal
inline constexpr std::string_view block_n = "block_n";
inline constexpr std::string_view head_dim = "head_dim";
inline constexpr std::string_view dropped_events = "dropped_events";      // did not fit the buffer
inline constexpr std::string_view requested_events = "requested_events";  // kept by the filters
inline constexpr std::string_view stage_names = "stage_names";    // JSON list, by stage value
inline constexpr std::string_view convention_names = "convention_names";
// Set by the capturing code (not interpreted by the reader). Suggested contents in brackets.
inline constexpr std::string_view config = "config";            // AttentionConfig as JSON
inline constexpr std::string_view tiling = "tiling";            // block sizes, splits (JSON)
inline constexpr std::string_view kernel = "kernel";            // "fa1" | "splitk"
inline constexpr std::string_view fault = "fault";              // "none", "double_count_l"...
inline constexpr std::string_view backend = "backend";          // "cpu" | "gpu"
inline constexpr std::string_view device = "device";            // "NVIDIA H100 ...", CPU model
inline constexpr std::string_view inputs_seed = "inputs_seed";  // decimal, when generated
inline constexpr std::string_view inputs_files = "inputs_files";     // JSON list of paths
inline constexpr std::string_view inputs_sha256 = "inputs_sha256";   // JSON list, same order
inline constexpr std::string_view trace_filter = "trace_filter";     // the capture filters (JSON)
inline constexpr std::string_view tool_version = "tool_version";     // "tilescope 0.1.0"
}  // namespace trace_meta

// Q, K, V of the traced (batch, head) pairs, so a trace is self-contained.
struct TraceInputs {
  std::vector<std::array<int32_t, 2>> pairs;  // (batch, head) of each leading index of q, k, v
  HostTensor q;                               // [P, seq_q, head_dim]
  HostTensor k, v;                            // [P, seq_kv, head_dim], same dtype as q
};

struct TraceContents {
  const CapturedEvents* events = nullptr;        // required
  std::map<std::string, std::string> metadata{};  // the caller's keys (trace_meta::config...)
  const TraceInputs* inputs = nullptr;           // optional
  const HostTensor* output = nullptr;            // optional: [batch, heads, seq_q, head_dim]
  std::vector<TensorToWrite> extra{};            // optional; names outside events./inputs./output.
};

// Writes a trace atomically. Throws FileWriteError naming the path and the problem when the
// contents are inconsistent (payload sizes, an event the reader would refuse, a reserved
// metadata key or tensor name) or the file cannot be written; nothing is left behind then.
void write_trace(const std::filesystem::path& path, const TraceContents& contents);

// One event: the header rebuilt from the columns, payloads pointing into the file's mapping.
struct TraceEvent {
  EventHeader header{};
  std::span<const float> m, l;  // [block_m]; the first header.rows are meaningful
  std::span<const float> o;     // [block_m * head_dim], row-major
};

class TraceFile {
 public:
  // Maps and checks a trace: the safetensors layer, then the schema (required tensors and
  // metadata, dtypes, shapes, every event's coordinates). Throws FileReadError or
  // TraceFormatError naming the file, the tensor or event, and the problem.
  static TraceFile open(const std::filesystem::path& path);
  static TraceFile parse(std::shared_ptr<const ByteSource> source, std::string display_name);

  const std::string& display_name() const { return file_.display_name(); }
  uint64_t file_size() const { return file_.file_size(); }
  const std::map<std::string, std::string>& metadata() const { return file_.metadata(); }
  const std::string* metadata_value(std::string_view key) const;  // nullptr when absent
  const SafetensorsFile& file() const { return file_; }  // every tensor by name, extras too

  int32_t block_m() const { return block_m_; }
  int32_t block_n() const { return block_n_; }
  int32_t head_dim() const { return head_dim_; }
  uint64_t dropped_events() const { return dropped_; }
  uint64_t requested_events() const { return requested_; }
  size_t num_events() const { return n_; }
  std::array<size_t, kNumStages> events_per_stage() const;

  EventHeader header(size_t i) const;
  std::span<const float> m(size_t i) const { return m_.span().subspan(i * bm(), bm()); }
  std::span<const float> l(size_t i) const { return l_.span().subspan(i * bm(), bm()); }
  std::span<const float> o(size_t i) const {
    return o_.span().subspan(i * bm() * hd(), bm() * hd());
  }
  TraceEvent event(size_t i) const { return {header(i), m(i), l(i), o(i)}; }

  bool has_inputs() const { return file_.find(trace_tensor::inputs_pairs) != nullptr; }
  bool has_output() const { return file_.find(trace_tensor::output) != nullptr; }
  std::optional<TraceInputs> read_inputs() const;  // a copy; nullopt when absent
  std::optional<HostTensor> read_output() const;   // a copy; nullopt when absent
  CapturedEvents to_captured_events() const;       // a copy of every event

 private:
  explicit TraceFile(SafetensorsFile file) : file_(std::move(file)) {}
  void check_schema();
  size_t bm() const { return static_cast<size_t>(block_m_); }
  size_t hd() const { return static_cast<size_t>(head_dim_); }

  SafetensorsFile file_;
  int32_t block_m_ = 0, block_n_ = 0, head_dim_ = 0;
  uint64_t dropped_ = 0, requested_ = 0;
  size_t n_ = 0;
  std::vector<TensorView<int32_t>> columns_;  // EventHeader's int32 fields, in order
  TensorView<int64_t> time_;
  TensorView<float> m_, l_, o_;
};

// Why `h` cannot be an event of a trace with this block_m, or "" when it can. Shared by the
// writer and the reader: stage and convention in range, rows in [0, block_m], coordinates
// non-negative, kv_tile_begin <= kv_tile_end, split and where >= -1.
std::string event_header_problem(const EventHeader& h, int32_t block_m);

}  // namespace ts
