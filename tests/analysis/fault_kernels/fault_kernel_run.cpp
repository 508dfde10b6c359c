// Host side of the test kernels: inputs, trace buffers (the public TraceView with a uniform
// plan), the launches, and the RunView built from what the kernels recorded.
#define TILESCOPE_TRACE 1

#include "tests/analysis/fault_kernels/fault_kernel_run.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "instrumentation/simt/cuda_compat.h"
#include "tests/analysis/fault_kernels/one_pass_kernel.cuh"
#include "tests/analysis/fault_kernels/split_kernels.cuh"

namespace ts::test {
namespace {

// One launch's trace buffer: a slot per planned event, headers marked unwritten (stage -1).
struct TraceBuffer {
  int64_t capacity = 0;
  int32_t max_rows = 0, head_dim = 0;
  std::vector<EventHeader> headers;
  std::vector<float> m, l, o;
  unsigned long long next_slot = 0, dropped = 0;

  TraceBuffer(int64_t blocks, int32_t events_per_block, int32_t rows, int32_t d)
      : capacity(blocks * events_per_block), max_rows(rows), head_dim(d) {
    headers.resize(static_cast<size_t>(capacity));
    for (EventHeader& h : headers) {
      std::memset(&h, 0, sizeof h);
      h.stage = -1;
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    m.assign(static_cast<size_t>(capacity * rows), nan);
    l.assign(m.size(), nan);
    o.assign(m.size() * static_cast<size_t>(d), nan);
    view_.events_per_block = events_per_block;
  }
  tilescope::TraceView view() {
    tilescope::TraceView v = view_;
    v.headers = headers.data();
    v.m = m.data();
    v.l = l.data();
    v.o = o.data();
    v.capacity = capacity;
    v.next_slot = &next_slot;
    v.dropped = &dropped;
    v.max_rows = max_rows;
    v.head_dim = head_dim;
    return v;
  }

 private:
  tilescope::TraceView view_;
};

// The recorded events of every launch, kept alive by the RunView.
struct Recorded {
  std::vector<EventHeader> headers;
  std::vector<float> m, l, o;
};

void append_written(const TraceBuffer& b, Recorded& out) {
  const size_t rows = static_cast<size_t>(b.max_rows), d = static_cast<size_t>(b.head_dim);
  for (size_t i = 0; i < b.headers.size(); ++i) {
    if (b.headers[i].stage < 0) continue;
    out.headers.push_back(b.headers[i]);
    out.m.insert(out.m.end(), b.m.begin() + i * rows, b.m.begin() + (i + 1) * rows);
    out.l.insert(out.l.end(), b.l.begin() + i * rows, b.l.begin() + (i + 1) * rows);
    out.o.insert(out.o.end(), b.o.begin() + i * rows * d, b.o.begin() + (i + 1) * rows * d);
  }
}

HostTensor random_tensor(DType dtype, std::vector<int64_t> shape, std::mt19937_64& rng) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_float(i, normal(rng));
  return t;
}

void check_launch(const simt::LaunchResult& r, const char* what) {
  if (!r.ok()) throw std::runtime_error(std::string(what) + ": " + r.message);
}

template <typename T>
void launch(const FaultKernelRun& run, FaultKernelParams p, Recorded& rec, std::vector<StageInfo>& stages) {
  const AttentionSpec& a = run.attention;
  const int q_tiles = static_cast<int>((a.seq_q + run.block_m - 1) / run.block_m);
  const size_t smem = 2 * static_cast<size_t>(run.block_n) * static_cast<size_t>(a.head_dim) * sizeof(float);
  simt::LaunchOptions options;
  options.workers = run.cpu_workers;
  if (run.shape == KernelShape::one_pass) {
    stages = {{"my_fa1.step", StageKind::state, 0}, {"my_fa1.out", StageKind::final, 0}};
    stages[0].p_rounded = run.p_rounding != PRounding::none;
    const dim3 grid(static_cast<unsigned>(q_tiles), static_cast<unsigned>(a.heads_q), static_cast<unsigned>(a.batch));
    TraceBuffer buf(int64_t{q_tiles} * a.heads_q * a.batch, p.num_kv_tiles + 1, run.block_m,
                    static_cast<int32_t>(a.head_dim));
    p.trace = buf.view();
    check_launch(simt::launch({grid, dim3(static_cast<unsigned>(run.block_m)), smem}, options,
                              one_pass_attention_kernel<T>, p),
                 "one-pass kernel");
    append_written(buf, rec);
    return;
  }
  stages = {{"my_split.tile", StageKind::state, 0},
            {"my_split.partial", StageKind::state, 0},
            {"my_split.merge", StageKind::merge, 1},
            {"my_split.out", StageKind::final, 1}};
  const size_t part_rows = static_cast<size_t>(a.batch * a.heads_q * a.seq_q * p.num_splits);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> part_m(part_rows, nan), part_l(part_rows, nan), part_o(part_rows * static_cast<size_t>(a.head_dim), nan);
  p.part_m = part_m.data();
  p.part_l = part_l.data();
  p.part_o = part_o.data();
  {
    const dim3 grid(static_cast<unsigned>(q_tiles * p.num_splits), static_cast<unsigned>(a.heads_q),
                    static_cast<unsigned>(a.batch));
    TraceBuffer buf(int64_t{q_tiles} * p.num_splits * a.heads_q * a.batch, p.tiles_per_split + 1, run.block_m,
                    static_cast<int32_t>(a.head_dim));
    p.trace = buf.view();
    check_launch(simt::launch({grid, dim3(static_cast<unsigned>(run.block_m)), smem}, options, split_partial_kernel<T>, p),
                 "split partial kernel");
    append_written(buf, rec);
  }
  {
    const dim3 grid(static_cast<unsigned>(q_tiles), static_cast<unsigned>(a.heads_q), static_cast<unsigned>(a.batch));
    TraceBuffer buf(int64_t{q_tiles} * a.heads_q * a.batch, p.num_splits + 1, run.block_m, static_cast<int32_t>(a.head_dim));
    p.trace = buf.view();
    check_launch(simt::launch({grid, dim3(static_cast<unsigned>(run.block_m))}, options, split_merge_kernel<T>, p),
                 "split merge kernel");
    append_written(buf, rec);
  }
}

}  // namespace

int num_kv_tiles(const FaultKernelRun& run) {
  return static_cast<int>((run.attention.seq_kv + run.block_n - 1) / run.block_n);
}

int tiles_per_split(const FaultKernelRun& run) { return (num_kv_tiles(run) + run.splits - 1) / run.splits; }

std::pair<int64_t, int64_t> split_keys(const FaultKernelRun& run, int split) {
  const int64_t tps = tiles_per_split(run), n = run.block_n, kv = run.attention.seq_kv;
  return {std::min(split * tps * n, kv), std::min((split + 1) * tps * n, kv)};
}

RunView run_fault_kernel(const FaultKernelRun& run) {
  const AttentionSpec& a = run.attention;
  validate(a);
  if (a.head_dim > kFaultKernelMaxD || run.block_n > kFaultKernelMaxBlockN || a.has_window() ||
      (!a.alibi_slopes.empty() && run.shape != KernelShape::one_pass) || !a.q_lens.empty() || !a.kv_lens.empty())
    throw std::runtime_error("the test kernels do not support this attention");
  std::mt19937_64 rng(run.seed);
  const HostTensor q = random_tensor(a.dtype, {a.batch, a.heads_q, a.seq_q, a.head_dim}, rng);
  const HostTensor k = random_tensor(a.dtype, {a.batch, a.heads_kv, a.seq_kv, a.head_dim}, rng);
  const HostTensor v = random_tensor(a.dtype, {a.batch, a.heads_kv, a.seq_kv, a.head_dim}, rng);
  HostTensor out = HostTensor::zeros(a.dtype, {a.batch, a.heads_q, a.seq_q, a.head_dim});
  std::vector<float> lse(static_cast<size_t>(a.batch * a.heads_q * a.seq_q));

  FaultKernelParams p;
  p.q = q.bytes.data();
  p.k = k.bytes.data();
  p.v = v.bytes.data();
  p.o = out.bytes.data();
  p.lse = lse.data();
  p.batch = static_cast<int>(a.batch);
  p.heads_q = static_cast<int>(a.heads_q);
  p.heads_kv = static_cast<int>(a.heads_kv);
  p.seq_q = static_cast<int>(a.seq_q);
  p.seq_kv = static_cast<int>(a.seq_kv);
  p.head_dim = static_cast<int>(a.head_dim);
  p.scale = static_cast<float>(a.effective_scale());
  p.softcap = static_cast<float>(a.softcap);
  p.causal = static_cast<int>(a.causal);
  p.block_m = run.block_m;
  p.block_n = run.block_n;
  p.num_kv_tiles = num_kv_tiles(run);
  p.num_splits = run.shape == KernelShape::split ? run.splits : 1;
  p.tiles_per_split = run.shape == KernelShape::split ? tiles_per_split(run) : p.num_kv_tiles;
  p.fault = static_cast<int>(run.fault);
  p.p_rounding = static_cast<int>(run.p_rounding);
  const std::vector<float> slopes(a.alibi_slopes.begin(), a.alibi_slopes.end());
  if (!slopes.empty()) p.alibi_slopes = slopes.data();

  auto rec = std::make_shared<Recorded>();
  std::vector<StageInfo> stages;
  switch (a.dtype) {
    case DType::f32: launch<float>(run, p, *rec, stages); break;
    case DType::f16: launch<__half>(run, p, *rec, stages); break;
    case DType::bf16: launch<__nv_bfloat16>(run, p, *rec, stages); break;
  }

  RunView view;
  view.attention = a;
  view.stages = stages;
  view.label = "test kernel";
  view.max_rows = run.block_m;
  view.head_dim = static_cast<int32_t>(a.head_dim);
  view.headers = rec->headers;
  view.recorded_events = view.headers.size();
  view.recorded_stages = view.stages.size();
  view.requested_events = view.headers.size();
  view.m = rec->m;
  view.l = rec->l;
  view.o = rec->o;
  view.payload_owner = rec;
  // Every head's inputs: q pairs (b, h), kv pairs (b, kv head), in the order of the tensors.
  for (int32_t b = 0; b < a.batch; ++b)
    for (int32_t h = 0; h < a.heads_q; ++h) view.inputs.q_pairs.push_back({b, h});
  for (int32_t b = 0; b < a.batch; ++b)
    for (int32_t h = 0; h < a.heads_kv; ++h) view.inputs.kv_pairs.push_back({b, h});
  auto as_pairs = [](const HostTensor& t) {
    HostTensor r = t;
    r.shape = {t.shape[0] * t.shape[1], t.shape[2], t.shape[3]};
    return r;
  };
  view.inputs.q = as_pairs(q);
  view.inputs.k = as_pairs(k);
  view.inputs.v = as_pairs(v);
  return view;
}

}  // namespace ts::test
