#include "tests/analysis/launched_run.h"

#include <gtest/gtest.h>

#include "app/model/capture/run_capture.h"

namespace ts::test {

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
  c.num_splits = splits_kv(kernel) ? splits : 0;
  c.batch = batch;
  c.heads = heads;
  return c;
}

RunView launch_run(const LaunchSpec& spec) {
  CaptureSpec c;
  c.config = spec.config;
  c.backend = Backend::cpu;
  c.trace.filter = spec.filter;
  c.trace.capacity_events = spec.capacity;
  c.inputs = RandomInputSpec{.seed = spec.seed, .scale = spec.scale, .preset = spec.preset};
  c.cpu_workers = spec.cpu_workers;
  c.perturb_seed = spec.perturb_seed;
  c.tile_events = spec.tile_events;
  return run_capture(c).view;
}

RunView blind(RunView run) {
  run.config.reset();
  run.tiling.reset();
  run.metadata.clear();
  return run;
}

int32_t stage_of(const RunView& run, std::string_view name) {
  const int32_t s = run.stage_index(name);
  if (s < 0) ADD_FAILURE() << "the run has no stage " << name;
  return s;
}

}  // namespace ts::test
