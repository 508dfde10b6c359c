// TraceWriter (tilescope/trace_writer.h): the recorder's host side. It turns the user's
// description into tilescope's (AttentionSpec, the stage table), gathers Q, K, V and the output
// from any layout into the trace's per-head tensors, keeps the recorded events in the kernel's
// own order, and writes the file through the trace writer every tilescope trace goes through
// (instrumentation/trace/trace_file.h), after checking every event itself so that a problem is
// told in the recorder's terms (which option to change, which probe call).
#include "tilescope/trace_writer.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <ctime>
#include <exception>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/attention_spec.h"
#include "base/config_error.h"
#include "base/head_inputs.h"
#include "base/host_tensor.h"
#include "instrumentation/trace/trace_capture.h"
#include "instrumentation/trace/trace_event.h"
#include "instrumentation/trace/trace_file.h"
#include "tilescope/version.h"

namespace tilescope {
namespace {

[[noreturn]] void refuse(const std::string& what) { throw RecorderError("tilescope recorder: " + what); }

ts::DType to_ts(DType d) {
  switch (d) {
    case DType::f32: return ts::DType::f32;
    case DType::f16: return ts::DType::f16;
    case DType::bf16: return ts::DType::bf16;
  }
  refuse("unknown DType " + std::to_string(static_cast<int>(d)) + " (f32, f16, bf16)");
}

ts::AttentionSpec to_spec(const Attention& a, ts::DType dtype) {
  ts::AttentionSpec s;
  s.batch = a.batch;
  s.heads_q = a.heads_q;
  s.heads_kv = a.heads_kv == 0 ? a.heads_q : a.heads_kv;
  s.seq_q = a.seq_q;
  s.seq_kv = a.seq_kv;
  s.head_dim = a.head_dim;
  s.dtype = dtype;
  s.scale = a.scale;
  switch (a.causal) {
    case Causal::none: s.causal = ts::CausalAlign::none; break;
    case Causal::bottom_right: s.causal = ts::CausalAlign::bottom_right; break;
    case Causal::top_left: s.causal = ts::CausalAlign::top_left; break;
    default: refuse("Attention::causal holds an unknown value (none, bottom_right, top_left)");
  }
  s.window_left = a.window_left;
  s.window_right = a.window_right;
  s.softcap = a.softcap;
  s.q_lens = a.q_lens;
  s.kv_lens = a.kv_lens;
  s.alibi_slopes = a.alibi_slopes;
  try {
    ts::validate(s);
  } catch (const std::exception& e) {
    refuse(std::string("the Attention description is invalid: ") + e.what());
  }
  return s;
}

std::vector<ts::StageInfo> to_stage_table(const std::vector<Stage>& stages) {
  if (stages.empty()) refuse("no stages declared: give the Recorder one Stage per kind of event the kernel records");
  std::vector<ts::StageInfo> out;
  for (const Stage& s : stages) {
    if (s.kind != StageKind::state && s.kind != StageKind::merge && s.kind != StageKind::final)
      refuse("stage '" + s.name + "' has an unknown kind (StageKind::state, merge or final)");
    if (s.pass < -1) refuse("stage '" + s.name + "' has pass " + std::to_string(s.pass) + "; -1 means the default");
    out.push_back({s.name, s.kind, s.pass, s.p_rounded, s.exp2_folded});
  }
  // Defaults as a trace reader gives them: states 0, merges 1, then finals after the others.
  for (ts::StageInfo& s : out)
    if (s.pass < 0 && s.kind != StageKind::final) s.pass = ts::default_pass(s.kind, out);
  for (ts::StageInfo& s : out)
    if (s.pass < 0) s.pass = ts::default_pass(s.kind, out);
  try {
    ts::parse_stage_table(ts::stage_table_json(out));  // the reader's rules
  } catch (const std::exception& e) {
    refuse(std::string("the stage table is invalid: ") + e.what());
  }
  return out;
}

const char* dim_name(size_t i) {
  static const char* const names[] = {"batch", "heads", "seq", "head_dim"};
  return names[i];
}

// Checks a tensor's dims against what the attention says it must be.
void check_sizes(const TensorRef& t, const std::array<int64_t, 4>& want, const char* what, const char* layout) {
  if (t.data == nullptr) refuse(std::string(what) + " is a null pointer");
  for (size_t i = 0; i < 4; ++i)
    if (t.sizes[i] != want[i])
      refuse(std::string(what) + " has " + dim_name(i) + " = " + std::to_string(t.sizes[i]) + " but the Attention says " +
             std::to_string(want[i]) + " (" + layout +
             "; TensorRef sizes are in the order batch, heads, seq, head_dim whatever the memory layout)");
}

// Element (b, h, s, 0) of a strided tensor, as a byte offset.
int64_t offset_bytes(const TensorRef& t, int64_t b, int64_t h, int64_t s) {
  return (b * t.strides[0] + h * t.strides[1] + s * t.strides[2]) * static_cast<int64_t>(ts::dtype_size(to_ts(t.dtype)));
}

// Rows (b, h, all s) of a strided tensor, copied into `dst` as [seq, head_dim] contiguous.
void gather_head(const TensorRef& t, int64_t b, int64_t h, std::byte* dst) {
  const size_t elem = ts::dtype_size(to_ts(t.dtype));
  const int64_t seq = t.sizes[2], d = t.sizes[3];
  const auto* src = static_cast<const std::byte*>(t.data);
  for (int64_t s = 0; s < seq; ++s) {
    const std::byte* row = src + offset_bytes(t, b, h, s);
    std::byte* out = dst + static_cast<size_t>(s * d) * elem;
    if (t.strides[3] == 1) {
      std::memcpy(out, row, static_cast<size_t>(d) * elem);
    } else {
      for (int64_t c = 0; c < d; ++c)
        std::memcpy(out + static_cast<size_t>(c) * elem, row + static_cast<size_t>(c * t.strides[3]) * elem, elem);
    }
  }
}

bool in_range(int64_t v, int32_t begin, int32_t end) { return v >= begin && v < end; }

// "2026-11-23T03:15:34Z", as `tilescope capture` stamps its traces.
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

size_t span_bytes(const TensorRef& t, const char* what) {
  int64_t last = 0;
  for (size_t i = 0; i < 4; ++i) {
    if (t.sizes[i] < 1)
      refuse(std::string(what) + " has " + dim_name(i) + " = " + std::to_string(t.sizes[i]) + "; every dim must be >= 1");
    if (t.strides[i] < 0)
      refuse(std::string(what) + " has a negative stride along " + dim_name(i) + "; give a view with non-negative strides");
    last += (t.sizes[i] - 1) * t.strides[i];
  }
  return static_cast<size_t>(last + 1) * ts::dtype_size(to_ts(t.dtype));
}

size_t span_bytes(const LseRef& t, const char* what) {
  int64_t last = 0;
  for (size_t i = 0; i < 3; ++i) {
    if (t.sizes[i] < 1) refuse(std::string(what) + " has a dim of " + std::to_string(t.sizes[i]) + "; every dim must be >= 1");
    if (t.strides[i] < 0) refuse(std::string(what) + " has a negative stride; give a view with non-negative strides");
    last += (t.sizes[i] - 1) * t.strides[i];
  }
  return static_cast<size_t>(last + 1) * sizeof(float);
}

struct TraceWriter::State {
  Attention attention;
  std::vector<Stage> stages;
  std::vector<ts::StageInfo> stage_table;
  ts::AttentionSpec spec;  // its dtype is the inputs', once given
  std::map<std::string, std::string> metadata;
  std::optional<ts::HeadInputs> inputs;
  std::optional<ts::HostTensor> output;
  std::optional<std::vector<float>> output_lse;
  ts::CapturedEvents events;
  bool events_set = false;
};

TraceWriter::TraceWriter(Attention attention, std::vector<Stage> stages) : state_(std::make_unique<State>()) {
  state_->spec = to_spec(attention, ts::DType::f32);
  state_->stage_table = to_stage_table(stages);
  state_->attention = std::move(attention);
  if (state_->attention.heads_kv == 0) state_->attention.heads_kv = state_->attention.heads_q;
  state_->stages = std::move(stages);
  state_->metadata[std::string(ts::trace_meta::tool_version)] = std::string("tilescope recorder ") + TILESCOPE_VERSION_STRING;
}

TraceWriter::~TraceWriter() = default;
TraceWriter::TraceWriter(TraceWriter&&) noexcept = default;
TraceWriter& TraceWriter::operator=(TraceWriter&&) noexcept = default;

const Attention& TraceWriter::attention() const { return state_->attention; }
const std::vector<Stage>& TraceWriter::stages() const { return state_->stages; }

void TraceWriter::set_names(std::string kernel, std::string run) {
  set_metadata(std::string(ts::trace_meta::kernel), std::move(kernel));
  set_metadata(std::string(ts::trace_meta::run), std::move(run));
}

void TraceWriter::set_metadata(std::string key, std::string value) {
  namespace meta = ts::trace_meta;
  for (std::string_view reserved : {meta::format, meta::max_rows, meta::head_dim, meta::dropped_events,
                                    meta::requested_events, meta::stages, meta::attention})
    if (key == reserved) refuse("metadata key '" + key + "' is written by tilescope itself; choose another name");
  if (key.empty()) refuse("a metadata key is empty");
  state_->metadata[std::move(key)] = std::move(value);
}

void TraceWriter::set_buffer(const TraceFilter& f, int64_t capacity) {
  // The form `tilescope capture` writes (app/model/capture/capture_metadata.cpp): half-open
  // ranges with null for an open end, the kept stages by name.
  const auto range = [](int32_t begin, int32_t end) {
    return nlohmann::json::array({begin, end == INT32_MAX ? nlohmann::json(nullptr) : nlohmann::json(end)});
  };
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < state_->stage_table.size() && s < 64; ++s)
    if ((f.stage_mask >> s) & 1u) stages.push_back(state_->stage_table[s].name);
  const nlohmann::json filter = {{"enabled", true},
                                 {"batch", range(f.batch_begin, f.batch_end)},
                                 {"head", range(f.head_begin, f.head_end)},
                                 {"queries", range(f.query_begin, f.query_end)},
                                 {"stages", stages}};
  state_->metadata[std::string(ts::trace_meta::trace_filter)] = filter.dump();
  state_->metadata["trace_capacity"] = std::to_string(capacity);
}

void TraceWriter::check_inputs(const TensorRef& q, const TensorRef& k, const TensorRef& v) const {
  const Attention& a = state_->attention;
  check_sizes(q, {a.batch, a.heads_q, a.seq_q, a.head_dim}, "Q", "Q is [batch, heads_q, seq_q, head_dim]");
  check_sizes(k, {a.batch, a.heads_kv, a.seq_kv, a.head_dim}, "K", "K is [batch, heads_kv, seq_kv, head_dim]");
  check_sizes(v, {a.batch, a.heads_kv, a.seq_kv, a.head_dim}, "V", "V is [batch, heads_kv, seq_kv, head_dim]");
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    refuse("Q, K and V must have one dtype (the trace stores the inputs in it); convert them to Q's first");
  span_bytes(q, "Q");  // strides
  span_bytes(k, "K");
  span_bytes(v, "V");
}

void TraceWriter::check_output(const TensorRef& o) const {
  const Attention& a = state_->attention;
  check_sizes(o, {a.batch, a.heads_q, a.seq_q, a.head_dim}, "the output", "the output is [batch, heads_q, seq_q, head_dim]");
  span_bytes(o, "the output");
}

void TraceWriter::check_output_lse(const LseRef& lse) const {
  const Attention& a = state_->attention;
  if (lse.data == nullptr) refuse("the output's LSE is a null pointer");
  const std::array<int64_t, 3> want = {a.batch, a.heads_q, a.seq_q};
  if (lse.sizes != want)
    refuse("the output's LSE must be [batch, heads_q, seq_q] = [" + std::to_string(want[0]) + ", " +
           std::to_string(want[1]) + ", " + std::to_string(want[2]) + "] (LseRef sizes in that order)");
  span_bytes(lse, "the output's LSE");
  if (lse.base != LseBase::natural && lse.base != LseBase::base2)
    refuse("LseRef::base holds an unknown value (natural, base2)");
}

void TraceWriter::set_inputs(const TensorRef& q, const TensorRef& k, const TensorRef& v, const TraceFilter& keep) {
  const Attention& a = state_->attention;
  check_inputs(q, k, v);
  const ts::DType dtype = to_ts(q.dtype);

  ts::HeadInputs in;
  const int64_t group = a.heads_q / a.heads_kv;
  std::vector<int64_t> kv_wanted;  // (batch, kv head) pairs as b * heads_kv + kvh, sorted
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads_q; ++h)
      if (in_range(b, keep.batch_begin, keep.batch_end) && in_range(h, keep.head_begin, keep.head_end)) {
        in.q_pairs.push_back({static_cast<int32_t>(b), static_cast<int32_t>(h)});
        kv_wanted.push_back(b * a.heads_kv + h / group);
      }
  if (in.q_pairs.empty())
    refuse("the trace filter keeps no (batch, head) pair of the attention: widen BufferOptions::filter");
  std::sort(kv_wanted.begin(), kv_wanted.end());
  kv_wanted.erase(std::unique(kv_wanted.begin(), kv_wanted.end()), kv_wanted.end());
  for (int64_t p : kv_wanted)
    in.kv_pairs.push_back({static_cast<int32_t>(p / a.heads_kv), static_cast<int32_t>(p % a.heads_kv)});

  const int64_t pq = static_cast<int64_t>(in.q_pairs.size()), pk = static_cast<int64_t>(in.kv_pairs.size());
  in.q = ts::HostTensor::zeros(dtype, {pq, a.seq_q, a.head_dim});
  in.k = ts::HostTensor::zeros(dtype, {pk, a.seq_kv, a.head_dim});
  in.v = ts::HostTensor::zeros(dtype, {pk, a.seq_kv, a.head_dim});
  const size_t elem = ts::dtype_size(dtype);
  for (int64_t i = 0; i < pq; ++i)
    gather_head(q, in.q_pairs[static_cast<size_t>(i)][0], in.q_pairs[static_cast<size_t>(i)][1],
                in.q.bytes.data() + static_cast<size_t>(i * a.seq_q * a.head_dim) * elem);
  for (int64_t i = 0; i < pk; ++i) {
    const auto [b, h] = in.kv_pairs[static_cast<size_t>(i)];
    gather_head(k, b, h, in.k.bytes.data() + static_cast<size_t>(i * a.seq_kv * a.head_dim) * elem);
    gather_head(v, b, h, in.v.bytes.data() + static_cast<size_t>(i * a.seq_kv * a.head_dim) * elem);
  }
  state_->spec.dtype = dtype;
  state_->inputs = std::move(in);
}

void TraceWriter::set_output(const TensorRef& o) {
  const Attention& a = state_->attention;
  check_output(o);
  const ts::DType dtype = to_ts(o.dtype);
  ts::HostTensor out = ts::HostTensor::zeros(dtype, {a.batch, a.heads_q, a.seq_q, a.head_dim});
  const size_t head_bytes = static_cast<size_t>(a.seq_q * a.head_dim) * ts::dtype_size(dtype);
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads_q; ++h)
      gather_head(o, b, h, out.bytes.data() + static_cast<size_t>(b * a.heads_q + h) * head_bytes);
  state_->output = std::move(out);
}

void TraceWriter::set_output_lse(const LseRef& lse) {
  const Attention& a = state_->attention;
  check_output_lse(lse);
  // The trace stores the natural log: a base-2 LSE is log2 of the sum, ln = log2 * ln 2.
  const double to_natural = lse.base == LseBase::base2 ? std::log(2.0) : 1.0;
  std::vector<float> out(static_cast<size_t>(a.batch * a.heads_q * a.seq_q));
  size_t i = 0;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads_q; ++h)
      for (int64_t s = 0; s < a.seq_q; ++s)
        out[i++] = static_cast<float>(lse.data[b * lse.strides[0] + h * lse.strides[1] + s * lse.strides[2]] * to_natural);
  state_->output_lse = std::move(out);
}

void TraceWriter::set_events(const EventHeader* headers, const float* m, const float* l, const float* o, int64_t slots,
                             int32_t max_rows, uint64_t dropped) {
  if (slots < 0 || max_rows < 1) refuse("set_events: slots must be >= 0 and max_rows >= 1");
  if (slots > 0 && (headers == nullptr || m == nullptr || l == nullptr || o == nullptr))
    refuse("set_events: a null buffer");
  const auto& table = state_->stage_table;
  // Written slots, in the kernel's own order: pass of the stage, block, step, rows, stage. A
  // stage outside the table sorts last; write() names it.
  const auto pass_of = [&](int32_t stage) {
    return stage >= 0 && static_cast<size_t>(stage) < table.size() ? table[static_cast<size_t>(stage)].pass : INT32_MAX;
  };
  std::vector<int64_t> written;
  for (int64_t s = 0; s < slots; ++s)
    if (headers[s].stage != -1) written.push_back(s);
  std::stable_sort(written.begin(), written.end(), [&](int64_t x, int64_t y) {
    const EventHeader &a = headers[x], &b = headers[y];
    return std::make_tuple(pass_of(a.stage), a.block, a.step, a.batch, a.head, a.q_begin, a.stage, a.split) <
           std::make_tuple(pass_of(b.stage), b.block, b.step, b.batch, b.head, b.q_begin, b.stage, b.split);
  });
  ts::CapturedEvents ev;
  ev.max_rows = max_rows;
  ev.head_dim = static_cast<int32_t>(state_->attention.head_dim);
  ev.stages = table;
  ev.dropped = dropped;
  ev.requested = written.size() + dropped;
  const size_t rows = static_cast<size_t>(max_rows), orow = rows * static_cast<size_t>(ev.head_dim);
  ev.headers.reserve(written.size());
  ev.m.reserve(written.size() * rows);
  ev.l.reserve(written.size() * rows);
  ev.o.reserve(written.size() * orow);
  for (int64_t s : written) {
    const size_t at = static_cast<size_t>(s);
    ev.headers.push_back(headers[s]);
    ev.m.insert(ev.m.end(), m + at * rows, m + (at + 1) * rows);
    ev.l.insert(ev.l.end(), l + at * rows, l + (at + 1) * rows);
    ev.o.insert(ev.o.end(), o + at * orow, o + (at + 1) * orow);
  }
  state_->events = std::move(ev);
  state_->events_set = true;
}

int64_t TraceWriter::num_events() const { return static_cast<int64_t>(state_->events.size()); }
uint64_t TraceWriter::dropped_events() const { return state_->events.dropped; }

void TraceWriter::write(const std::string& path) const {
  const State& st = *state_;
  if (!st.events_set)
    refuse("no events were collected: call Recorder::collect (or TraceWriter::set_events) before write");
  if (!st.inputs)
    refuse("no inputs: call set_inputs(Q, K, V) before write; the reference computes every event from them");
  // Each event checked here first, so that a problem is told with what to change.
  for (size_t i = 0; i < st.events.size(); ++i) {
    const EventHeader& h = st.events.headers[i];
    const std::string problem =
        ts::event_header_problem(h, st.stage_table.size(), st.spec, st.events.max_rows, kMaxKeyRanges);
    if (problem.empty()) continue;
    std::string hint;
    if (h.stage < 0 || static_cast<size_t>(h.stage) >= st.stage_table.size())
      hint = "; declare every stage the kernel writes in the Recorder's stage table, and pass its index as the stage";
    else if (h.rows > st.events.max_rows)
      hint = "; start the recording with BufferOptions::max_rows >= " + std::to_string(h.rows);
    else if (h.num_key_ranges > kMaxKeyRanges)
      hint = "; an event holds at most " + std::to_string(kMaxKeyRanges) +
             " key ranges (StateDesc::keys): merge adjacent ranges or record the state in parts";
    const std::string stage = h.stage >= 0 && static_cast<size_t>(h.stage) < st.stage_table.size()
                                  ? "'" + st.stage_table[static_cast<size_t>(h.stage)].name + "'"
                                  : std::to_string(h.stage);
    refuse("the kernel recorded an event that cannot be stored (stage " + stage + ", batch " + std::to_string(h.batch) +
           ", head " + std::to_string(h.head) + ", query rows from " + std::to_string(h.q_begin) + ", block " +
           std::to_string(h.block) + ", step " + std::to_string(h.step) + "): " + problem + hint);
  }
  ts::TraceContents contents;
  contents.events = &st.events;
  contents.attention = st.spec;
  contents.metadata = st.metadata;
  contents.metadata.emplace("captured_at", utc_now());
  contents.inputs = &*st.inputs;
  contents.output = st.output ? &*st.output : nullptr;
  contents.output_lse = st.output_lse ? &*st.output_lse : nullptr;
  if (contents.output_lse && !contents.output)
    refuse("an output LSE without the output: pass both to set_output");
  try {
    ts::write_trace(path, contents);
  } catch (const std::exception& e) {
    refuse(std::string("cannot write the trace: ") + e.what());
  }
}

}  // namespace tilescope
