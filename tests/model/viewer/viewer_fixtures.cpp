#include "tests/model/viewer/viewer_fixtures.h"

#include <random>
#include <stdexcept>

#include "app/model/analysis/analyze_run.h"
#include "app/model/trace_session.h"
#include "app/model/viewer/ab_pairing.h"
#include "instrumentation/trace/trace_file.h"
#include "kernels/reference.h"

namespace ts::test {

AttentionConfig splitk_small(Fault fault) {
  AttentionConfig c;
  c.kernel = KernelKind::splitk;
  c.fault = fault;
  c.batch = 1;
  c.heads = 2;
  c.seq_q = 16;
  c.seq_kv = 512;
  c.head_dim = 64;
  c.dtype = DType::f32;
  c.num_splits = 4;
  return c;
}

AttentionConfig splitk_decode_gqa(Fault fault) {
  AttentionConfig c;
  c.kernel = KernelKind::splitk;
  c.fault = fault;
  c.batch = 2;
  c.heads = 8;
  c.heads_kv = 2;
  c.seq_q = 1;
  c.seq_kv = 1024;
  c.head_dim = 64;
  c.dtype = DType::f32;
  c.num_splits = 4;
  return c;
}

AttentionConfig splitk_causal_masked(Fault fault) {
  AttentionConfig c;
  c.kernel = KernelKind::splitk;
  c.fault = fault;
  c.batch = 1;
  c.heads = 1;
  c.seq_q = 256;
  c.seq_kv = 256;
  c.head_dim = 64;  // kv tiles of 128 keys: 2 tiles, one per split
  c.dtype = DType::f32;
  c.causal = true;
  c.num_splits = 2;
  return c;
}

AttentionConfig fa1_small(Fault fault) {
  AttentionConfig c;
  c.kernel = KernelKind::fa1;
  c.fault = fault;
  c.batch = 1;
  c.heads = 1;
  c.seq_q = 80;
  c.seq_kv = 200;
  c.head_dim = 32;
  c.dtype = DType::f32;
  return c;
}

CaptureSpec cpu_spec(const AttentionConfig& config, uint64_t seed) {
  CaptureSpec spec;
  spec.config = config;
  spec.backend = Backend::cpu;
  RandomInputSpec r;
  r.seed = seed;
  spec.inputs = r;
  return spec;
}

LoadedRun capture_cpu(const AttentionConfig& config, uint64_t seed, const std::optional<std::filesystem::path>& save_to) {
  return capture_cpu(cpu_spec(config, seed), save_to);
}

LoadedRun capture_cpu(const CaptureSpec& spec, const std::optional<std::filesystem::path>& save_to) {
  JobProgress progress;
  return capture_and_analyse(spec, progress, save_to);
}

size_t UserStageTrace::index_of(int32_t stage, int32_t head, int32_t q_begin, int32_t split) const {
  for (size_t i = 0; i < headers.size(); ++i) {
    const EventHeader& h = headers[i];
    if (h.stage == stage && h.head == head && h.q_begin == q_begin && h.split == split) return i;
  }
  throw std::logic_error("the user trace has no such event");
}

UserStageTrace write_user_stage_trace(const std::filesystem::path& path, uint64_t seed) {
  UserStageTrace t;
  t.path = path;
  AttentionSpec& a = t.attention;
  a.batch = 1;
  a.heads_q = 2;
  a.heads_kv = 1;
  a.seq_q = 40;
  a.seq_kv = 300;
  a.head_dim = 16;
  a.dtype = DType::f32;
  t.stages = {{"my_partial", StageKind::state, 0}, {"merge", StageKind::merge, 1}, {"epilogue", StageKind::final, 1}};

  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  HeadInputs in;
  in.q_pairs = {{0, 0}, {0, 1}};
  in.kv_pairs = {{0, 0}};
  in.q = HostTensor::zeros(DType::f32, {2, a.seq_q, a.head_dim});
  in.k = HostTensor::zeros(DType::f32, {1, a.seq_kv, a.head_dim});
  in.v = HostTensor::zeros(DType::f32, {1, a.seq_kv, a.head_dim});
  for (HostTensor* x : {&in.q, &in.k, &in.v})
    for (int64_t i = 0; i < x->numel(); ++i) x->set_float(i, normal(rng));

  CapturedEvents ev;
  ev.max_rows = 16;
  ev.head_dim = static_cast<int32_t>(a.head_dim);
  ev.stages = t.stages;
  const size_t rows_cap = 16, d = static_cast<size_t>(a.head_dim);
  const double scale = a.effective_scale();
  const int32_t normalized_base2 = kNormalized | kLogBase2;
  auto add = [&](EventHeader h, const RefState& canonical, int32_t convention, float o_factor) {
    h.convention = convention;
    h.kv_head = 0;
    h.where = -1;
    h.time_ns = ev.headers.size();
    const RefState stored = express(canonical, convention, scale);
    const size_t at = ev.headers.size();
    ev.headers.push_back(h);
    ev.m.resize((at + 1) * rows_cap, 0.0f);
    ev.l.resize((at + 1) * rows_cap, 0.0f);
    ev.o.resize((at + 1) * rows_cap * d, 0.0f);
    for (int32_t r = 0; r < h.rows; ++r) {
      ev.m[at * rows_cap + static_cast<size_t>(r)] = static_cast<float>(stored.m[static_cast<size_t>(r)]);
      ev.l[at * rows_cap + static_cast<size_t>(r)] = static_cast<float>(stored.l[static_cast<size_t>(r)]);
      for (size_t c = 0; c < d; ++c)
        ev.o[(at * rows_cap + static_cast<size_t>(r)) * d + c] =
            static_cast<float>(stored.o[static_cast<size_t>(r) * d + c]) * o_factor;
    }
    return at;
  };
  const std::vector<int64_t> cuts = {0, kUserSplitEnds[0], kUserSplitEnds[1], kUserSplitEnds[2]};
  for (int32_t head = 0; head < 2; ++head)
    for (int32_t rb = 0; rb < 3; ++rb) {
      const RowBlock block{0, head, kUserRowBlocks[rb][0], kUserRowBlocks[rb][1]};
      const auto ref = compute_row_block(a, in, block, cuts);
      EventHeader h{};
      h.batch = 0;
      h.head = head;
      h.q_begin = block.q_begin;
      h.rows = block.rows;
      h.num_key_ranges = 1;
      for (int32_t split = 0; split < 3; ++split) {
        h.stage = kUserPartial;
        h.split = split;
        h.step = 0;
        h.block = (head * 3 + rb) * 3 + split;
        h.keys[0] = {static_cast<int32_t>(cuts[static_cast<size_t>(split)]),
                     static_cast<int32_t>(cuts[static_cast<size_t>(split) + 1])};
        add(h, ref->state(std::span<const KeyRange>(h.keys, 1)), 0, 1.0f);
      }
      for (int32_t split = 0; split < 3; ++split) {
        h.stage = kUserMerge;
        h.split = split;
        h.step = split;
        h.block = head * 3 + rb;
        h.keys[0] = {0, static_cast<int32_t>(cuts[static_cast<size_t>(split) + 1])};
        const bool wrong = head == 1 && rb == 1 && split == 1;
        const size_t at = add(h, ref->state(std::span<const KeyRange>(h.keys, 1)), normalized_base2, wrong ? 1.5f : 1.0f);
        if (wrong) t.wrong_merge = at;
      }
      h.stage = kUserEpilogue;
      h.split = -1;
      h.step = 3;
      h.keys[0] = {0, static_cast<int32_t>(a.seq_kv)};
      add(h, ref->output(), normalized_base2, 1.0f);
    }
  ev.requested = ev.headers.size();
  t.headers = ev.headers;
  TraceContents contents;
  contents.events = &ev;
  contents.attention = a;
  contents.metadata = {{std::string(trace_meta::kernel), "my_kernel"}, {std::string(trace_meta::run), "user stages"}};
  contents.inputs = &in;
  write_trace(path, contents);
  return t;
}

FaultAndFix capture_fault_and_fix(const std::filesystem::path& dir, uint64_t seed) {
  FaultAndFix out;
  out.faulty = dir / "faulty.trace.safetensors";
  out.fixed = dir / "fixed.trace.safetensors";
  capture_cpu(splitk_small(Fault::double_count_l), seed, out.faulty);
  capture_cpu(splitk_small(Fault::none), seed, out.fixed);
  out.a = open_run(out.faulty);
  out.b = open_run(out.fixed);
  const AnalysisReport report = analyze_run(out.a);
  if (!report.first_divergence.found || report.first_divergence.missing)
    throw std::logic_error("the double_count_l run has no first divergence to show");
  out.first = static_cast<size_t>(report.first_divergence.event_index);
  const PairedIdentity id = paired_identity(out.a.headers[out.first]);
  while (out.first_in_b < out.b.num_events() && paired_identity(out.b.headers[out.first_in_b]) != id) ++out.first_in_b;
  if (out.first_in_b == out.b.num_events()) throw std::logic_error("the fixed run has no event at the divergence");
  return out;
}

}  // namespace ts::test
