#include "tests/trace/handwritten_trace.h"

#include <random>
#include <span>
#include <stdexcept>

#include "kernels/reference.h"

namespace ts::test {
namespace {

HostTensor random_tensor(DType dtype, std::vector<int64_t> shape, std::mt19937_64& rng) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    do {
      t.set_float(i, static_cast<float>(normal(rng)));
    } while (t.get_float(i) == 0.0f);  // a zero would hide a missed element
  }
  return t;
}

// A blank header, as a recorder fills one in.
EventHeader header(int32_t stage, int32_t convention, int32_t batch, int32_t head, int32_t kv_head,
                   int32_t q_begin, int32_t rows, int32_t split, int32_t step, int32_t block) {
  EventHeader h{};
  h.stage = stage;
  h.convention = convention;
  h.batch = batch;
  h.head = head;
  h.kv_head = kv_head;
  h.q_begin = q_begin;
  h.rows = rows;
  h.split = split;
  h.step = step;
  h.block = block;
  h.where = block % 132;
  h.num_key_ranges = 0;
  return h;
}

void add_ranges(EventHeader& h, const std::vector<KeyRange>& ranges) {
  for (const KeyRange& r : ranges) {
    if (h.num_key_ranges >= kMaxKeyRanges) throw std::logic_error("hand-written trace: too many key ranges");
    h.keys[h.num_key_ranges++] = r;
  }
}

}  // namespace

size_t HandwrittenTrace::find(int32_t stage, int32_t batch, int32_t head, int32_t q_begin, int32_t split) const {
  for (size_t i = 0; i < events.size(); ++i) {
    const EventHeader& h = events.headers[i];
    if (h.stage == stage && h.batch == batch && h.head == head && h.q_begin == q_begin &&
        (stage == kEpilogueStage || h.split == split))
      return i;
  }
  throw std::out_of_range("hand-written trace: no event of stage " + std::to_string(stage) + " for batch " +
                          std::to_string(batch) + " head " + std::to_string(head) + " rows from " +
                          std::to_string(q_begin) + " split " + std::to_string(split));
}

TraceContents HandwrittenTrace::contents() const {
  TraceContents c;
  c.events = &events;
  c.attention = spec;
  c.metadata = metadata;
  c.inputs = &inputs;
  c.output = &output;
  c.output_lse = &output_lse;
  return c;
}

HandwrittenTrace make_handwritten_trace(uint64_t seed) {
  HandwrittenTrace t;
  AttentionSpec& s = t.spec;
  s.batch = 2;
  s.heads_q = 4;
  s.heads_kv = 2;
  s.seq_q = 13;
  s.seq_kv = 200;
  s.head_dim = 32;
  s.dtype = DType::f16;
  s.causal = CausalAlign::bottom_right;
  t.splits = {{{0, 37}}, {{37, 120}}, {{120, 150}, {180, 200}}, {{150, 180}}};
  t.row_blocks = {{0, 8}, {8, 5}};
  const int32_t max_rows = 8;

  std::mt19937_64 rng(seed);
  for (int32_t b = 0; b < s.batch; ++b) {
    for (int32_t h = 0; h < s.heads_q; ++h) t.inputs.q_pairs.push_back({b, h});
    for (int32_t h = 0; h < s.heads_kv; ++h) t.inputs.kv_pairs.push_back({b, h});
  }
  const auto pq = static_cast<int64_t>(t.inputs.q_pairs.size()), pk = static_cast<int64_t>(t.inputs.kv_pairs.size());
  t.inputs.q = random_tensor(s.dtype, {pq, s.seq_q, s.head_dim}, rng);
  t.inputs.k = random_tensor(s.dtype, {pk, s.seq_kv, s.head_dim}, rng);
  t.inputs.v = random_tensor(s.dtype, {pk, s.seq_kv, s.head_dim}, rng);

  CapturedEvents& ev = t.events;
  ev.max_rows = max_rows;
  ev.head_dim = static_cast<int32_t>(s.head_dim);
  ev.stages = {{"my_partial", StageKind::state, 0}, {"combine", StageKind::merge, 1}, {"epilogue", StageKind::final, 1}};
  const ReferenceInputs reference(s, t.inputs, 1);
  const double scale = s.effective_scale();
  const size_t rows = static_cast<size_t>(max_rows), d = static_cast<size_t>(s.head_dim);
  uint64_t clock = 1'000'000'000;
  // Appends an event with the reference's payload in its convention; rows past h.rows stay NaN
  // (never written, as in a real buffer).
  const auto record = [&](EventHeader h, const RefState& canonical) {
    const RefState x = express(canonical, h.convention, scale);
    h.time_ns = clock += 750;
    ev.headers.push_back(h);
    const size_t at = ev.m.size();
    ev.m.resize(at + rows, NAN);
    ev.l.resize(at + rows, NAN);
    ev.o.resize((at + rows) * d, NAN);
    for (size_t r = 0; r < static_cast<size_t>(h.rows); ++r) {
      ev.m[at + r] = static_cast<float>(x.m[r]);
      ev.l[at + r] = static_cast<float>(x.l[r]);
      for (size_t c = 0; c < d; ++c) ev.o[(at + r) * d + c] = static_cast<float>(x.o[r * d + c]);
    }
  };
  // Every range end is a boundary of the reference's row blocks.
  std::vector<int64_t> boundaries;
  for (const auto& split : t.splits)
    for (const KeyRange& r : split) boundaries.insert(boundaries.end(), {r.begin, r.end});

  // Pass 0: a block per (batch, head, row block, split) records its split's state.
  int32_t block = 0;
  for (int32_t b = 0; b < s.batch; ++b)
    for (int32_t h = 0; h < s.heads_q; ++h)
      for (const auto& [q_begin, n] : t.row_blocks) {
        const auto rb = compute_row_block(reference, RowBlock{b, h, q_begin, n}, boundaries);
        for (size_t split = 0; split < t.splits.size(); ++split) {
          EventHeader e = header(kMyPartialStage, kHandwrittenStateConvention, b, h, static_cast<int32_t>(s.kv_head_of(h)),
                                 q_begin, n, static_cast<int32_t>(split), 0, block++);
          add_ranges(e, t.splits[split]);
          record(e, rb->state(t.splits[split]));
        }
      }
  // Pass 1: a block per (batch, head, row block) merges the splits in order, then writes the
  // output.
  block = 0;
  for (int32_t b = 0; b < s.batch; ++b)
    for (int32_t h = 0; h < s.heads_q; ++h)
      for (const auto& [q_begin, n] : t.row_blocks) {
        const auto rb = compute_row_block(reference, RowBlock{b, h, q_begin, n}, boundaries);
        std::vector<KeyRange> merged;
        for (size_t split = 0; split < t.splits.size(); ++split) {
          merged.insert(merged.end(), t.splits[split].begin(), t.splits[split].end());
          EventHeader e = header(kCombineStage, kHandwrittenStateConvention, b, h, static_cast<int32_t>(s.kv_head_of(h)),
                                 q_begin, n, static_cast<int32_t>(split), static_cast<int32_t>(split), block);
          add_ranges(e, merged);
          record(e, rb->state(merged));
        }
        EventHeader e = header(kEpilogueStage, kHandwrittenOutputConvention, b, h,
                               static_cast<int32_t>(s.kv_head_of(h)), q_begin, n, -1,
                               static_cast<int32_t>(t.splits.size()), block++);
        add_ranges(e, {{0, static_cast<int32_t>(s.seq_kv)}});
        record(e, rb->output());
      }
  ev.requested = ev.headers.size();

  const ReferenceOutput out = reference_output(s, t.inputs, 1);
  t.output = HostTensor::zeros(s.dtype, {s.batch, s.heads_q, s.seq_q, s.head_dim});
  for (int64_t i = 0; i < t.output.numel(); ++i) t.output.set_float(i, static_cast<float>(out.o[static_cast<size_t>(i)]));
  t.output_lse.assign(out.lse.begin(), out.lse.end());
  t.metadata = {{std::string(trace_meta::kernel), "my_gqa_decode"},
                {std::string(trace_meta::run), "hand-written from the schema"},
                {std::string(trace_meta::backend), "gpu"},
                {std::string(trace_meta::device), "a user's GPU"},
                {std::string(trace_meta::inputs_seed), std::to_string(seed)}};
  return t;
}

void write_handwritten_trace(const std::filesystem::path& path, const HandwrittenTrace& trace) {
  write_trace(path, trace.contents());
}

void perturb_o(HandwrittenTrace& trace, size_t index, int32_t row, int32_t col, float delta) {
  const CapturedEvents& ev = trace.events;
  if (index >= ev.size() || row < 0 || row >= ev.headers[index].rows || col < 0 || col >= ev.head_dim)
    throw std::out_of_range("perturb_o: no such element");
  const size_t at = (index * static_cast<size_t>(ev.max_rows) + static_cast<size_t>(row)) *
                        static_cast<size_t>(ev.head_dim) + static_cast<size_t>(col);
  trace.events.o[at] += delta;
}

}  // namespace ts::test
