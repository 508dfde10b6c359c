#include "tests/model/capture_test_util.h"

#include <cstring>
#include <memory>

#include "app/model/capture/capture_inputs.h"
#include "app/model/capture/capture_metadata.h"
#include "app/model/capture/run_capture.h"

namespace ts::test {

AttentionConfig random_small_config(std::mt19937_64& rng, bool with_fault) {
  auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  AttentionConfig c;
  c.kernel = pick(0, 1) ? KernelKind::splitk : KernelKind::fa1;
  c.batch = pick(1, 2);
  c.heads = pick(1, 4);
  // GQA: a divisor of heads (0: as many as heads).
  std::vector<int64_t> kv_choices{0};
  for (int64_t d = 1; d <= c.heads; ++d)
    if (c.heads % d == 0) kv_choices.push_back(d);
  c.heads_kv = kv_choices[static_cast<size_t>(pick(0, static_cast<int64_t>(kv_choices.size()) - 1))];
  c.seq_q = c.kernel == KernelKind::splitk && pick(0, 1) ? pick(1, 4) : pick(1, 100);
  c.seq_kv = pick(1, 200);
  c.head_dim = pick(0, 1) ? 64 : 32;
  c.dtype = static_cast<DType>(pick(0, 2));
  c.causal = pick(0, 1) == 1;
  if (pick(0, 2) == 0) {  // a sliding window, one bound of it possibly unbounded
    c.window_left = pick(-1, 80);
    c.window_right = pick(-1, 40);
  }
  if (pick(0, 2) == 0) c.softcap = std::uniform_real_distribution<double>(1.0, 50.0)(rng);
  c.num_splits = splits_kv(c.kernel) ? pick(0, 5) : 0;
  c.softmax_scale = pick(0, 1) ? 0.0 : std::uniform_real_distribution<double>(0.05, 0.5)(rng);
  if (with_fault) {
    std::vector<Fault> applicable;
    for (const FaultInfo& f : all_faults())
      if (c.kernel == KernelKind::fa1 ? f.fa1 : f.splitk) applicable.push_back(f.fault);
    c.fault = applicable[static_cast<size_t>(pick(0, static_cast<int64_t>(applicable.size()) - 1))];
  }
  return c;
}

std::vector<std::string> config_args(const AttentionConfig& c) {
  std::vector<std::string> a = {"--kernel",   std::string(to_string(c.kernel)),
                                "--fault",    std::string(to_string(c.fault)),
                                "--batch",    std::to_string(c.batch),
                                "--heads",    std::to_string(c.heads),
                                "--heads-kv", std::to_string(c.heads_kv),
                                "--seq-q",    std::to_string(c.seq_q),
                                "--seq-kv",   std::to_string(c.seq_kv),
                                "--head-dim", std::to_string(c.head_dim),
                                "--dtype",    std::string(to_string(c.dtype)),
                                "--splits",   std::to_string(c.num_splits),
                                "--scale",    exact_decimal(c.softmax_scale)};
  if (c.causal) a.push_back("--causal");
  if (c.has_window()) {
    a.push_back("--window");
    a.push_back(window_text(c.window_left, c.window_right));
  }
  if (c.softcap > 0) {
    a.push_back("--softcap");
    a.push_back(exact_decimal(c.softcap));
  }
  return a;
}

std::vector<std::string> capture_args(const AttentionConfig& c) {
  std::vector<std::string> a{"capture"};
  const std::vector<std::string> rest = config_args(c);
  a.insert(a.end(), rest.begin(), rest.end());
  return a;
}

std::string event_difference(const RunView& a, size_t i, const RunView& b, size_t j) {
  const EventHeader &x = a.headers[i], &y = b.headers[j];
  bool same_keys = x.num_key_ranges == y.num_key_ranges;
  for (int32_t k = 0; same_keys && k < x.num_key_ranges; ++k)
    same_keys = x.keys[k].begin == y.keys[k].begin && x.keys[k].end == y.keys[k].end;
  const bool same_header = x.stage == y.stage && x.convention == y.convention && x.batch == y.batch &&
                           x.head == y.head && x.kv_head == y.kv_head && x.q_begin == y.q_begin && same_keys &&
                           x.split == y.split && x.step == y.step && x.rows == y.rows && x.block == y.block;
  if (!same_header) return "event " + std::to_string(i) + "/" + std::to_string(j) + ": headers differ";
  if (a.max_rows != b.max_rows || a.head_dim != b.head_dim) return "max_rows or head_dim differ";
  const RunEvent ea = a.event(i), eb = b.event(j);
  const size_t rows = static_cast<size_t>(x.rows), d = static_cast<size_t>(a.head_dim);
  if (std::memcmp(ea.m.data(), eb.m.data(), rows * sizeof(float)) != 0)
    return "event " + std::to_string(i) + ": m differs";
  if (std::memcmp(ea.l.data(), eb.l.data(), rows * sizeof(float)) != 0)
    return "event " + std::to_string(i) + ": l differs";
  if (std::memcmp(ea.o.data(), eb.o.data(), rows * d * sizeof(float)) != 0)
    return "event " + std::to_string(i) + ": O differs";
  return {};
}

std::string run_events_difference(const RunView& a, const RunView& b) {
  // The kernel's own events (a run's appended output events depend on the inputs it keeps).
  if (a.recorded_events != b.recorded_events)
    return "event counts differ: " + std::to_string(a.recorded_events) + " vs " + std::to_string(b.recorded_events);
  for (size_t i = 0; i < a.recorded_events; ++i) {
    std::string d = event_difference(a, i, b, i);
    if (!d.empty()) return d;
  }
  return {};
}

RunView launch_view(const LaunchRequest& request, const AttentionInputs& inputs) {
  LaunchOutcome out = launch_attention(request, inputs);
  auto events = std::make_shared<CapturedEvents>(std::move(out.events));
  return run_view_from_capture(events, out, traced_head_inputs(out.config, inputs, TraceFilter{}), {});
}

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes;
}

}  // namespace ts::test
