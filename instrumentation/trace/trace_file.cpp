#include "instrumentation/trace/trace_file.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/host_tensor_entry.h"
#include "instrumentation/trace/safetensors_header.h"
#include "instrumentation/trace/write_target.h"
#include "instrumentation/trace/trace_format_v1.h"

namespace ts {

namespace {

// EventHeader's int32 fields and their column names: the one list for the writer and the reader
// (the key ranges and the time have columns of their own shapes).
struct HeaderColumn {
  std::string_view name;
  int32_t EventHeader::*field;
};
constexpr HeaderColumn kHeaderColumns[] = {
    {"stage", &EventHeader::stage},   {"convention", &EventHeader::convention},
    {"batch", &EventHeader::batch},   {"head", &EventHeader::head},
    {"kv_head", &EventHeader::kv_head}, {"q_begin", &EventHeader::q_begin},
    {"rows", &EventHeader::rows},     {"split", &EventHeader::split},
    {"step", &EventHeader::step},     {"block", &EventHeader::block},
    {"where", &EventHeader::where},   {"num_key_ranges", &EventHeader::num_key_ranges},
};

std::string column_name(std::string_view prefix, std::string_view field) {
  return std::string(prefix) + std::string(field);
}

constexpr std::string_view kReservedPrefixes[] = {"events.", "missing.", "inputs.", "output."};
constexpr std::string_view kWriterKeys[] = {
    trace_meta::format,         trace_meta::max_rows, trace_meta::head_dim,  trace_meta::dropped_events,
    trace_meta::requested_events, trace_meta::stages, trace_meta::attention,
};

// The most payload rows and head-dim columns the reader takes (the writer refuses more).
constexpr uint64_t kMaxRowsLimit = 1u << 16;

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& what) {
  throw FileWriteError(path, "cannot write trace " + path.string() + ": " + what);
}

bool parse_decimal(const std::string& s, uint64_t& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc{} && ptr == end && !s.empty();
}

// Header columns of `headers` (events or missing), ready to write under `prefix`.
struct HeaderTensors {
  std::vector<std::vector<int32_t>> columns;
  std::vector<int32_t> key_ranges;  // [N, R, 2]
  std::vector<int64_t> times;
  int32_t ranges = 1;

  HeaderTensors(const std::vector<EventHeader>& headers, int32_t r) : ranges(r) {
    const size_t n = headers.size();
    columns.assign(std::size(kHeaderColumns), std::vector<int32_t>(n));
    key_ranges.assign(n * static_cast<size_t>(r) * 2, 0);
    times.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const EventHeader& h = headers[i];
      for (size_t c = 0; c < std::size(kHeaderColumns); ++c) columns[c][i] = h.*kHeaderColumns[c].field;
      for (int32_t k = 0; k < std::min(h.num_key_ranges, r); ++k) {
        key_ranges[(i * static_cast<size_t>(r) + static_cast<size_t>(k)) * 2] = h.keys[k].begin;
        key_ranges[(i * static_cast<size_t>(r) + static_cast<size_t>(k)) * 2 + 1] = h.keys[k].end;
      }
      times[i] = static_cast<int64_t>(h.time_ns);  // same bits; numpy reads int64
    }
  }
  void append(std::vector<TensorToWrite>& out, std::string_view prefix) const {
    const int64_t n = static_cast<int64_t>(times.size());
    for (size_t c = 0; c < std::size(kHeaderColumns); ++c)
      out.push_back({column_name(prefix, kHeaderColumns[c].name), ElemType::I32, {n}, columns[c].data()});
    out.push_back({column_name(prefix, trace_tensor::key_ranges), ElemType::I32, {n, ranges, 2}, key_ranges.data()});
    out.push_back({column_name(prefix, trace_tensor::time_ns), ElemType::I64, {n}, times.data()});
  }
};

void check_pairs(const std::filesystem::path& path, const std::vector<std::array<int32_t, 2>>& pairs,
                 int64_t batch, int64_t heads, const char* what) {
  std::set<std::array<int32_t, 2>> seen;
  for (const auto& p : pairs) {
    if (p[0] < 0 || p[0] >= batch || p[1] < 0 || p[1] >= heads)
      refuse(path, std::string(what) + " pair (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) +
                       ") is outside the attention description");
    if (!seen.insert(p).second)
      refuse(path, std::string(what) + " pair (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) +
                       ") is given twice");
  }
}

void check_inputs_for_writing(const std::filesystem::path& path, const HeadInputs& in, const AttentionSpec& s) {
  check_pairs(path, in.q_pairs, s.batch, s.heads_q, "an input query");
  check_pairs(path, in.kv_pairs, s.batch, s.heads_kv, "an input kv");
  const auto check = [&](const HostTensor& t, size_t pairs, int64_t seq, const char* name) {
    const std::vector<int64_t> want = {static_cast<int64_t>(pairs), seq, s.head_dim};
    if (t.shape != want)
      refuse(path, std::string("inputs.") + name + " must be " + shape_string(want) + ", got " + shape_string(t.shape));
    if (t.dtype != s.dtype)
      refuse(path, std::string("inputs.") + name + " is " + std::string(to_string(t.dtype)) +
                       "; the attention description says " + std::string(to_string(s.dtype)));
    if (t.bytes.size() != static_cast<size_t>(t.numel()) * t.element_size())
      refuse(path, std::string("inputs.") + name + "'s bytes do not match its shape");
  };
  check(in.q, in.q_pairs.size(), s.seq_q, "q");
  check(in.k, in.kv_pairs.size(), s.seq_kv, "k");
  check(in.v, in.kv_pairs.size(), s.seq_kv, "v");
}

}  // namespace

std::string event_header_problem(const EventHeader& h, size_t num_stages, const AttentionSpec& s, int32_t max_rows,
                                 int32_t max_key_ranges) {
  const auto bad = [](const char* field, int64_t v, const std::string& rule) {
    return std::string(field) + " = " + std::to_string(v) + " (" + rule + ")";
  };
  if (h.stage < 0 || static_cast<size_t>(h.stage) >= num_stages)
    return bad("stage", h.stage, "the stage table has " + std::to_string(num_stages) + " stages");
  if ((h.convention & ~kConventionMask) != 0)
    return bad("convention", h.convention, "known bits are " + std::to_string(kConventionMask));
  if (h.batch < 0 || h.batch >= s.batch)
    return bad("batch", h.batch, "the attention has " + std::to_string(s.batch) + " batches");
  if (h.head < 0 || h.head >= s.heads_q)
    return bad("head", h.head, "the attention has " + std::to_string(s.heads_q) + " query heads");
  if (h.kv_head < -1 || h.kv_head >= s.heads_kv)
    return bad("kv_head", h.kv_head, "the attention has " + std::to_string(s.heads_kv) + " kv heads; -1: not said");
  if (h.rows < 0 || h.rows > max_rows)
    return bad("rows", h.rows, "must be in [0, max_rows = " + std::to_string(max_rows) + "]");
  if (h.q_begin < 0 || int64_t{h.q_begin} + h.rows > s.seq_q)
    return bad("q_begin", h.q_begin, "rows [q_begin, q_begin + " + std::to_string(h.rows) + ") must lie in [0, seq_q = " +
                                         std::to_string(s.seq_q) + ")");
  if (h.num_key_ranges < 0 || h.num_key_ranges > std::min(max_key_ranges, kMaxKeyRanges))
    return bad("num_key_ranges", h.num_key_ranges,
               "must be in [0, " + std::to_string(std::min(max_key_ranges, kMaxKeyRanges)) + "]");
  for (int32_t k = 0; k < h.num_key_ranges; ++k)
    if (h.keys[k].begin < 0 || h.keys[k].end < h.keys[k].begin || h.keys[k].end > s.seq_kv)
      return "key range " + std::to_string(k) + " = [" + std::to_string(h.keys[k].begin) + ", " +
             std::to_string(h.keys[k].end) + ") (must lie in [0, seq_kv = " + std::to_string(s.seq_kv) +
             "] with begin <= end)";
  if (h.split < -1) return bad("split", h.split, "must be >= -1");
  if (h.step < 0) return bad("step", h.step, "must be >= 0");
  if (h.block < -1) return bad("block", h.block, "must be >= -1");
  if (h.where < -1) return bad("where", h.where, "must be >= -1");
  return {};
}

void check_replaces_only_a_trace(const std::filesystem::path& path) {
  const std::filesystem::path target = resolve_file_target(path);  // refuses what is no regular file
  std::error_code ec;
  if (!std::filesystem::exists(target, ec) && !ec) return;
  const auto refuse_file = [&](const std::string& what) {
    refuse(path, "it exists and " + what + "; a trace replaces only a trace: choose another path, or move the file away");
  };
  const uintmax_t size = std::filesystem::file_size(target, ec);
  if (ec) refuse_file("cannot be read to tell whether it is a trace (" + ec.message() + ")");
  if (size == 0) return;
  // Its header, checked as the reader checks it (its data are not read): a damaged trace,
  // truncated say, is refused too.
  SafetensorsHeader header;
  try {
    header = read_safetensors_header(target);
  } catch (const TraceFormatError&) {
    refuse_file(std::string("is not a tilescope trace (") +
                (size < 8 ? "too short for a safetensors file" : "not a valid safetensors file") + ")");
  } catch (const FileReadError& e) {
    refuse_file(std::string("cannot be read to tell whether it is a trace (") + e.what() + ")");
  }
  if (header.metadata.count(std::string(trace_meta::format)) == 0)
    refuse_file("is not a tilescope trace (a safetensors file of something else)");
}

void write_trace(const std::filesystem::path& path, const TraceContents& c) {
  check_replaces_only_a_trace(path);
  if (c.events == nullptr) refuse(path, "no events given");
  const CapturedEvents& ev = *c.events;
  try {
    validate(c.attention);
  } catch (const std::exception& e) {
    refuse(path, std::string("the attention description is invalid: ") + e.what());
  }
  if (ev.stages.empty() || ev.stages.size() > kMaxStages)
    refuse(path, "the stage table must declare 1 to " + std::to_string(kMaxStages) + " stages");
  try {
    parse_stage_table(stage_table_json(ev.stages));  // the reader's rules
  } catch (const std::exception& e) {
    refuse(path, std::string("the stage table is invalid: ") + e.what());
  }
  if (ev.max_rows < 0 || static_cast<uint64_t>(ev.max_rows) > kMaxRowsLimit)
    refuse(path, "max_rows " + std::to_string(ev.max_rows) + " is outside [0, " + std::to_string(kMaxRowsLimit) +
                     "] (rows of an event's payload)");
  if (ev.head_dim != c.attention.head_dim)
    refuse(path, "max_rows " + std::to_string(ev.max_rows) + " and head_dim " + std::to_string(ev.head_dim) +
                     " do not fit the attention description (head_dim " + std::to_string(c.attention.head_dim) + ")");
  const size_t n = ev.size(), rows = static_cast<size_t>(ev.max_rows), hd = static_cast<size_t>(ev.head_dim);
  if (ev.m.size() != n * rows || ev.l.size() != n * rows || ev.o.size() != n * rows * hd)
    refuse(path, "payload sizes (m " + std::to_string(ev.m.size()) + ", l " + std::to_string(ev.l.size()) + ", o " +
                     std::to_string(ev.o.size()) + ") do not match " + std::to_string(n) + " events of " +
                     std::to_string(rows) + " rows and head_dim " + std::to_string(hd));
  int32_t ranges = 1;
  for (const auto* list : {&ev.headers, &ev.missing})
    for (size_t i = 0; i < list->size(); ++i) {
      const EventHeader& h = (*list)[i];
      if (std::string p = event_header_problem(h, ev.stages.size(), c.attention, ev.max_rows); !p.empty())
        refuse(path, std::string(list == &ev.headers ? "event " : "missing event ") + std::to_string(i) + ": " + p);
      ranges = std::max(ranges, h.num_key_ranges);
    }

  // Compact payloads: rows are stored up to the most any event holds, not up to the capacity
  // its kernel reserved (a decode trace's events hold 1 row of a 16-row tile).
  int32_t stored_rows = n == 0 && ev.missing.empty() ? ev.max_rows : 0;
  for (const auto* list : {&ev.headers, &ev.missing})
    for (const EventHeader& h : *list) stored_rows = std::max(stored_rows, h.rows);
  std::vector<float> packed_m, packed_l, packed_o;
  const float *m_data = ev.m.data(), *l_data = ev.l.data(), *o_data = ev.o.data();
  if (stored_rows < ev.max_rows) {
    const size_t r = static_cast<size_t>(stored_rows);
    packed_m.resize(n * r);
    packed_l.resize(n * r);
    packed_o.resize(n * r * hd);
    for (size_t i = 0; i < n; ++i) {
      std::copy_n(ev.m.data() + i * rows, r, packed_m.data() + i * r);
      std::copy_n(ev.l.data() + i * rows, r, packed_l.data() + i * r);
      std::copy_n(ev.o.data() + i * rows * hd, r * hd, packed_o.data() + i * r * hd);
    }
    m_data = packed_m.data();
    l_data = packed_l.data();
    o_data = packed_o.data();
  }

  std::map<std::string, std::string> metadata = c.metadata;
  for (std::string_view k : kWriterKeys)
    if (metadata.count(std::string(k)) != 0)
      refuse(path, "metadata key '" + std::string(k) + "' is reserved for the trace writer");
  metadata[std::string(trace_meta::format)] = std::to_string(kTraceFormatVersion);
  metadata[std::string(trace_meta::max_rows)] = std::to_string(stored_rows);
  metadata[std::string(trace_meta::head_dim)] = std::to_string(ev.head_dim);
  metadata[std::string(trace_meta::dropped_events)] = std::to_string(ev.dropped);
  metadata[std::string(trace_meta::requested_events)] = std::to_string(ev.requested);
  metadata[std::string(trace_meta::stages)] = stage_table_json(ev.stages);
  nlohmann::json spec_json;
  to_json(spec_json, c.attention);
  metadata[std::string(trace_meta::attention)] = spec_json.dump();

  // Headers are stored column by column (small next to the payloads, which are not copied).
  const HeaderTensors events(ev.headers, ranges), missing(ev.missing, ranges);
  std::vector<TensorToWrite> tensors;
  events.append(tensors, trace_tensor::events_prefix);
  const int64_t ni = static_cast<int64_t>(n), ri = stored_rows, hi = ev.head_dim;
  tensors.push_back({std::string(trace_tensor::m), ElemType::F32, {ni, ri}, m_data});
  tensors.push_back({std::string(trace_tensor::l), ElemType::F32, {ni, ri}, l_data});
  tensors.push_back({std::string(trace_tensor::o), ElemType::F32, {ni, ri, hi}, o_data});
  if (!ev.missing.empty()) missing.append(tensors, trace_tensor::missing_prefix);

  std::vector<int32_t> q_pairs, kv_pairs;
  if (c.inputs != nullptr) {
    check_inputs_for_writing(path, *c.inputs, c.attention);
    for (const auto& [b, h] : c.inputs->q_pairs) q_pairs.insert(q_pairs.end(), {b, h});
    for (const auto& [b, h] : c.inputs->kv_pairs) kv_pairs.insert(kv_pairs.end(), {b, h});
    tensors.push_back({std::string(trace_tensor::inputs_q_pairs), ElemType::I32,
                       {static_cast<int64_t>(c.inputs->q_pairs.size()), 2}, q_pairs.data()});
    tensors.push_back({std::string(trace_tensor::inputs_kv_pairs), ElemType::I32,
                       {static_cast<int64_t>(c.inputs->kv_pairs.size()), 2}, kv_pairs.data()});
    tensors.push_back(tensor_to_write(std::string(trace_tensor::inputs_q), c.inputs->q));
    tensors.push_back(tensor_to_write(std::string(trace_tensor::inputs_k), c.inputs->k));
    tensors.push_back(tensor_to_write(std::string(trace_tensor::inputs_v), c.inputs->v));
  }
  const AttentionSpec& s = c.attention;
  const std::vector<int64_t> out_shape = {s.batch, s.heads_q, s.seq_q, s.head_dim};
  if (c.output != nullptr) {
    const HostTensor& out = *c.output;
    if (out.shape != out_shape || out.bytes.size() != static_cast<size_t>(out.numel()) * out.element_size())
      refuse(path, "the output must be " + shape_string(out_shape) + ", got " + shape_string(out.shape));
    tensors.push_back(tensor_to_write(std::string(trace_tensor::output), out));
  }
  if (c.output_lse != nullptr) {
    if (c.output_lse->size() != static_cast<size_t>(s.batch * s.heads_q * s.seq_q))
      refuse(path, "the output's LSE must hold batch x heads_q x seq_q values");
    tensors.push_back({std::string(trace_tensor::output_lse), ElemType::F32, {s.batch, s.heads_q, s.seq_q},
                       c.output_lse->data()});
  }
  for (const TensorToWrite& t : c.extra) {
    for (std::string_view prefix : kReservedPrefixes)
      if (t.name.starts_with(prefix))
        refuse(path, "extra tensor '" + t.name + "' uses the reserved prefix '" + std::string(prefix) + "'");
    tensors.push_back(t);
  }
  // Again just before the rename: what is at the path may have changed during a long write.
  write_safetensors(path, tensors, metadata, c.progress, [&] { check_replaces_only_a_trace(path); });
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
  const std::string* version = metadata_value(trace_meta::format);
  if (version == nullptr)
    throw file_.error("metadata key '" + std::string(trace_meta::format) +
                      "' is missing (not a tilescope trace, or a damaged one)");
  if (*version == "1") {
    format_ = 1;
    Format1Trace v1 = read_format_1(file_);
    attention_ = std::move(v1.attention);
    stages_ = std::move(v1.stages);
    max_rows_ = v1.max_rows;
    head_dim_ = v1.head_dim;
    dropped_ = v1.dropped;
    requested_ = v1.requested;
    headers_ = std::move(v1.headers);
    missing_ = std::move(v1.missing);
    m_view_ = std::move(v1.m);
    l_view_ = std::move(v1.l);
    o_view_ = std::move(v1.o);
  } else if (*version == std::to_string(kTraceFormatVersion)) {
    check_format_2();
  } else {
    throw file_.error("trace format '" + *version + "' is not supported (this build reads formats 1 and " +
                      std::to_string(kTraceFormatVersion) + "; a newer tilescope may read it)");
  }
  m_ = m_view_.span();
  l_ = l_view_.span();
  o_ = o_view_.span();
  check_inputs_and_output();
}

void TraceFile::check_format_2() {
  const auto meta_number = [&](std::string_view key, uint64_t max) -> uint64_t {
    const std::string* v = metadata_value(key);
    if (v == nullptr)
      throw file_.error("metadata key '" + std::string(key) + "' is missing (not a tilescope trace, or a damaged one)");
    uint64_t x = 0;
    if (!parse_decimal(*v, x) || x > max)
      throw file_.error("metadata '" + std::string(key) + "' = '" + *v + "' is not a whole number in [0, " +
                        std::to_string(max) + "]");
    return x;
  };
  max_rows_ = static_cast<int32_t>(meta_number(trace_meta::max_rows, kMaxRowsLimit));
  head_dim_ = static_cast<int32_t>(meta_number(trace_meta::head_dim, kMaxRowsLimit));
  dropped_ = meta_number(trace_meta::dropped_events, std::numeric_limits<uint64_t>::max());
  requested_ = meta_number(trace_meta::requested_events, std::numeric_limits<uint64_t>::max());
  const std::string* stages = metadata_value(trace_meta::stages);
  if (stages == nullptr) throw file_.error("metadata key 'stages' (the stage table) is missing");
  try {
    stages_ = parse_stage_table(*stages);
  } catch (const std::exception& e) {
    throw file_.error(std::string("metadata 'stages': ") + e.what());
  }
  const std::string* attention = metadata_value(trace_meta::attention);
  if (attention == nullptr) throw file_.error("metadata key 'attention' (the attention description) is missing");
  try {
    const nlohmann::json j = nlohmann::json::parse(*attention);
    from_json(j, attention_);
  } catch (const std::exception& e) {
    throw file_.error(std::string("metadata 'attention': ") + e.what());
  }
  if (head_dim_ != attention_.head_dim)
    throw file_.error("metadata head_dim " + std::to_string(head_dim_) + " differs from the attention description's " +
                      std::to_string(attention_.head_dim));

  // Reads the header columns under `prefix` into owned headers, each checked.
  const auto read_headers = [&](std::string_view prefix, bool required) -> std::vector<EventHeader> {
    const std::string first_name = column_name(prefix, kHeaderColumns[0].name);
    const TensorInfo* first = file_.find(first_name);
    if (first == nullptr) {
      if (!required) return {};
      throw file_.error("required tensor '" + first_name + "' is missing (not a tilescope trace, or a damaged one)");
    }
    if (first->shape.size() != 1)
      throw file_.error("tensor '" + first->name + "' must be 1-D [N], has shape " + shape_string(first->shape));
    const int64_t n = first->shape[0];
    const auto expect = [&](const std::string& name, const std::vector<int64_t>& shape) -> const TensorInfo& {
      const TensorInfo* t = file_.find(name);
      if (t == nullptr) throw file_.error("required tensor '" + name + "' is missing");
      if (t->shape != shape)
        throw file_.error("tensor '" + name + "' has shape " + shape_string(t->shape) + ", expected " +
                          shape_string(shape) + " (N = " + std::to_string(n) + " from '" + first_name + "')");
      return *t;
    };
    std::vector<EventHeader> headers(static_cast<size_t>(n));
    for (const HeaderColumn& col : kHeaderColumns) {
      const TensorView<int32_t> v = file_.view<int32_t>(expect(column_name(prefix, col.name), {n}));
      for (size_t i = 0; i < headers.size(); ++i) headers[i].*col.field = v[i];
    }
    const std::string ranges_name = column_name(prefix, trace_tensor::key_ranges);
    const TensorInfo* ranges = file_.find(ranges_name);
    if (ranges == nullptr) throw file_.error("required tensor '" + ranges_name + "' is missing");
    if (ranges->shape.size() != 3 || ranges->shape[0] != n || ranges->shape[1] < 1 ||
        ranges->shape[1] > kMaxKeyRanges || ranges->shape[2] != 2)
      throw file_.error("tensor '" + ranges_name + "' has shape " + shape_string(ranges->shape) + ", expected [" +
                        std::to_string(n) + ", R, 2] with 1 <= R <= " + std::to_string(kMaxKeyRanges));
    const auto r = static_cast<int32_t>(ranges->shape[1]);
    const TensorView<int32_t> kv = file_.view<int32_t>(*ranges);
    const TensorView<int64_t> times = file_.view<int64_t>(expect(column_name(prefix, trace_tensor::time_ns), {n}));
    for (size_t i = 0; i < headers.size(); ++i) {
      EventHeader& h = headers[i];
      h.time_ns = static_cast<uint64_t>(times[i]);
      if (h.num_key_ranges < 0 || h.num_key_ranges > r)
        throw file_.error(std::string(prefix) + " event " + std::to_string(i) + ": num_key_ranges = " +
                          std::to_string(h.num_key_ranges) + " (the file stores " + std::to_string(r) + " per event)");
      for (int32_t k = 0; k < kMaxKeyRanges; ++k)
        h.keys[k] = k < h.num_key_ranges ? KeyRange{kv[(i * static_cast<size_t>(r) + static_cast<size_t>(k)) * 2],
                                                    kv[(i * static_cast<size_t>(r) + static_cast<size_t>(k)) * 2 + 1]}
                                         : KeyRange{0, 0};
      if (std::string p = event_header_problem(h, stages_.size(), attention_, max_rows_, r); !p.empty())
        throw file_.error(std::string(prefix == trace_tensor::events_prefix ? "event " : "missing event ") +
                          std::to_string(i) + ": " + p);
    }
    return headers;
  };
  headers_ = read_headers(trace_tensor::events_prefix, true);
  missing_ = read_headers(trace_tensor::missing_prefix, false);

  const int64_t n = static_cast<int64_t>(headers_.size());
  const auto payload = [&](std::string_view name, const std::vector<int64_t>& shape) {
    const TensorInfo* t = file_.find(name);
    if (t == nullptr) throw file_.error("required tensor '" + std::string(name) + "' is missing");
    if (t->shape != shape)
      throw file_.error("tensor '" + std::string(name) + "' has shape " + shape_string(t->shape) + ", expected " +
                        shape_string(shape) + " (N = " + std::to_string(n) + " events, max_rows = " +
                        std::to_string(max_rows_) + ", head_dim = " + std::to_string(head_dim_) + ")");
    return file_.view<float>(*t);
  };
  m_view_ = payload(trace_tensor::m, {n, max_rows_});
  l_view_ = payload(trace_tensor::l, {n, max_rows_});
  o_view_ = payload(trace_tensor::o, {n, max_rows_, head_dim_});
}

bool TraceFile::has_inputs() const {
  // Each format's own tensors only: a stray "inputs.pairs" in a format 2 file is not inputs.
  return file_.find(format_ == 1 ? std::string_view("inputs.pairs") : trace_tensor::inputs_q_pairs) != nullptr;
}

void TraceFile::check_inputs_and_output() {
  const AttentionSpec& s = attention_;
  const auto check_tensor = [&](const TensorInfo& t, const std::vector<int64_t>& shape) {
    if (!dtype_of_elem_type(t.type) || *dtype_of_elem_type(t.type) != s.dtype)
      throw file_.error("tensor '" + t.name + "' has dtype " + std::string(to_string(t.type)) +
                        "; the attention description's inputs are " + std::string(to_string(s.dtype)));
    if (t.shape != shape)
      throw file_.error("tensor '" + t.name + "' has shape " + shape_string(t.shape) + ", expected " + shape_string(shape));
  };
  const auto check_pairs = [&](const TensorInfo& t, int64_t heads, const char* what) {
    if (t.shape.size() != 2 || t.shape[1] != 2)
      throw file_.error("tensor '" + t.name + "' must be [P, 2], has shape " + shape_string(t.shape));
    const TensorView<int32_t> v = file_.view<int32_t>(t);
    std::set<std::pair<int32_t, int32_t>> seen;
    for (size_t i = 0; i + 1 < v.size(); i += 2) {
      if (v[i] < 0 || v[i] >= s.batch || v[i + 1] < 0 || v[i + 1] >= heads)
        throw file_.error("tensor '" + t.name + "' holds " + what + " (" + std::to_string(v[i]) + ", " +
                          std::to_string(v[i + 1]) + "), outside the attention description");
      if (!seen.insert({v[i], v[i + 1]}).second)
        throw file_.error("tensor '" + t.name + "' holds (" + std::to_string(v[i]) + ", " + std::to_string(v[i + 1]) +
                          ") twice");
    }
    return t.shape[0];
  };
  if (format_ == 1) {
    const TensorInfo* pairs = file_.find("inputs.pairs");
    const TensorInfo* q = file_.find("inputs.q");
    const TensorInfo* k = file_.find("inputs.k");
    const TensorInfo* v = file_.find("inputs.v");
    if (pairs || q || k || v) {
      if (!(pairs && q && k && v))
        throw file_.error("inputs are incomplete: inputs.pairs, inputs.q, inputs.k and inputs.v must all be present "
                          "or all absent");
      const int64_t p = check_pairs(*pairs, s.heads_q, "(batch, head)");
      check_tensor(*q, {p, s.seq_q, s.head_dim});
      check_tensor(*k, {p, s.seq_kv, s.head_dim});
      check_tensor(*v, {p, s.seq_kv, s.head_dim});
    }
  } else {
    const TensorInfo* qp = file_.find(trace_tensor::inputs_q_pairs);
    const TensorInfo* kvp = file_.find(trace_tensor::inputs_kv_pairs);
    const TensorInfo* q = file_.find(trace_tensor::inputs_q);
    const TensorInfo* k = file_.find(trace_tensor::inputs_k);
    const TensorInfo* v = file_.find(trace_tensor::inputs_v);
    if (qp || kvp || q || k || v) {
      if (!(qp && kvp && q && k && v))
        throw file_.error("inputs are incomplete: inputs.q_pairs, inputs.kv_pairs, inputs.q, inputs.k and "
                          "inputs.v must all be present or all absent");
      const int64_t pq = check_pairs(*qp, s.heads_q, "(batch, query head)");
      const int64_t pk = check_pairs(*kvp, s.heads_kv, "(batch, kv head)");
      check_tensor(*q, {pq, s.seq_q, s.head_dim});
      check_tensor(*k, {pk, s.seq_kv, s.head_dim});
      check_tensor(*v, {pk, s.seq_kv, s.head_dim});
    }
  }
  if (const TensorInfo* out = file_.find(trace_tensor::output)) {
    if (!dtype_of_elem_type(out->type))
      throw file_.error("tensor 'output.o' has dtype " + std::string(to_string(out->type)) +
                        ", expected F32, F16 or BF16");
    const std::vector<int64_t> shape = {s.batch, s.heads_q, s.seq_q, s.head_dim};
    if (out->shape != shape)
      throw file_.error("tensor 'output.o' has shape " + shape_string(out->shape) + ", expected " + shape_string(shape));
  }
  if (const TensorInfo* lse = file_.find(trace_tensor::output_lse)) {
    const std::vector<int64_t> shape = {s.batch, s.heads_q, s.seq_q};
    if (lse->type != ElemType::F32 || lse->shape != shape)
      throw file_.error("tensor 'output.lse' must be F32 " + shape_string(shape) + ", is " +
                        std::string(to_string(lse->type)) + " " + shape_string(lse->shape));
  }
}

std::vector<size_t> TraceFile::events_per_stage() const {
  std::vector<size_t> counts(stages_.size(), 0);
  for (const EventHeader& h : headers_) ++counts[static_cast<size_t>(h.stage)];  // checked at open
  return counts;
}

std::optional<HeadInputs> TraceFile::read_inputs() const {
  if (!has_inputs()) return std::nullopt;
  HeadInputs in;
  const auto pairs = [&](std::string_view name) {
    std::vector<std::array<int32_t, 2>> out;
    const TensorView<int32_t> v = file_.view<int32_t>(name);
    for (size_t i = 0; i + 1 < v.size(); i += 2) out.push_back({v[i], v[i + 1]});
    return out;
  };
  if (format_ == 1) {
    in.q_pairs = pairs("inputs.pairs");
    in.kv_pairs = in.q_pairs;  // format 1 was multi-head only: kv head = head
  } else {
    in.q_pairs = pairs(trace_tensor::inputs_q_pairs);
    in.kv_pairs = pairs(trace_tensor::inputs_kv_pairs);
  }
  in.q = read_host_tensor(file_, file_.at(trace_tensor::inputs_q));
  in.k = read_host_tensor(file_, file_.at(trace_tensor::inputs_k));
  in.v = read_host_tensor(file_, file_.at(trace_tensor::inputs_v));
  return in;
}

std::optional<HostTensor> TraceFile::read_output() const {
  if (!has_output()) return std::nullopt;
  return read_host_tensor(file_, file_.at(trace_tensor::output));
}

std::optional<std::vector<float>> TraceFile::read_output_lse() const {
  const TensorInfo* t = file_.find(trace_tensor::output_lse);
  if (t == nullptr) return std::nullopt;
  const TensorView<float> v = file_.view<float>(*t);
  return std::vector<float>(v.span().begin(), v.span().end());
}

CapturedEvents TraceFile::to_captured_events() const {
  CapturedEvents ev;
  ev.max_rows = max_rows_;
  ev.head_dim = head_dim_;
  ev.stages = stages_;
  ev.headers = headers_;
  ev.missing = missing_;
  ev.dropped = dropped_;
  ev.requested = requested_;
  ev.m.assign(m_.begin(), m_.end());
  ev.l.assign(l_.begin(), l_.end());
  ev.o.assign(o_.begin(), o_.end());
  return ev;
}

}  // namespace ts
