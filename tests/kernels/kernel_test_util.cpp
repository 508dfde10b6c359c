#include "tests/kernels/kernel_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace ts::test {

uint64_t case_seed(uint64_t test_seed, uint64_t salt) {  // splitmix64 of the two
  uint64_t z = test_seed + 0x9e3779b97f4a7c15ull * (salt + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

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

HeadInputs head_inputs(const AttentionConfig& c, const AttentionInputs& in) {
  // [batch, heads, seq, d] is [pairs, seq, d] with the pairs in (batch, head) order; K and V
  // likewise with the kv heads.
  HeadInputs h;
  for (int32_t b = 0; b < c.batch; ++b) {
    for (int32_t hd = 0; hd < c.heads; ++hd) h.q_pairs.push_back({b, hd});
    for (int32_t hd = 0; hd < c.kv_heads(); ++hd) h.kv_pairs.push_back({b, hd});
  }
  h.q = in.q;
  h.q.shape = {c.batch * c.heads, c.seq_q, c.head_dim};
  h.k = in.k;
  h.k.shape = {c.batch * c.kv_heads(), c.seq_kv, c.head_dim};
  h.v = in.v;
  h.v.shape = {c.batch * c.kv_heads(), c.seq_kv, c.head_dim};
  return h;
}

ReferenceOutput reference_of(const AttentionConfig& c, const AttentionInputs& in) {
  return reference_output(attention_spec(c), head_inputs(c, in));
}

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
                     const LaunchOutcome& out, const ReferenceOutput& ref) {
  const NaiveOutput naive = naive_attention(attention_spec(config), head_inputs(config, inputs));
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
    << " Hkv=" << c.kv_heads() << " Sq=" << c.seq_q << " Skv=" << c.seq_kv << " D=" << c.head_dim
    << (c.causal ? " causal" : "") << " window=" << window_text(c.window_left, c.window_right)
    << " softcap=" << c.softcap << " splits=" << c.num_splits << " fault=" << to_string(c.fault);
  return s.str();
}

std::vector<double> row_errors(const AttentionConfig& c, const HostTensor& o, const ReferenceOutput& ref) {
  const int64_t rows = c.batch * c.heads * c.seq_q, d = c.head_dim;
  std::vector<double> err(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < d; ++e) {
      const double x = o.get_float(r * d + e), y = ref.o[static_cast<size_t>(r * d + e)];
      err[r] = std::isnan(x) ? INFINITY : std::max(err[r], std::abs(x - y));
    }
  return err;
}

namespace {
RowBlock row_block_of(const EventHeader& h) { return RowBlock{h.batch, h.head, h.q_begin, h.rows}; }
}  // namespace

EventReference::EventReference(const AttentionConfig& config, const AttentionInputs& inputs,
                               const CapturedEvents& events)
    : inputs_(attention_spec(config), head_inputs(config, inputs)), stages_(events.stages) {
  for (const auto* list : {&events.headers, &events.missing})
    for (const EventHeader& h : *list) {
      std::vector<int64_t>& b = boundaries_[row_block_of(h)];
      for (int32_t k = 0; k < h.num_key_ranges; ++k) {
        b.push_back(h.keys[k].begin);
        b.push_back(h.keys[k].end);
      }
    }
}

const RowBlockReference& EventReference::row_block(const RowBlock& block) const {
  auto it = blocks_.find(block);
  if (it == blocks_.end()) {
    const auto b = boundaries_.find(block);
    it = blocks_.emplace(block, compute_row_block(inputs_, block, b == boundaries_.end() ? std::vector<int64_t>{}
                                                                                          : b->second))
             .first;
  }
  return *it->second;
}

RefState EventReference::expected(const EventHeader& h) const {
  if (h.stage < 0 || static_cast<size_t>(h.stage) >= stages_.size())
    throw std::invalid_argument("event of stage " + std::to_string(h.stage) + " outside the stage table");
  const RowBlockReference& block = row_block(row_block_of(h));
  const RefState canonical = stages_[static_cast<size_t>(h.stage)].kind == StageKind::final
                                 ? block.output()
                                 : block.state(std::span<const KeyRange>(h.keys, static_cast<size_t>(h.num_key_ranges)));
  return express(canonical, h.convention, spec().effective_scale());
}

double final_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f32: return kStateTolerance;
    case DType::f16: return 2 * 0x1p-10;
    case DType::bf16: return 2 * 0x1p-7;
  }
  return 0.0;
}

double EventError::max() const { return std::max({m, l, o}); }

EventError event_error(const CapturedEvents& ev, size_t i, const EventReference& ref) {
  const EventHeader& h = ev.headers[i];
  const RefState want = ref.expected(h);
  const size_t rows = static_cast<size_t>(ev.max_rows), d = static_cast<size_t>(ev.head_dim);
  auto diff = [](double got, double expected) {
    if (std::isnan(got)) return double(INFINITY);
    if (got == expected) return 0.0;  // -inf == -inf
    return std::abs(got - expected) / std::max(1.0, std::abs(expected));
  };
  // What the event's convention does not record is not compared (event.h): the l channel of a
  // normalised state, the m channel of one without a max.
  const bool has_l = (h.convention & tilescope::kNormalized) == 0;
  const bool has_m = (h.convention & tilescope::kNoMax) == 0;
  EventError e;
  for (size_t r = 0; r < static_cast<size_t>(h.rows); ++r) {
    if (has_m) e.m = std::max(e.m, diff(ev.m[i * rows + r], want.m[r]));
    if (has_l) e.l = std::max(e.l, diff(ev.l[i * rows + r], want.l[r]));
    for (size_t c = 0; c < d; ++c) e.o = std::max(e.o, diff(ev.o[(i * rows + r) * d + c], want.o[r * d + c]));
  }
  return e;
}

Run run_config(const AttentionConfig& config, Backend backend, uint64_t seed, const RunOptions& o) {
  Run run;
  run.inputs = make_random_inputs(config, RandomInputSpec{.seed = seed});
  LaunchRequest req;
  req.config = config;
  req.backend = backend;
  req.trace.enabled = o.trace;
  req.trace.filter = o.filter;
  req.trace.capacity_events = o.capacity_events;
  req.tile_events = o.tile_events;
  req.cpu_workers = o.cpu_workers;
  run.out = launch_attention(req, run.inputs);
  return run;
}

Run run_config(const AttentionConfig& config, Backend backend, uint64_t seed, bool trace, int cpu_workers) {
  return run_config(config, backend, seed, RunOptions{.trace = trace, .cpu_workers = cpu_workers});
}

LaunchPlan plan_of(const LaunchOutcome& out, const RunOptions& o) {
  TraceRequest req;
  req.enabled = o.trace;
  req.filter = o.filter;
  req.capacity_events = o.capacity_events;
  return plan_launch(out.config, kCpuNominalSmCount, req, o.tile_events);
}

std::vector<SlotOwner> slot_owners(const LaunchPlan& plan) {
  struct Base {
    int64_t slot;
    SlotOwner owner;
  };
  std::vector<Base> bases;
  const size_t stages = plan.stages.size();
  for (const PlannedKernel& k : plan.kernels)
    for (size_t i = 0; i < k.slot_base.size(); ++i)
      if (k.slot_base[i] >= 0)
        bases.push_back({k.slot_base[i], {&k, i / stages, static_cast<int32_t>(i % stages), 0}});
  std::sort(bases.begin(), bases.end(), [](const Base& a, const Base& b) { return a.slot < b.slot; });
  std::vector<SlotOwner> owners(static_cast<size_t>(plan.trace_requested));
  for (size_t i = 0; i < bases.size(); ++i) {
    const int64_t end = i + 1 < bases.size() ? bases[i + 1].slot : plan.trace_requested;
    if (end <= bases[i].slot)
      throw std::logic_error("the slot table gives two (block, stage) pairs the base " +
                             std::to_string(bases[i].slot));
    for (int64_t s = bases[i].slot; s < end; ++s) {
      owners[static_cast<size_t>(s)] = bases[i].owner;
      owners[static_cast<size_t>(s)].index = static_cast<int32_t>(s - bases[i].slot);
    }
  }
  if (!bases.empty() && bases.front().slot != 0) throw std::logic_error("the slot table does not start at slot 0");
  return owners;
}

bool same_identity(const EventHeader& a, const EventHeader& b) {
  if (std::tie(a.stage, a.convention, a.batch, a.head, a.kv_head, a.q_begin, a.rows, a.split, a.step, a.block,
               a.num_key_ranges) != std::tie(b.stage, b.convention, b.batch, b.head, b.kv_head, b.q_begin, b.rows,
                                             b.split, b.step, b.block, b.num_key_ranges))
    return false;
  for (int32_t k = 0; k < a.num_key_ranges && k < kMaxKeyRanges; ++k)
    if (a.keys[k].begin != b.keys[k].begin || a.keys[k].end != b.keys[k].end) return false;
  return true;
}

std::string describe(const EventHeader& h) {
  std::ostringstream s;
  s << "{stage " << h.stage << ", convention " << h.convention << ", batch " << h.batch << ", head " << h.head
    << ", kv_head " << h.kv_head << ", rows [" << h.q_begin << ", +" << h.rows << "), split " << h.split << ", step "
    << h.step << ", block " << h.block << ", keys";
  for (int32_t k = 0; k < h.num_key_ranges && k < kMaxKeyRanges; ++k)
    s << " [" << h.keys[k].begin << ", " << h.keys[k].end << ")";
  s << "}";
  return s.str();
}

}  // namespace ts::test
