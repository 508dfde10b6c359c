#include "tests/gui/viewer_fixtures.h"

#include <stdexcept>

#include "app/model/analysis/analyze_run.h"
#include "app/model/trace_session.h"

namespace ts::testing {

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
  JobProgress progress;
  return capture_and_analyse(cpu_spec(config, seed), progress, save_to);
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
  const EventKey key = event_key(out.a.headers[out.first]);
  while (out.first_in_b < out.b.num_events() && event_key(out.b.headers[out.first_in_b]) != key) ++out.first_in_b;
  if (out.first_in_b == out.b.num_events()) throw std::logic_error("the fixed run has no event at the divergence");
  return out;
}

}  // namespace ts::testing
