#include "instrumentation/trace/trace_file.h"

#include <charconv>
#include <limits>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/tensor_files.h"

namespace ts {

namespace {

// EventHeader's int32 fields and their columns: one list for the writer and the reader.
struct HeaderColumn {
  std::string_view name;
  int32_t EventHeader::*field;
};
constexpr HeaderColumn kHeaderColumns[] = {
    {trace_tensor::stage, &EventHeader::stage},
    {trace_tensor::convention, &EventHeader::convention},
    {trace_tensor::batch, &EventHeader::batch},
    {trace_tensor::head, &EventHeader::head},
    {trace_tensor::q_tile, &EventHeader::q_tile},
    {trace_tensor::kv_tile_begin, &EventHeader::kv_tile_begin},
    {trace_tensor::kv_tile_end, &EventHeader::kv_tile_end},
    {trace_tensor::split, &EventHeader::split},
    {trace_tensor::step, &EventHeader::step},
    {trace_tensor::rows, &EventHeader::rows},
    {trace_tensor::where, &EventHeader::where},
    {trace_tensor::block, &EventHeader::block},
};
constexpr size_t kNumHeaderColumns = std::size(kHeaderColumns);

constexpr std::string_view kReservedPrefixes[] = {"events.", "inputs.", "output."};
constexpr std::string_view kWriterKeys[] = {
    trace_meta::format,         trace_meta::block_m,          trace_meta::block_n,
    trace_meta::head_dim,       trace_meta::dropped_events,   trace_meta::requested_events,
    trace_meta::stage_names,    trace_meta::convention_names,
};

std::string stage_names_json() {
  nlohmann::json names = nlohmann::json::array();
  for (const char* n : kStageNames) names.push_back(n);
  return names.dump();
}

std::string shape_of(const std::vector<int64_t>& shape) { return shape_string(shape); }

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& what) {
  throw FileWriteError(path, "cannot write trace " + path.string() + ": " + what);
}

void check_events_for_writing(const std::filesystem::path& path, const CapturedEvents& ev) {
  if (ev.block_m <= 0 || ev.head_dim <= 0 || ev.block_n < 0)
    refuse(path, "block_m " + std::to_string(ev.block_m) + ", block_n " +
                     std::to_string(ev.block_n) + ", head_dim " + std::to_string(ev.head_dim) +
                     " are not valid tile sizes");
  const size_t n = ev.size(), bm = static_cast<size_t>(ev.block_m);
  const size_t hd = static_cast<size_t>(ev.head_dim);
  if (ev.m.size() != n * bm || ev.l.size() != n * bm || ev.o.size() != n * bm * hd)
    refuse(path, "payload sizes (m " + std::to_string(ev.m.size()) + ", l " +
                     std::to_string(ev.l.size()) + ", o " + std::to_string(ev.o.size()) +
                     ") do not match " + std::to_string(n) + " events of block_m " +
                     std::to_string(bm) + " and head_dim " + std::to_string(hd));
  for (size_t i = 0; i < n; ++i)
    if (std::string p = event_header_problem(ev.headers[i], ev.block_m); !p.empty())
      refuse(path, "event " + std::to_string(i) + ": " + p);
}

void check_inputs_for_writing(const std::filesystem::path& path, const TraceInputs& in,
                              int32_t head_dim) {
  const auto p = static_cast<int64_t>(in.pairs.size());
  for (const HostTensor* t : {&in.q, &in.k, &in.v}) {
    if (t->shape.size() != 3 || t->shape[0] != p || t->shape[2] != head_dim)
      refuse(path, "inputs q, k, v must be [pairs=" + std::to_string(p) + ", seq, head_dim=" +
                       std::to_string(head_dim) + "], got " + shape_of(t->shape));
    if (t->dtype != in.q.dtype) refuse(path, "inputs q, k, v must share one dtype");
    if (t->bytes.size() != static_cast<size_t>(t->numel()) * t->element_size())
      refuse(path, "an input tensor's bytes do not match its shape " + shape_of(t->shape));
  }
  if (in.k.shape != in.v.shape) refuse(path, "inputs k and v must have the same shape");
  for (const auto& [b, h] : in.pairs)
    if (b < 0 || h < 0) refuse(path, "an input pair has a negative batch or head");
}

bool parse_decimal(const std::string& s, uint64_t& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc{} && ptr == end && !s.empty();
}

}  // namespace

std::string event_header_problem(const EventHeader& h, int32_t block_m) {
  const auto bad = [](const char* field, int32_t v, const std::string& rule) {
    return std::string(field) + " = " + std::to_string(v) + " (" + rule + ")";
  };
  if (h.stage < 0 || h.stage >= kNumStages)
    return bad("stage", h.stage, "stages are 0.." + std::to_string(kNumStages - 1));
  if (h.convention != 0 && h.convention != 1)
    return bad("convention", h.convention, "0 unnormalized or 1 normalized");
  if (h.rows < 0 || h.rows > block_m)
    return bad("rows", h.rows, "must be in [0, block_m = " + std::to_string(block_m) + "]");
  if (h.batch < 0) return bad("batch", h.batch, "must be >= 0");
  if (h.head < 0) return bad("head", h.head, "must be >= 0");
  if (h.q_tile < 0) return bad("q_tile", h.q_tile, "must be >= 0");
  if (h.kv_tile_begin < 0) return bad("kv_tile_begin", h.kv_tile_begin, "must be >= 0");
  if (h.kv_tile_end < h.kv_tile_begin)
    return bad("kv_tile_end", h.kv_tile_end,
               "must be >= kv_tile_begin = " + std::to_string(h.kv_tile_begin));
  if (h.split < -1) return bad("split", h.split, "must be >= -1");
  if (h.step < 0) return bad("step", h.step, "must be >= 0");
  if (h.where < -1) return bad("where", h.where, "must be >= -1");
  if (h.block < 0) return bad("block", h.block, "must be >= 0");
  return {};
}

void write_trace(const std::filesystem::path& path, const TraceContents& c) {
  if (c.events == nullptr) refuse(path, "no events given");
  const CapturedEvents& ev = *c.events;
  check_events_for_writing(path, ev);
  const size_t n = ev.size();
  const std::vector<int64_t> n_shape = {static_cast<int64_t>(n)};

  std::map<std::string, std::string> metadata = c.metadata;
  for (std::string_view k : kWriterKeys)
    if (metadata.count(std::string(k)) != 0)
      refuse(path, "metadata key '" + std::string(k) + "' is reserved for the trace writer");
  metadata[std::string(trace_meta::format)] = std::to_string(kTraceFormatVersion);
  metadata[std::string(trace_meta::block_m)] = std::to_string(ev.block_m);
  metadata[std::string(trace_meta::block_n)] = std::to_string(ev.block_n);
  metadata[std::string(trace_meta::head_dim)] = std::to_string(ev.head_dim);
  metadata[std::string(trace_meta::dropped_events)] = std::to_string(ev.dropped);
  metadata[std::string(trace_meta::requested_events)] = std::to_string(ev.requested);
  metadata[std::string(trace_meta::stage_names)] = stage_names_json();
  metadata[std::string(trace_meta::convention_names)] = R"(["unnormalized", "normalized"])";

  // Headers are stored column by column (small next to the payloads, which are not copied).
  std::vector<std::vector<int32_t>> columns(kNumHeaderColumns, std::vector<int32_t>(n));
  std::vector<int64_t> times(n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t c2 = 0; c2 < kNumHeaderColumns; ++c2)
      columns[c2][i] = ev.headers[i].*kHeaderColumns[c2].field;
    times[i] = static_cast<int64_t>(ev.headers[i].time_ns);  // same bits; numpy reads int64
  }
  std::vector<TensorToWrite> tensors;
  for (size_t c2 = 0; c2 < kNumHeaderColumns; ++c2)
    tensors.push_back({std::string(kHeaderColumns[c2].name), ElemType::I32, n_shape,
                       columns[c2].data()});
  tensors.push_back({std::string(trace_tensor::time_ns), ElemType::I64, n_shape, times.data()});
  const int64_t bm = ev.block_m, hd = ev.head_dim, ni = static_cast<int64_t>(n);
  tensors.push_back({std::string(trace_tensor::m), ElemType::F32, {ni, bm}, ev.m.data()});
  tensors.push_back({std::string(trace_tensor::l), ElemType::F32, {ni, bm}, ev.l.data()});
  tensors.push_back({std::string(trace_tensor::o), ElemType::F32, {ni, bm, hd}, ev.o.data()});

  std::vector<int32_t> pairs;
  if (c.inputs != nullptr) {
    check_inputs_for_writing(path, *c.inputs, ev.head_dim);
    for (const auto& [b, h] : c.inputs->pairs) pairs.insert(pairs.end(), {b, h});
    tensors.push_back({std::string(trace_tensor::inputs_pairs), ElemType::I32,
                       {static_cast<int64_t>(c.inputs->pairs.size()), 2}, pairs.data()});
    tensors.push_back(tensor_to_write(std::string(trace_tensor::inputs_q), c.inputs->q));
    tensors.push_back(tensor_to_write(std::string(trace_tensor::inputs_k), c.inputs->k));
    tensors.push_back(tensor_to_write(std::string(trace_tensor::inputs_v), c.inputs->v));
  }
  if (c.output != nullptr) {
    const HostTensor& out = *c.output;
    if (out.shape.size() != 4 || out.shape[3] != ev.head_dim ||
        out.bytes.size() != static_cast<size_t>(out.numel()) * out.element_size())
      refuse(path, "the output must be [batch, heads, seq_q, head_dim=" +
                       std::to_string(ev.head_dim) + "], got " + shape_of(out.shape));
    tensors.push_back(tensor_to_write(std::string(trace_tensor::output), out));
  }
  for (const TensorToWrite& t : c.extra) {
    for (std::string_view prefix : kReservedPrefixes)
      if (t.name.starts_with(prefix))
        refuse(path, "extra tensor '" + t.name + "' uses the reserved prefix '" +
                         std::string(prefix) + "'");
    tensors.push_back(t);
  }
  write_safetensors(path, tensors, metadata);
}

TraceFile TraceFile::open(const std::filesystem::path& path) {
  TraceFile trace(SafetensorsFile::open(path));
  trace.check_schema();
  return trace;
}

TraceFile TraceFile::parse(std::shared_ptr<const ByteSource> source, std::string display_name) {
  TraceFile trace(SafetensorsFile::parse(std::move(source), std::move(display_name)));
  trace.check_schema();
  return trace;
}

const std::string* TraceFile::metadata_value(std::string_view key) const {
  auto it = metadata().find(std::string(key));
  return it == metadata().end() ? nullptr : &it->second;
}

void TraceFile::check_schema() {
  const auto meta_number = [&](std::string_view key, uint64_t max) -> uint64_t {
    const std::string* v = metadata_value(key);
    if (v == nullptr)
      throw file_.error("metadata key '" + std::string(key) +
                        "' is missing (not a tilescope trace, or a damaged one)");
    uint64_t x = 0;
    if (!parse_decimal(*v, x) || x > max)
      throw file_.error("metadata '" + std::string(key) + "' = '" + *v +
                        "' is not a whole number in [0, " + std::to_string(max) + "]");
    return x;
  };
  const uint64_t version = meta_number(trace_meta::format, std::numeric_limits<int32_t>::max());
  if (version != static_cast<uint64_t>(kTraceFormatVersion))
    throw file_.error("trace format " + std::to_string(version) + " is not supported (this " +
                      "build reads format " + std::to_string(kTraceFormatVersion) +
                      "; a newer tilescope may read it)");
  constexpr uint64_t kMaxTile = 1u << 16;
  block_m_ = static_cast<int32_t>(meta_number(trace_meta::block_m, kMaxTile));
  block_n_ = static_cast<int32_t>(meta_number(trace_meta::block_n, kMaxTile));
  head_dim_ = static_cast<int32_t>(meta_number(trace_meta::head_dim, kMaxTile));
  if (block_m_ == 0 || head_dim_ == 0) throw file_.error("block_m and head_dim must be positive");
  dropped_ = meta_number(trace_meta::dropped_events, std::numeric_limits<uint64_t>::max());
  requested_ = meta_number(trace_meta::requested_events, std::numeric_limits<uint64_t>::max());

  const auto required = [&](std::string_view name) -> const TensorInfo& {
    if (const TensorInfo* t = file_.find(name)) return *t;
    throw file_.error("required tensor '" + std::string(name) +
                      "' is missing (not a tilescope trace, or a damaged one)");
  };
  // Columns: all 1-D with one length N.
  const TensorInfo& first = required(kHeaderColumns[0].name);
  if (first.shape.size() != 1)
    throw file_.error("tensor '" + first.name + "' must be 1-D [N], has shape " +
                      shape_of(first.shape));
  n_ = static_cast<size_t>(first.shape[0]);
  const auto expect_shape = [&](const TensorInfo& t, const std::vector<int64_t>& shape) {
    if (t.shape != shape)
      throw file_.error("tensor '" + t.name + "' has shape " + shape_of(t.shape) + ", expected " +
                        shape_of(shape) + " (N = " + std::to_string(n_) + " events from '" +
                        first.name + "', block_m = " + std::to_string(block_m_) +
                        ", head_dim = " + std::to_string(head_dim_) + ")");
  };
  const auto ni = static_cast<int64_t>(n_);
  columns_.clear();
  for (const HeaderColumn& col : kHeaderColumns) {
    const TensorInfo& t = required(col.name);
    expect_shape(t, {ni});
    columns_.push_back(file_.view<int32_t>(t));
  }
  const TensorInfo& time = required(trace_tensor::time_ns);
  expect_shape(time, {ni});
  time_ = file_.view<int64_t>(time);
  const TensorInfo& m = required(trace_tensor::m);
  const TensorInfo& l = required(trace_tensor::l);
  const TensorInfo& o = required(trace_tensor::o);
  expect_shape(m, {ni, block_m_});
  expect_shape(l, {ni, block_m_});
  expect_shape(o, {ni, block_m_, head_dim_});
  m_ = file_.view<float>(m);
  l_ = file_.view<float>(l);
  o_ = file_.view<float>(o);

  for (size_t i = 0; i < n_; ++i)
    if (std::string p = event_header_problem(header(i), block_m_); !p.empty())
      throw file_.error("event " + std::to_string(i) + ": " + p);

  // Optional inputs: all four tensors or none, consistent with each other and the events.
  const TensorInfo* pairs = file_.find(trace_tensor::inputs_pairs);
  const TensorInfo* q = file_.find(trace_tensor::inputs_q);
  const TensorInfo* k = file_.find(trace_tensor::inputs_k);
  const TensorInfo* v = file_.find(trace_tensor::inputs_v);
  if (pairs || q || k || v) {
    if (!(pairs && q && k && v))
      throw file_.error("inputs are incomplete: inputs.pairs, inputs.q, inputs.k and inputs.v "
                        "must all be present or all absent");
    if (pairs->shape.size() != 2 || pairs->shape[1] != 2)
      throw file_.error("tensor 'inputs.pairs' must be [P, 2], has shape " +
                        shape_of(pairs->shape));
    const TensorView<int32_t> pv = file_.view<int32_t>(*pairs);
    for (size_t i = 0; i < pv.size(); ++i)
      if (pv[i] < 0) throw file_.error("tensor 'inputs.pairs' holds a negative batch or head");
    for (const TensorInfo* t : {q, k, v}) {
      if (!dtype_of_elem_type(t->type) || t->type != q->type)
        throw file_.error("tensor '" + t->name + "' has dtype " + std::string(to_string(t->type)) +
                          "; inputs must all be F32, F16 or BF16 alike");
      if (t->shape.size() != 3 || t->shape[0] != pairs->shape[0] || t->shape[2] != head_dim_)
        throw file_.error("tensor '" + t->name + "' has shape " + shape_of(t->shape) +
                          ", expected [P = " + std::to_string(pairs->shape[0]) +
                          ", seq, head_dim = " + std::to_string(head_dim_) + "]");
    }
    if (k->shape != v->shape) throw file_.error("tensors 'inputs.k' and 'inputs.v' differ in shape");
  }
  if (const TensorInfo* out = file_.find(trace_tensor::output)) {
    if (!dtype_of_elem_type(out->type))
      throw file_.error("tensor 'output.o' has dtype " + std::string(to_string(out->type)) +
                        ", expected F32, F16 or BF16");
    if (out->shape.size() != 4 || out->shape[3] != head_dim_)
      throw file_.error("tensor 'output.o' has shape " + shape_of(out->shape) +
                        ", expected [batch, heads, seq_q, head_dim = " +
                        std::to_string(head_dim_) + "]");
  }
}

EventHeader TraceFile::header(size_t i) const {
  EventHeader h{};
  for (size_t c = 0; c < kNumHeaderColumns; ++c) h.*kHeaderColumns[c].field = columns_[c][i];
  h.time_ns = static_cast<uint64_t>(time_[i]);
  return h;
}

std::array<size_t, kNumStages> TraceFile::events_per_stage() const {
  std::array<size_t, kNumStages> counts{};
  const TensorView<int32_t>& stages = columns_[0];
  for (size_t i = 0; i < n_; ++i) ++counts[static_cast<size_t>(stages[i])];  // checked at open
  return counts;
}

std::optional<TraceInputs> TraceFile::read_inputs() const {
  if (!has_inputs()) return std::nullopt;
  TraceInputs in;
  const TensorView<int32_t> pv = file_.view<int32_t>(trace_tensor::inputs_pairs);
  for (size_t i = 0; i + 1 < pv.size(); i += 2) in.pairs.push_back({pv[i], pv[i + 1]});
  in.q = read_host_tensor(file_, file_.at(trace_tensor::inputs_q));
  in.k = read_host_tensor(file_, file_.at(trace_tensor::inputs_k));
  in.v = read_host_tensor(file_, file_.at(trace_tensor::inputs_v));
  return in;
}

std::optional<HostTensor> TraceFile::read_output() const {
  if (!has_output()) return std::nullopt;
  return read_host_tensor(file_, file_.at(trace_tensor::output));
}

CapturedEvents TraceFile::to_captured_events() const {
  CapturedEvents ev;
  ev.block_m = block_m_;
  ev.block_n = block_n_;
  ev.head_dim = head_dim_;
  ev.dropped = dropped_;
  ev.requested = requested_;
  ev.headers.reserve(n_);
  for (size_t i = 0; i < n_; ++i) ev.headers.push_back(header(i));
  ev.m.assign(m_.span().begin(), m_.span().end());
  ev.l.assign(l_.span().begin(), l_.span().end());
  ev.o.assign(o_.span().begin(), o_.span().end());
  return ev;
}

}  // namespace ts
