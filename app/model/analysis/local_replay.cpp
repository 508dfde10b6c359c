// Local replay: each event's source, the combine rules, the row check (local_replay.h).
#include "app/model/analysis/local_replay.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/row_states.h"
#include "app/model/analysis/state_compare.h"

namespace ts {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// |got - want| where NaN matches NaN and equal infinities match.
double replay_error(double got, double want) {
  const bool gn = std::isnan(got), wn = std::isnan(want);
  if (gn || wn) return gn && wn ? 0.0 : kInf;
  if (got == want) return 0.0;
  return std::fabs(got - want);
}

double magnitude(double x) { return std::isfinite(x) ? std::fabs(x) : 0.0; }

// The unit roundoff of a storage precision (half an ulp of 1).
double storage_roundoff(DType dtype) {
  switch (dtype) {
    case DType::f32: return std::ldexp(1.0, -24);
    case DType::f16: return std::ldexp(1.0, -11);
    case DType::bf16: return std::ldexp(1.0, -8);
  }
  return std::ldexp(1.0, -24);
}

double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }
double weight(double m_part, double m) { return m_part == -kInf ? 0.0 : std::exp(m_part - m); }

using RowsKey = std::tuple<int32_t, int32_t, int32_t, int32_t>;  // batch, head, q_begin, rows
RowsKey rows_key(const EventHeader& h) { return {h.batch, h.head, h.q_begin, h.rows}; }

bool single_range(const EventHeader& h) { return h.num_key_ranges == 1; }

bool same_ranges(const EventHeader& a, const EventHeader& b) {
  if (a.num_key_ranges != b.num_key_ranges) return false;
  for (int32_t k = 0; k < a.num_key_ranges; ++k)
    if (a.keys[k].begin != b.keys[k].begin || a.keys[k].end != b.keys[k].end) return false;
  return true;
}

}  // namespace

SampleBudget diagnosis_budget(const AttentionSpec& spec) {
  const uint64_t per_row = static_cast<uint64_t>(std::max<int64_t>(1, spec.seq_kv * spec.head_dim));
  return {kDiagnosisRowBudget, std::max<uint64_t>(1, kDiagnosisReferenceBudget / per_row)};
}

RefState empty_state(int32_t rows, int32_t head_dim) {
  RefState s;
  s.rows = rows;
  s.head_dim = head_dim;
  s.m.assign(static_cast<size_t>(rows), -kInf);
  s.l.assign(static_cast<size_t>(rows), 0.0);
  s.o.assign(static_cast<size_t>(rows) * static_cast<size_t>(head_dim), 0.0);
  return s;
}

bool row_is_empty(const RefState& s, int32_t r) {
  return s.m[static_cast<size_t>(r)] == -kInf && s.l[static_cast<size_t>(r)] == 0.0;
}

LocalReplay::LocalReplay(const RunView& run, const RunReference& reference, const AnalysisReport& report)
    : run_(run), reference_(reference), report_(report) {
  wrong_.resize(run.num_events());
  plan();
}

void LocalReplay::plan() {
  const AttentionSpec& spec = reference_.attention();
  const size_t n = run_.num_events();
  step_of_event_.assign(n, -1);
  auto compared = [&](size_t i) { return report_.events[i].compared; };
  auto kind_of = [&](size_t i) { return run_.stage_of(i).kind; };
  auto order = [&](size_t i) { return order_key(run_.headers[i], run_.stages); };

  // State events by rows (for copies, merge pieces and output sources).
  std::map<RowsKey, std::vector<size_t>> by_rows;
  for (size_t i = 0; i < n; ++i)
    if (compared(i)) by_rows[rows_key(run_.headers[i])].push_back(i);

  // Sequences: running states of one stage, rows and split (merges: any split) over growing keys.
  std::map<std::tuple<int32_t, RowsKey, int32_t>, std::vector<size_t>> groups;
  for (size_t i = 0; i < n; ++i) {
    if (!compared(i) || kind_of(i) == StageKind::final) continue;
    const EventHeader& h = run_.headers[i];
    groups[{h.stage, rows_key(h), kind_of(i) == StageKind::merge ? INT_MIN : h.split}].push_back(i);
  }
  int32_t sequence = 0;
  for (auto& [key, events] : groups) {
    bool chain = events.size() > 1;
    for (size_t e : events) {
      const EventHeader& h = run_.headers[e];
      chain = chain && single_range(h) && h.keys[0].begin == run_.headers[events[0]].keys[0].begin;
    }
    if (chain) {
      std::sort(events.begin(), events.end(), [&](size_t a, size_t b) {
        return std::make_pair(run_.headers[a].keys[0].end, order(a)) < std::make_pair(run_.headers[b].keys[0].end, order(b));
      });
      // Ends never decrease (sorted); a step may add no key (a merge of an empty split).
    }
    if (!chain) {
      for (size_t e : events) {
        ReplayStep s;
        s.event = e;
        s.piece = event_key_ranges(run_.headers[e], run_.stage_of(e), spec);
        s.sequence = sequence++;
        steps_.push_back(s);
      }
      continue;
    }
    for (size_t k = 0; k < events.size(); ++k) {
      const EventHeader& h = run_.headers[events[k]];
      ReplayStep s;
      s.event = events[k];
      s.position = static_cast<int32_t>(k);
      s.sequence_length = static_cast<int32_t>(events.size());
      s.sequence = sequence;
      const int32_t begin = k == 0 ? h.keys[0].begin : run_.headers[events[k - 1]].keys[0].end;
      s.piece = {KeyRange{begin, h.keys[0].end}};
      if (k > 0) {
        s.source = StepSource::extend;
        s.prev = static_cast<int64_t>(events[k - 1]);
        if (k > 1) s.prev2 = static_cast<int64_t>(events[k - 2]);
      }
      steps_.push_back(s);
    }
    ++sequence;
  }

  // Merge pieces: a recorded state of the same rows over exactly the piece (the latest).
  for (ReplayStep& s : steps_) {
    if (kind_of(s.event) != StageKind::merge || s.piece.size() != 1) continue;
    std::optional<OrderKey> best;
    for (size_t j : by_rows[rows_key(run_.headers[s.event])]) {
      const EventHeader& c = run_.headers[j];
      if (kind_of(j) != StageKind::state || !single_range(c) || c.keys[0].begin != s.piece[0].begin ||
          c.keys[0].end != s.piece[0].end)
        continue;
      if (!best || order(j) > *best) {
        best = order(j);
        s.piece_event = static_cast<int64_t>(j);
      }
    }
  }
  // Copies: a state alone in its sequence that repeats an earlier state of another stage.
  for (ReplayStep& s : steps_) {
    if (s.sequence_length != 1 || kind_of(s.event) != StageKind::state) continue;
    const EventHeader& h = run_.headers[s.event];
    std::optional<OrderKey> best;
    for (size_t j : by_rows[rows_key(h)]) {
      const EventHeader& c = run_.headers[j];
      if (j == s.event || c.stage == h.stage || kind_of(j) != StageKind::state || c.split != h.split ||
          !same_ranges(c, h) || !(order(j) < order(s.event)))
        continue;
      if (!best || order(j) > *best) {
        best = order(j);
        s.prev = static_cast<int64_t>(j);
        s.source = StepSource::copy;
      }
    }
  }
  // Outputs: an earlier output of the same rows (the output tensor holds what the kernel's final
  // stage recorded), else the latest earlier state of the same rows that covers every key the
  // rows see.
  for (size_t i = 0; i < n; ++i) {
    if (!compared(i) || kind_of(i) != StageKind::final) continue;
    const EventHeader& h = run_.headers[i];
    ReplayStep s;
    s.event = i;
    s.sequence = sequence++;
    s.piece = {KeyRange{0, static_cast<int32_t>(spec.seq_kv)}};
    std::optional<OrderKey> latest_output;
    for (size_t j : by_rows[rows_key(h)]) {
      if (kind_of(j) != StageKind::final || run_.headers[j].stage == h.stage || !(order(j) < order(i))) continue;
      if (latest_output && !(order(j) > *latest_output)) continue;
      latest_output = order(j);
      s.prev = static_cast<int64_t>(j);
      s.source = StepSource::copy;
    }
    if (s.source == StepSource::copy) {
      steps_.push_back(s);
      continue;
    }
    std::vector<int64_t> visible(static_cast<size_t>(h.rows));
    for (int32_t r = 0; r < h.rows; ++r) {
      const std::vector<KeyRange> all = visible_in(spec, h.batch, int64_t{h.q_begin} + r, s.piece);
      visible[static_cast<size_t>(r)] = count_keys(all);
    }
    std::optional<OrderKey> best;
    for (size_t j : by_rows[rows_key(h)]) {
      if (kind_of(j) == StageKind::final || !(order(j) < order(i))) continue;
      if (best && !(order(j) > *best)) continue;
      const EventHeader& c = run_.headers[j];
      const std::vector<KeyRange> ranges = event_key_ranges(c, run_.stage_of(j), spec);
      bool covers = true;
      for (int32_t r = 0; r < h.rows && covers; ++r)
        covers = count_keys(visible_in(spec, h.batch, int64_t{h.q_begin} + r, ranges)) == visible[static_cast<size_t>(r)];
      if (!covers) continue;
      best = order(j);
      s.prev = static_cast<int64_t>(j);
      s.source = StepSource::normalise;
    }
    steps_.push_back(s);
  }
  for (size_t k = 0; k < steps_.size(); ++k) step_of_event_[steps_[k].event] = static_cast<int64_t>(k);
}

const ReplayStep* LocalReplay::step(size_t event) const {
  const int64_t k = event < step_of_event_.size() ? step_of_event_[event] : -1;
  return k < 0 ? nullptr : &steps_[static_cast<size_t>(k)];
}

std::shared_ptr<const TraceRows> LocalReplay::trace(size_t event) const {
  constexpr size_t kRecent = 16;
  {
    std::lock_guard lock(trace_mutex_);
    for (size_t k = recent_traces_.size(); k-- > 0;)
      if (recent_traces_[k].first == event) return recent_traces_[k].second;
  }
  const RunEvent ev = run_.event(event);
  const EventHeader& h = ev.header;
  auto t = std::make_shared<TraceRows>();
  t->stored_normalized = (h.convention & kNormalized) != 0;
  t->has_m = (h.convention & kNoMax) == 0;
  const size_t rows = static_cast<size_t>(h.rows), d = static_cast<size_t>(run_.head_dim);
  RefState& s = t->state;
  s.rows = h.rows;
  s.head_dim = run_.head_dim;
  s.m.resize(rows);
  s.l.resize(rows);
  s.o.resize(rows * d);
  const double scale = reference_.attention().effective_scale();
  std::optional<RefState> expected;
  if (!t->has_m) expected = reference_.expected(h);
  for (size_t r = 0; r < rows; ++r) {
    // Without a recorded m channel the reference's stands in (in the stored family: LSE or m).
    double m = 0;
    if (t->has_m) m = canonical_m(ev.m[r], h.convention, scale);
    else if (t->stored_normalized && !expected->normalized)
      m = expected->l[r] == 0.0 ? -kInf : expected->m[r] + std::log(expected->l[r]);
    else m = expected->m[r];
    double l = ev.l[r];
    if (t->stored_normalized) l = m == -kInf ? 0.0 : (std::isnan(m) ? kNaN : 1.0);
    s.m[r] = m;
    s.l[r] = l;
    for (size_t c = 0; c < d; ++c) s.o[r * d + c] = ev.o[r * d + c];
  }
  std::lock_guard lock(trace_mutex_);
  if (recent_traces_.size() == kRecent) recent_traces_.erase(recent_traces_.begin());
  recent_traces_.emplace_back(event, t);
  return t;
}

RefState LocalReplay::piece_state(const ReplayStep& s, const RowBlockReference* block) const {
  if (s.piece_event >= 0) return trace(static_cast<size_t>(s.piece_event))->state;
  if (block) return block->state(s.piece);
  return reference_.block(row_block(run_.headers[s.event]))->state(s.piece);
}

RefState LocalReplay::previous(const ReplayStep& s) const {
  if (s.prev >= 0) return trace(static_cast<size_t>(s.prev))->state;
  const EventHeader& h = run_.headers[s.event];
  return empty_state(h.rows, run_.head_dim);
}

RefState LocalReplay::previous2(const ReplayStep& s) const {
  if (s.prev2 >= 0) return trace(static_cast<size_t>(s.prev2))->state;
  const EventHeader& h = run_.headers[s.event];
  return empty_state(h.rows, run_.head_dim);
}

RefState LocalReplay::combine(const ReplayStep& s, const RefState& x, CombineRule rule, CombineExponents exponents) const {
  if (s.source == StepSource::copy || s.source == StepSource::normalise) return previous(s);
  const RefState p = previous(s);
  const RefState p2 = rule == CombineRule::stale_accumulator ? previous2(s) : RefState{};
  RefState out = empty_state(p.rows, p.head_dim);
  const size_t d = static_cast<size_t>(p.head_dim);
  for (size_t r = 0; r < static_cast<size_t>(p.rows); ++r) {
    const double mp = p.m[r], lp = p.l[r], mx = x.m[r], lx = x.l[r];
    const double* op = p.o.data() + r * d;
    const double* ox = x.o.data() + r * d;
    double* o = out.o.data() + r * d;
    auto copy_from = [&](double m, double l, const double* src) {
      out.m[r] = m;
      out.l[r] = l;
      std::copy(src, src + d, o);
    };
    if (rule == CombineRule::drop_previous) {
      copy_from(mx, lx, ox);
      continue;
    }
    if (rule == CombineRule::skip_piece) {
      copy_from(mp, lp, op);
      continue;
    }
    if (rule == CombineRule::own_max) {
      if (mx == -kInf) {
        copy_from(mp, lp, op);
      } else {
        out.m[r] = mx;
        out.l[r] = lp + lx;
        for (size_t c = 0; c < d; ++c) o[c] = op[c] + ox[c];
      }
      continue;
    }
    const double m = nan_max(mp, mx);
    if (m == -kInf) continue;  // no key seen: the empty state
    const double a = mp == -kInf ? 0.0 : std::exp(exponents.prev * (mp - m));
    const double w = mx == -kInf ? 0.0 : std::exp(exponents.piece * (mx - m));
    const double twice = rule == CombineRule::piece_twice ? 2.0 : 1.0;
    out.m[r] = m;
    out.l[r] = (rule == CombineRule::l_not_rescaled ? lp : a * lp) + twice * w * lx;
    // The stale product: what the previous step added, P - a_P P2 (zero before a second step).
    double stale_a = 0.0;
    if (rule == CombineRule::stale_accumulator && s.prev >= 0) stale_a = weight(p2.m[r], mp);
    for (size_t c = 0; c < d; ++c) {
      double v = (rule == CombineRule::o_not_rescaled ? op[c] : a * op[c]) +
                 twice * w * (rule == CombineRule::o_weighted_by_l ? lx : 1.0) * ox[c];
      if (rule == CombineRule::stale_accumulator && s.prev >= 0) v += op[c] - stale_a * p2.o[r * d + c];
      o[c] = v;
    }
  }
  return out;
}

RowCheck LocalReplay::check_row(size_t event, int32_t r, const RefState& predicted, const StoredChannelRule& rule,
                                std::vector<uint8_t>* columns) const {
  RowCheck out;
  const std::shared_ptr<const TraceRows> held = trace(event);
  const TraceRows& t = *held;
  const StageBars& bars = report_.tolerance.for_stage(run_.stage_of(event));
  const size_t ri = static_cast<size_t>(r), d = static_cast<size_t>(run_.head_dim);
  const double pm = predicted.m[ri], pl = predicted.l[ri];
  const double* po = predicted.o.data() + ri * d;
  const double* to = t.state.o.data() + ri * d;
  if (rule.nan_where_no_key && pm == -kInf && pl == 0.0) {
    // The model expects NaN somewhere in the row: the trace's stored values say.
    const RunEvent ev = run_.event(event);
    bool nan = std::isnan(ev.m[ri]) || (!t.stored_normalized && std::isnan(ev.l[ri]));
    for (size_t c = 0; c < d && !nan; ++c) nan = std::isnan(ev.o[ri * d + c]);
    out.matches = nan;
    if (!nan) {
      out.failed = kFailNaN;
      out.ratio = static_cast<float>(kInf);
    }
    return out;
  }
  // A step rounds what it stores: half an ulp of the value in its precision (the input dtype for
  // an output, float32 for a state) comes on top of the bar, which was sized on the reference's
  // magnitudes and would not cover a carried error's larger values.
  const double unit_roundoff = storage_roundoff(run_.stage_of(event).kind == StageKind::final ? reference_.attention().dtype : DType::f32);
  auto check = [&](double got, double want, double bar, uint8_t bit, int64_t column = -1) {
    const double err = replay_error(got, want);
    const double allowed = bar * kReplaySlack + (std::isfinite(want) ? unit_roundoff * std::fabs(want) : 0.0);
    const double ratio = err == 0.0 ? 0.0 : err / allowed;
    out.ratio = std::max(out.ratio, static_cast<float>(std::min(ratio, kInf)));
    if (ratio > 1.0) {
      out.failed |= bit;
      if (columns && column >= 0) (*columns)[static_cast<size_t>(column)] = 1;
    }
  };
  const double log_l = pl > 0.0 ? std::log(pl) : 0.0;
  // A row that saw no key holds O = 0 however it is scaled.
  const double l_power = rule.o_l_power == 0 || !(pl > 0.0) ? 1.0 : std::pow(pl, rule.o_l_power);
  if (t.stored_normalized) {
    const bool empty = pl == 0.0;
    double lse = empty ? (std::isnan(pm) ? kNaN : -kInf) : pm + std::log(pl);
    lse = lse * rule.m_factor + rule.m_log_l * log_l;
    if (t.has_m) check(t.state.m[ri], lse, bars.m.bar(magnitude(lse), 1.0), kFailM);
    auto want = [&](size_t c) { return (empty && po[c] == 0.0) ? 0.0 : po[c] / pl * l_power; };
    double scale = 0;
    for (size_t c = 0; c < d; ++c) scale = std::max(scale, magnitude(want(c)));
    const double bar = bars.o_norm.bar(scale, 1.0);
    for (size_t c = 0; c < d; ++c) check(to[c], want(c), bar, kFailONorm, static_cast<int64_t>(c));
  } else {
    const double m = pm * rule.m_factor + rule.m_log_l * log_l;
    if (t.has_m) check(t.state.m[ri], m, bars.m.bar(magnitude(m), pl), kFailM);
    check(t.state.l[ri], pl, bars.l.bar(magnitude(pl), pl), kFailL);
    double raw_scale = 0, norm_scale = 0;
    for (size_t c = 0; c < d; ++c) {
      const double raw = po[c] * l_power;
      raw_scale = std::max(raw_scale, magnitude(raw));
      norm_scale = std::max(norm_scale, magnitude((pl == 0.0 && raw == 0.0) ? 0.0 : raw / pl));
    }
    const double raw_bar = bars.o_raw.bar(raw_scale, magnitude(pl)), norm_bar = bars.o_norm.bar(norm_scale, magnitude(pl));
    const double tl = t.state.l[ri];
    for (size_t c = 0; c < d; ++c) {
      const double raw = po[c] * l_power;
      const double norm = (pl == 0.0 && raw == 0.0) ? 0.0 : raw / pl;
      check(to[c], raw, raw_bar, kFailORaw, static_cast<int64_t>(c));
      const double tn = (tl == 0.0 && to[c] == 0.0) ? 0.0 : to[c] / tl;
      check(tn, norm, norm_bar, kFailONorm, static_cast<int64_t>(c));
    }
  }
  out.matches = out.failed == 0;
  return out;
}

RefState LocalReplay::correct_prediction(const ReplayStep& s, const RowBlockReference* block) const {
  if (s.source == StepSource::copy || s.source == StepSource::normalise) return previous(s);
  return combine(s, piece_state(s, block), CombineRule::merge);
}

std::vector<uint8_t> LocalReplay::wrong_rows_of(size_t event, const RowBlockReference* block) const {
  const RefState pred = correct_prediction(*step(event), block);
  std::vector<uint8_t> wrong(static_cast<size_t>(run_.headers[event].rows), 0);
  for (int32_t r = 0; r < run_.headers[event].rows; ++r) wrong[static_cast<size_t>(r)] = !check_row(event, r, pred).matches;
  return wrong;
}

const std::vector<uint8_t>& LocalReplay::locally_wrong(size_t event) const {
  static const std::vector<uint8_t> none;
  if (!report_.events[event].compared || report_.events[event].passes) return none;
  std::optional<std::vector<uint8_t>>& slot = wrong_[event];
  if (!slot) slot = wrong_rows_of(event, nullptr);
  return *slot;
}

void LocalReplay::find_locally_wrong(unsigned workers) const {
  std::map<RowBlock, std::vector<size_t>> by_block;
  for (size_t i = 0; i < run_.num_events(); ++i)
    if (report_.events[i].compared && !report_.events[i].passes && !wrong_[i]) by_block[row_block(run_.headers[i])].push_back(i);
  std::vector<RowBlock> blocks;
  std::vector<const std::vector<size_t>*> groups;
  for (const auto& [block, events] : by_block) {
    blocks.push_back(block);
    groups.push_back(&events);
  }
  reference_.for_each_block(blocks, workers, [&](size_t g, const RowBlockReference& block) {
    for (size_t e : *groups[g]) wrong_[e] = wrong_rows_of(e, &block);
  });
}

bool LocalReplay::any_locally_wrong(size_t event) const {
  const std::vector<uint8_t>& w = locally_wrong(event);
  return std::any_of(w.begin(), w.end(), [](uint8_t x) { return x != 0; });
}

}  // namespace ts
