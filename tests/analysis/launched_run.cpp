#include "tests/analysis/launched_run.h"

#include <cstring>
#include <memory>

#include "kernels/launcher.h"
#include "kernels/random_inputs.h"

namespace ts::test {
namespace {

// [batch, heads, seq, d] -> the listed pairs as [P, seq, d].
HostTensor gather_pairs(const HostTensor& t, const std::vector<std::array<int32_t, 2>>& pairs, int64_t heads) {
  const int64_t seq = t.shape[2], d = t.shape[3];
  const size_t block = static_cast<size_t>(seq * d) * t.element_size();
  HostTensor out;
  out.dtype = t.dtype;
  out.shape = {static_cast<int64_t>(pairs.size()), seq, d};
  out.bytes.resize(block * pairs.size());
  for (size_t p = 0; p < pairs.size(); ++p)
    std::memcpy(out.bytes.data() + p * block,
                t.bytes.data() + static_cast<size_t>(pairs[p][0] * heads + pairs[p][1]) * block, block);
  return out;
}

}  // namespace

AttentionConfig make_config(KernelKind kernel, Fault fault, DType dtype, int64_t head_dim, int64_t seq_q,
                            int64_t seq_kv, bool causal, int64_t splits, int64_t batch, int64_t heads) {
  AttentionConfig c;
  c.kernel = kernel;
  c.fault = fault;
  c.dtype = dtype;
  c.head_dim = head_dim;
  c.seq_q = seq_q;
  c.seq_kv = seq_kv;
  c.causal = causal;
  c.num_splits = kernel == KernelKind::splitk ? splits : 0;
  c.batch = batch;
  c.heads = heads;
  return c;
}

RunView launch_run(const LaunchSpec& spec) {
  const AttentionInputs inputs = make_random_inputs(spec.config, RandomInputSpec{.seed = spec.seed, .preset = spec.preset});
  LaunchRequest req;
  req.config = spec.config;
  req.backend = Backend::cpu;
  req.trace.enabled = true;
  req.trace.filter = spec.filter;
  req.trace.capacity_events = spec.capacity;
  req.cpu_workers = spec.cpu_workers;
  req.perturb_seed = spec.perturb_seed;
  auto outcome = std::make_shared<LaunchOutcome>(launch_attention(req, inputs));

  RunView v;
  v.config = outcome->config;
  v.tiling = outcome->tiling;
  v.label = "launch";
  v.metadata = {{"backend", "cpu"}, {"inputs_seed", std::to_string(spec.seed)}};
  v.block_m = outcome->events.block_m;
  v.head_dim = outcome->events.head_dim;
  v.dropped_events = outcome->events.dropped;
  v.headers = outcome->events.headers;
  v.m = outcome->events.m;
  v.l = outcome->events.l;
  v.o = outcome->events.o;
  for (int32_t b = 0; b < spec.config.batch; ++b)
    for (int32_t h = 0; h < spec.config.heads; ++h)
      if (spec.filter.keeps_pair(b, h)) v.inputs.pairs.push_back({b, h});
  v.inputs.q = gather_pairs(inputs.q, v.inputs.pairs, spec.config.heads);
  v.inputs.k = gather_pairs(inputs.k, v.inputs.pairs, spec.config.heads);
  v.inputs.v = gather_pairs(inputs.v, v.inputs.pairs, spec.config.heads);
  v.output = outcome->o;
  v.payload_owner = outcome;
  return v;
}

}  // namespace ts::test
