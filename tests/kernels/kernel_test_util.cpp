#include "tests/kernels/kernel_test_util.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ts::test {

double max_abs_error(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    if (a[i] == b[i]) continue;  // also -inf == -inf
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return a.size() == b.size() ? worst : INFINITY;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

double rule_floor(DType dtype) {
  // A tiny absolute floor (an O(1) output's last few bits), for cases where the naive error is
  // 0 (e.g. one key: O = V exactly) and the kernel's exp rounding is not.
  switch (dtype) {
    case DType::f32: return 1e-6;
    case DType::f16: return 1e-5;
    case DType::bf16: return 1e-4;
  }
  return 0.0;
}

bool RuleCheck::passes() const {
  return o_error <= 2.0 * o_naive + floor && lse_error <= 2.0 * lse_naive + floor;
}

std::string RuleCheck::describe() const {
  std::ostringstream s;
  s << "O error " << o_error << " (naive " << o_naive << "), LSE error " << lse_error
    << " (naive " << lse_naive << "), floor " << floor;
  return s.str();
}

RuleCheck check_rule(const AttentionConfig& config, const AttentionInputs& inputs,
                     const LaunchOutcome& out, const Reference::Output& ref) {
  const NaiveOutput naive = naive_attention(config, inputs);
  RuleCheck r;
  r.floor = rule_floor(config.dtype);
  r.o_error = max_abs_error(out.o.to_double(), ref.o);
  r.o_naive = max_abs_error(naive.o.to_double(), ref.o);
  r.lse_error = max_abs_error(to_double(out.lse), ref.lse);
  r.lse_naive = max_abs_error(to_double(naive.lse), ref.lse);
  return r;
}

std::string describe(const AttentionConfig& c) {
  std::ostringstream s;
  s << to_string(c.kernel) << " " << to_string(c.dtype) << " B=" << c.batch << " H=" << c.heads
    << " Sq=" << c.seq_q << " Skv=" << c.seq_kv << " D=" << c.head_dim
    << (c.causal ? " causal" : "") << " splits=" << c.num_splits
    << " fault=" << to_string(c.fault);
  return s.str();
}

std::vector<double> row_errors(const AttentionConfig& c, const HostTensor& o,
                               const Reference::Output& ref) {
  const int64_t rows = c.batch * c.heads * c.seq_q, d = c.head_dim;
  std::vector<double> err(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < d; ++e) {
      const double x = o.get_float(r * d + e), y = ref.o[static_cast<size_t>(r * d + e)];
      err[r] = std::isnan(x) ? INFINITY : std::max(err[r], std::abs(x - y));
    }
  return err;
}

double EventError::max() const { return std::max({m, l, o}); }

EventError event_error(const CapturedEvents& ev, size_t i, const Reference& ref) {
  const EventHeader& h = ev.headers[i];
  const RefState want = ref.expected(h);
  const size_t bm = static_cast<size_t>(ev.block_m), d = static_cast<size_t>(ev.head_dim);
  auto diff = [](double got, double expected) {
    if (std::isnan(got)) return double(INFINITY);
    if (got == expected) return 0.0;  // -inf == -inf
    return std::abs(got - expected) / std::max(1.0, std::abs(expected));
  };
  EventError e;
  for (int r = 0; r < h.rows; ++r) {
    e.m = std::max(e.m, diff(ev.m[i * bm + r], want.m[r]));
    e.l = std::max(e.l, diff(ev.l[i * bm + r], want.l[r]));
    for (size_t c = 0; c < d; ++c)
      e.o = std::max(e.o, diff(ev.o[(i * bm + r) * d + c], want.o[r * d + c]));
  }
  return e;
}

Run run_config(const AttentionConfig& config, Backend backend, uint64_t seed, bool trace,
               int cpu_workers) {
  Run run;
  run.inputs = make_random_inputs(config, RandomInputSpec{.seed = seed});
  LaunchRequest req;
  req.config = config;
  req.backend = backend;
  req.trace.enabled = trace;
  req.cpu_workers = cpu_workers;
  run.out = launch_attention(req, run.inputs);
  return run;
}

}  // namespace ts::test
