// tilescope trace files: a safetensors file with a fixed schema (docs/trace-format.md, format 2).
//
// One 1-D tensor per EventHeader int32 field ("events.stage" I32 [N], ...), the key ranges
// "events.key_ranges" I32 [N, R, 2], "events.time_ns" I64 [N], the payloads "events.m" /
// "events.l" F32 [N, max_rows] and "events.o" F32 [N, max_rows, head_dim]; the identities of
// planned events that were never written ("missing.*", the same header columns); optionally the
// inputs of the traced heads ("inputs.q_pairs" I32 [Pq, 2] with "inputs.q" [Pq, seq_q,
// head_dim]; "inputs.kv_pairs" I32 [Pk, 2] with "inputs.k", "inputs.v" [Pk, seq_kv, head_dim],
// in the inputs' dtype) and the kernel's output ("output.o" [batch, heads_q, seq_q, head_dim],
// "output.lse" F32 [batch, heads_q, seq_q], natural log); in __metadata__ the stage table, the
// attention description and the run's description.
//
//   write_trace("run.trace.safetensors", {.events = &captured, .attention = spec, ...});
//   TraceFile trace = TraceFile::open("run.trace.safetensors");   // read, checked, owned
//   for (size_t i = 0; i < trace.num_events(); ++i) {
//     const EventHeader& h = trace.header(i);   // validated once at open, in memory we own
//     std::span<const float> o = trace.o(i);
//   }
//
// Format 1 files (tilescope 0.1: four fixed stages, tiles instead of keys) open too: they are
// converted on read (trace_format_v1.h) and look like format 2 to every caller.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/attention_spec.h"
#include "base/head_inputs.h"
#include "base/host_tensor.h"
#include "instrumentation/trace/safetensors.h"
#include "instrumentation/trace/trace_capture.h"
#include "instrumentation/trace/trace_event.h"

namespace ts {

// The schema version this build writes; it reads this one and format 1.
inline constexpr int kTraceFormatVersion = 2;

// Tensor names.
namespace trace_tensor {
// Event columns: EventHeader's int32 fields (kHeaderColumns in trace_file.cpp lists them once),
// each [N], named "events." + field; the same under "missing." for planned, unwritten events.
inline constexpr std::string_view events_prefix = "events.";
inline constexpr std::string_view missing_prefix = "missing.";
inline constexpr std::string_view key_ranges = "key_ranges";  // I32 [N, R, 2], R >= 1
inline constexpr std::string_view time_ns = "time_ns";        // I64 [N] (uint64 bits)
inline constexpr std::string_view m = "events.m";             // F32 [N, max_rows]
inline constexpr std::string_view l = "events.l";             // F32 [N, max_rows]
inline constexpr std::string_view o = "events.o";             // F32 [N, max_rows, head_dim]
// Optional.
inline constexpr std::string_view inputs_q_pairs = "inputs.q_pairs";    // I32 [Pq, 2]: (batch, head)
inline constexpr std::string_view inputs_q = "inputs.q";                // [Pq, seq_q, head_dim]
inline constexpr std::string_view inputs_kv_pairs = "inputs.kv_pairs";  // I32 [Pk, 2]: (batch, kv head)
inline constexpr std::string_view inputs_k = "inputs.k";                // [Pk, seq_kv, head_dim]
inline constexpr std::string_view inputs_v = "inputs.v";                // [Pk, seq_kv, head_dim]
inline constexpr std::string_view output = "output.o";         // [batch, heads_q, seq_q, head_dim]
inline constexpr std::string_view output_lse = "output.lse";   // F32 [batch, heads_q, seq_q]
}  // namespace trace_tensor

// Metadata keys (every value is a string).
namespace trace_meta {
// Written by write_trace itself; a caller's metadata may not hold them.
inline constexpr std::string_view format = "tilescope_format";    // "2"
inline constexpr std::string_view max_rows = "max_rows";          // decimal: payload rows
inline constexpr std::string_view head_dim = "head_dim";          // decimal
inline constexpr std::string_view dropped_events = "dropped_events";      // did not fit the buffer
inline constexpr std::string_view requested_events = "requested_events";  // kept by the filters
inline constexpr std::string_view stages = "stages";              // JSON: the stage table
inline constexpr std::string_view attention = "attention";        // JSON: AttentionSpec
// Set by the recording code (not interpreted by the reader). Suggested contents in brackets.
inline constexpr std::string_view kernel = "kernel";            // "fa1" | "splitk" | a user's name
inline constexpr std::string_view run = "run";                  // a name for the run
inline constexpr std::string_view fault = "fault";              // "none", "double_count_l"...
inline constexpr std::string_view backend = "backend";          // "cpu" | "gpu"
inline constexpr std::string_view device = "device";            // "NVIDIA H100 ...", CPU model
inline constexpr std::string_view config = "config";            // our kernels: AttentionConfig JSON
inline constexpr std::string_view tiling = "tiling";            // our kernels: block sizes, splits
inline constexpr std::string_view inputs_seed = "inputs_seed";  // decimal, when generated
inline constexpr std::string_view inputs_files = "inputs_files";     // JSON list of paths
inline constexpr std::string_view inputs_sha256 = "inputs_sha256";   // JSON list, same order
// "none" when the inputs came from files whose values the trace does not hold (names and hashes
// only: capture --no-store-inputs).
inline constexpr std::string_view inputs_stored = "inputs_stored";
inline constexpr std::string_view trace_filter = "trace_filter";     // the capture filters (JSON)
inline constexpr std::string_view tool_version = "tool_version";     // "tilescope 0.2.0"
// Format 1 only (read by the converter): "block_m", "block_n", "stage_names".
}  // namespace trace_meta

struct TraceContents {
  const CapturedEvents* events = nullptr;          // required
  AttentionSpec attention;                         // required: what the reference computes
  std::map<std::string, std::string> metadata{};   // the caller's keys (trace_meta::kernel...)
  const HeadInputs* inputs = nullptr;              // optional
  const HostTensor* output = nullptr;              // optional: [batch, heads_q, seq_q, head_dim]
  const std::vector<float>* output_lse = nullptr;  // optional: [batch * heads_q * seq_q], natural
  std::vector<TensorToWrite> extra{};              // optional; names outside the reserved prefixes
  WriteProgress progress{};                        // optional: bytes written of all
};

// Writes a trace atomically. Payloads are stored compact: `max_rows` in the file is the most
// rows any event or missing event holds (at most events->max_rows), each event's rows copied
// from the front of its slot. Throws FileWriteError naming the path and the problem when the
// contents are inconsistent (payload sizes, an event the reader would refuse, a reserved
// metadata key or tensor name) or the file cannot be written; nothing is left behind then.
void write_trace(const std::filesystem::path& path, const TraceContents& contents);

// A trace replaces what is at `path` only when that is nothing, an empty file or a tilescope
// trace (a safetensors file whose header, checked as the reader checks it, holds
// trace_meta::format in its metadata; the data are not read): a typo in -o must not turn
// someone's notes or data into a trace. Throws FileWriteError naming the path and what is there
// otherwise, a file that cannot be read or a damaged trace included (write_trace applies it, and
// again just before its rename; a front end may ask before a long run). A symbolic link is judged
// by the file it leads to (write_target.h).
void check_replaces_only_a_trace(const std::filesystem::path& path);

class TraceFile {
 public:
  // Reads and checks a trace: the safetensors layer, then the schema (required tensors and
  // metadata, dtypes, shapes, the stage table, the attention description, every event against
  // both). Throws FileReadError or TraceFormatError naming the file, the tensor or event, and the
  // problem. Everything checked is held in memory this object owns: no value can change after
  // it was validated.
  static TraceFile open(const std::filesystem::path& path);
  static TraceFile parse(std::shared_ptr<const ByteSource> source, std::string display_name);

  const std::string& display_name() const { return file_.display_name(); }
  uint64_t file_size() const { return file_.file_size(); }
  const std::map<std::string, std::string>& metadata() const { return file_.metadata(); }
  const std::string* metadata_value(std::string_view key) const;  // nullptr when absent
  const SafetensorsFile& file() const { return file_; }  // every tensor by name, extras too
  int format_version() const { return format_; }         // as stored: 1 (converted) or 2

  const AttentionSpec& attention() const { return attention_; }
  const std::vector<StageInfo>& stages() const { return stages_; }
  int32_t max_rows() const { return max_rows_; }
  int32_t head_dim() const { return head_dim_; }
  uint64_t dropped_events() const { return dropped_; }
  uint64_t requested_events() const { return requested_; }
  size_t num_events() const { return headers_.size(); }
  std::vector<size_t> events_per_stage() const;  // indexed by stage

  const std::vector<EventHeader>& headers() const { return headers_; }
  const EventHeader& header(size_t i) const { return headers_[i]; }
  std::span<const float> m(size_t i) const { return m_.subspan(i * rows(), rows()); }
  std::span<const float> l(size_t i) const { return l_.subspan(i * rows(), rows()); }
  std::span<const float> o(size_t i) const { return o_.subspan(i * rows() * hd(), rows() * hd()); }
  std::span<const float> m_all() const { return m_; }
  std::span<const float> l_all() const { return l_; }
  std::span<const float> o_all() const { return o_; }
  const std::vector<EventHeader>& missing() const { return missing_; }

  bool has_inputs() const;
  bool has_output() const { return file_.find(trace_tensor::output) != nullptr; }
  std::optional<HeadInputs> read_inputs() const;                // a copy; nullopt when absent
  std::optional<HostTensor> read_output() const;                // a copy; nullopt when absent
  std::optional<std::vector<float>> read_output_lse() const;    // a copy; nullopt when absent
  CapturedEvents to_captured_events() const;                    // a copy of every event

 private:
  explicit TraceFile(SafetensorsFile file) : file_(std::move(file)) {}
  void check_schema();
  void check_format_2();
  void check_inputs_and_output();
  size_t rows() const { return static_cast<size_t>(max_rows_); }
  size_t hd() const { return static_cast<size_t>(head_dim_); }

  SafetensorsFile file_;
  int format_ = kTraceFormatVersion;
  AttentionSpec attention_;
  std::vector<StageInfo> stages_;
  int32_t max_rows_ = 0, head_dim_ = 0;
  uint64_t dropped_ = 0, requested_ = 0;
  std::vector<EventHeader> headers_, missing_;
  TensorView<float> m_view_, l_view_, o_view_;  // payloads (views into the file's bytes)
  std::span<const float> m_, l_, o_;
};

// Why `h` cannot be an event of a trace with this stage table, attention description and payload
// size, or "" when it can: stage in the table, convention bits known, rows in [0, max_rows],
// batch / head / kv head inside the description, query rows inside seq_q, key ranges (at most
// `max_key_ranges`) inside [0, seq_kv] with begin <= end, split and block >= -1, step >= 0.
// Shared by the writer and the reader.
std::string event_header_problem(const EventHeader& h, size_t num_stages, const AttentionSpec& spec,
                                 int32_t max_rows, int32_t max_key_ranges = kMaxKeyRanges);

}  // namespace ts
