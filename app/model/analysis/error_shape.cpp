// Measured findings on a stage's rows that go wrong by themselves (error_shape.h).
#include "app/model/analysis/error_shape.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <set>
#include <string>

#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/failing_sets.h"
#include "app/model/analysis/index_ranges.h"
#include "base/list_text.h"
#include "app/model/analysis/state_compare.h"

namespace ts {
namespace {

// "all 20 rows of fa1.step over tolerance" / "the one row of ... over tolerance".
std::string rows_over_tolerance(size_t n, const std::string& name) {
  return (n == 1 ? std::string("the one row of ") : "all " + std::to_string(n) + " rows of ") + name + " over tolerance";
}

// One row that goes wrong by itself, in the stored family of its event (an unnormalised event:
// m, l, raw O; a normalised one: LSE, O), trace beside what the step should have made.
struct WrongRow {
  size_t event = 0;
  int32_t r = 0;
  const ReplayStep* step = nullptr;
  bool normalized = false, has_m = true;
  double tm = 0, pm = 0;        // m or LSE
  double tl = 0, pl = 0;        // l (unnormalised events)
  double p_unnorm_l = 0;        // the expected state's l, unnormalised
  double prev_m = -INFINITY;    // the previous state's m (extend steps)
  std::vector<double> to, po;   // O
  double m_bar = 0, l_bar = 0, o_bar = 0;
  double o_norm_bar = 0;        // O / l of an unnormalised row, which the row check judges too
  bool nan = false, pos_inf = false, neg_inf = false, no_key_state = false, expected_empty = false;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct Pair {
  double t, p, bar;
};

// t = c p for one c over every pair (finite, p != 0); nullopt when no c fits or c is 1.
std::optional<double> ratio_fit(const std::vector<Pair>& pairs) {
  std::vector<double> ratios;
  for (const Pair& x : pairs)
    if (std::isfinite(x.t) && std::isfinite(x.p) && x.p != 0.0) ratios.push_back(x.t / x.p);
  if (ratios.size() < 2) return std::nullopt;
  const double c = median(ratios);
  // 1: nothing to say; 0: a constant value, not a ratio (constant_value says it).
  if (!std::isfinite(c) || std::fabs(c - 1.0) < 1e-4 || std::fabs(c) < 1e-6) return std::nullopt;
  for (const Pair& x : pairs) {
    if (!std::isfinite(x.t) || !std::isfinite(x.p)) return std::nullopt;
    if (std::fabs(x.t - c * x.p) > kReplaySlack * x.bar) return std::nullopt;
  }
  return c;
}

// t = p + c for one c over every pair.
std::optional<double> offset_fit(const std::vector<Pair>& pairs) {
  std::vector<double> d;
  for (const Pair& x : pairs)
    if (std::isfinite(x.t) && std::isfinite(x.p)) d.push_back(x.t - x.p);
  if (d.size() < 2) return std::nullopt;
  const double c = median(d);
  for (const Pair& x : pairs) {
    if (!std::isfinite(x.t) || !std::isfinite(x.p)) return std::nullopt;
    if (std::fabs(x.t - x.p - c) > kReplaySlack * x.bar) return std::nullopt;
  }
  if (std::fabs(c) <= kReplaySlack * pairs.front().bar) return std::nullopt;
  return c;
}

struct NamedValue {
  double value;
  std::string name;
};

std::string name_of(double c, const std::vector<NamedValue>& known) {
  for (const NamedValue& k : known)
    if (std::fabs(c / k.value - 1.0) < 2e-3) return k.name;
  return "";
}

std::vector<NamedValue> known_factors(const AttentionSpec& spec, int32_t splits) {
  const double scale = spec.effective_scale();
  std::vector<NamedValue> k = {{std::numbers::log2e, "log2 e"}, {std::numbers::ln2, "ln 2"}, {2.0, "2"}, {0.5, "1/2"}};
  if (std::fabs(scale - 1.0) > 1e-6) {
    k.push_back({scale, "the softmax scale"});
    k.push_back({1.0 / scale, "1 / the softmax scale"});
  }
  if (splits > 2) {
    k.push_back({static_cast<double>(splits), "the split count"});
    k.push_back({1.0 / splits, "1 / the split count"});
  }
  return k;
}

std::string figure_named(double c, const std::vector<NamedValue>& known) {
  const std::string n = name_of(c, known);
  return format_figure(c) + (n.empty() || n == format_figure(c) ? "" : " (" + n + ")");
}

// Rows of a stage beside what they should hold: `local` — the rows that go wrong by themselves
// against their step's correct local prediction; otherwise the rows over tolerance against the
// reference itself (what a constant ratio "to the reference" is measured on).
// Within kDiagnosisRowBudget rows: beyond it, evenly spaced events (`sampled`).
std::vector<WrongRow> collect_rows(const LocalReplay& replay, int32_t stage, bool local, bool& sampled) {
  const RunView& run = replay.run();
  const AnalysisReport& rep = replay.report();
  const AttentionSpec& spec = replay.reference().attention();
  std::vector<WrongRow> out;
  const size_t d = static_cast<size_t>(run.head_dim);
  std::vector<size_t> events;
  for (const ReplayStep& s : replay.steps()) {
    const EventHeader& h = run.headers[s.event];
    if (h.stage != stage || rep.events[s.event].passes || (local && !replay.any_locally_wrong(s.event))) continue;
    events.push_back(s.event);
  }
  for (size_t e : sample_row_blocks(events, run.headers, diagnosis_budget(spec), sampled)) {
    const ReplayStep& s = *replay.step(e);
    const EventHeader& h = run.headers[s.event];
    std::vector<uint8_t> rows_of_interest;
    RefState pred;
    const StageBars& bars = rep.tolerance.for_stage(run.stage_of(s.event));
    if (local) {
      rows_of_interest = replay.locally_wrong(s.event);
      pred = replay.correct_prediction(s);
    } else {
      pred = replay.reference().block(row_block(h))->state(event_key_ranges(h, run.stage_of(s.event), spec));
      rows_of_interest.assign(static_cast<size_t>(h.rows), 0);
      for (int32_t r = 0; r < h.rows; ++r) rows_of_interest[static_cast<size_t>(r)] = !replay.check_row(s.event, r, pred).matches;
    }
    const RefState prev = replay.previous(s);
    const std::shared_ptr<const TraceRows> held = replay.trace(s.event);
    const TraceRows& t = *held;
    const RunEvent ev = run.event(s.event);
    for (int32_t r = 0; r < static_cast<int32_t>(rows_of_interest.size()); ++r) {
      if (!rows_of_interest[static_cast<size_t>(r)]) continue;
      const size_t ri = static_cast<size_t>(r);
      WrongRow w;
      w.event = s.event;
      w.r = r;
      w.step = &s;
      w.normalized = t.stored_normalized;
      w.has_m = t.has_m;
      w.p_unnorm_l = pred.l[ri];
      w.prev_m = s.source == StepSource::extend ? prev.m[ri] : -INFINITY;
      w.expected_empty = row_is_empty(pred, r);
      w.tm = t.state.m[ri];
      w.to.assign(t.state.o.begin() + static_cast<ptrdiff_t>(ri * d), t.state.o.begin() + static_cast<ptrdiff_t>((ri + 1) * d));
      w.po.resize(d);
      double o_scale = 0;
      if (w.normalized) {
        w.pm = w.expected_empty ? -INFINITY : pred.m[ri] + std::log(pred.l[ri]);
        for (size_t c = 0; c < d; ++c) w.po[c] = w.expected_empty ? 0.0 : pred.o[ri * d + c] / pred.l[ri];
      } else {
        w.pm = pred.m[ri];
        w.tl = t.state.l[ri];
        w.pl = pred.l[ri];
        for (size_t c = 0; c < d; ++c) w.po[c] = pred.o[ri * d + c];
      }
      for (double x : w.po) o_scale = std::max(o_scale, std::isfinite(x) ? std::fabs(x) : 0.0);
      const double l_ref = w.normalized ? 1.0 : std::fabs(w.pl);
      w.m_bar = bars.m.bar(std::isfinite(w.pm) ? std::fabs(w.pm) : 0.0, l_ref);
      w.l_bar = bars.l.bar(l_ref, l_ref);
      w.o_bar = (w.normalized ? bars.o_norm : bars.o_raw).bar(o_scale, l_ref);
      if (!w.normalized) {
        double norm_scale = 0;
        for (double x : w.po)
          if (std::isfinite(x) && w.pl != 0.0) norm_scale = std::max(norm_scale, std::fabs(x / w.pl));
        w.o_norm_bar = bars.o_norm.bar(norm_scale, l_ref);
      }
      const float sm = ev.m[ri], sl = ev.l[ri];
      auto note = [&](float x) {
        if (std::isnan(x)) w.nan = true;
        else if (std::isinf(x)) (x > 0 ? w.pos_inf : w.neg_inf) = true;
      };
      // m = -inf is right where the row has seen no key.
      if (w.has_m && !(sm == -INFINITY && w.expected_empty)) note(sm);
      if (!w.normalized) note(sl);
      bool o_zero = true;
      for (size_t c = 0; c < d; ++c) {
        note(ev.o[ri * d + c]);
        o_zero = o_zero && ev.o[ri * d + c] == 0.0f;
      }
      w.no_key_state = sm == -INFINITY && (w.normalized || sl == 0.0f) && o_zero;
      out.push_back(std::move(w));
    }
  }
  return out;
}

std::string rows_text(const std::set<int64_t>& rows) {
  const std::vector<int64_t> v(rows.begin(), rows.end());
  return (v.size() == 1 ? "query " : "queries ") + format_ranges(std::span<const int64_t>(v), 6);
}

}  // namespace

OriginCounts origin_counts(const LocalReplay& replay, int32_t stage) {
  OriginCounts c;
  const RunView& run = replay.run();
  for (const ReplayStep& s : replay.steps()) {
    if (run.headers[s.event].stage != stage) continue;
    if (!replay.report().events[s.event].passes) ++c.failing_events;
    const std::vector<uint8_t>& w = replay.locally_wrong(s.event);
    const uint64_t n = static_cast<uint64_t>(std::count(w.begin(), w.end(), uint8_t{1}));
    if (n) {
      ++c.events;
      c.rows += n;
    }
  }
  return c;
}

std::vector<Finding> measure_error_shape(const LocalReplay& replay, int32_t stage) {
  std::vector<Finding> out;
  bool rows_sampled = false, reference_sampled = false;
  const std::vector<WrongRow> rows = collect_rows(replay, stage, true, rows_sampled);
  if (rows.empty()) return out;
  const std::vector<WrongRow> against_reference = collect_rows(replay, stage, false, reference_sampled);
  // The rows that go wrong by themselves, of which `rows` are those checked.
  const uint64_t wrong_total = rows_sampled ? origin_counts(replay, stage).rows : rows.size();
  // "all 640 rows of fa1.step over tolerance" or, sampled, "... over tolerance checked (evenly spaced events)".
  const std::string checked_ref = reference_sampled ? " checked (evenly spaced events)" : "";
  const RunView& run = replay.run();
  const AnalysisReport& rep = replay.report();
  const AttentionSpec& spec = replay.reference().attention();
  const std::string& name = run.stages[static_cast<size_t>(stage)].name;
  const bool normalized = rows.front().normalized;
  const std::string m_name = normalized ? "LSE" : "m";
  int32_t splits = 0;
  for (const WrongRow& w : rows) splits = std::max(splits, w.step->sequence_length);
  const std::vector<NamedValue> known = known_factors(spec, run.stages[static_cast<size_t>(stage)].kind == StageKind::merge ? splits : 0);
  const double n_rows = static_cast<double>(rows.size());

  // Per quantity: (trace, expected, bar) of every row and whether any is off.
  struct Quantities {
    std::vector<Pair> m, l, o;
    bool m_wrong = false, l_wrong = false, o_wrong = false;
  };
  auto quantities_of = [](const std::vector<WrongRow>& set) {
    Quantities q;
    auto off = [](double t, double p, double bar) { return !(std::fabs(t - p) <= kReplaySlack * bar) && !(t == p); };
    for (const WrongRow& w : set) {
      if (w.has_m) {
        q.m.push_back({w.tm, w.pm, w.m_bar});
        q.m_wrong = q.m_wrong || off(w.tm, w.pm, w.m_bar);
      }
      if (!w.normalized) {
        q.l.push_back({w.tl, w.pl, w.l_bar});
        q.l_wrong = q.l_wrong || off(w.tl, w.pl, w.l_bar);
      }
      for (size_t c = 0; c < w.to.size(); ++c) {
        q.o.push_back({w.to[c], w.po[c], w.o_bar});
        q.o_wrong = q.o_wrong || off(w.to[c], w.po[c], w.o_bar);
        // As LocalReplay::check_row judges an unnormalised row: its O / l too, whose bar may be the
        // tighter one (a row wrong by itself in O / l alone had "m, l and O right", naming nothing).
        if (!w.normalized && w.tl != 0.0 && w.pl != 0.0)
          q.o_wrong = q.o_wrong || off(w.to[c] / w.tl, w.po[c] / w.pl, w.o_norm_bar);
      }
    }
    return q;
  };
  const Quantities local = quantities_of(rows);
  {
    std::vector<std::string> right, wrong;
    // A normalised stage without its LSE (a final output recorded without one) has no m to
    // speak of: it is neither right nor wrong.
    if (!local.m.empty()) (local.m_wrong ? wrong : right).push_back(m_name);
    if (!normalized) (local.l_wrong ? wrong : right).push_back("l");
    // An unnormalised O that is right beside a wrong l leaves O / l wrong, which the failing sets
    // and the first divergence call "O wrong": say which O is right, and that O / l is not.
    const bool raw_o_only = !normalized && !local.o_wrong && local.l_wrong;
    (local.o_wrong ? wrong : right).push_back(raw_o_only ? "the unnormalised O" : "O");
    Finding f;
    f.id = "quantities";
    f.text = (right.empty() ? "" : spoken_list(right, "and") + " right; ") + spoken_list(wrong, "and") + " wrong" +
             (raw_o_only ? " (so O / l is wrong)" : "") + ", in " + checked_wrong_rows_text(rows.size(), wrong_total, rows_sampled, false, name);
    f.numbers = {{"m_wrong", local.m_wrong}, {"l_wrong", local.l_wrong}, {"o_wrong", local.o_wrong}, {"rows", n_rows}};
    out.push_back(f);
  }

  // The same softmax in another representation: m, l (and raw O) off together, LSE and O/l right.
  if (!normalized && (local.m_wrong || local.l_wrong)) {
    bool same = true;
    for (const WrongRow& w : rows) {
      if (!w.has_m || !(w.tl > 0) || !(w.pl > 0) || !std::isfinite(w.tm)) {
        same = false;
        break;
      }
      const double t_lse = w.tm + std::log(w.tl), p_lse = w.pm + std::log(w.pl);
      same = same && std::fabs(t_lse - p_lse) <= kReplaySlack * w.m_bar;
      double scale = 0;
      for (double x : w.po) scale = std::max(scale, std::fabs(x / w.pl));
      const double bar = rep.tolerance.for_stage(run.stage_of(w.event)).o_norm.bar(scale, w.pl);
      for (size_t c = 0; c < w.to.size() && same; ++c) same = std::fabs(w.to[c] / w.tl - w.po[c] / w.pl) <= kReplaySlack * bar;
      if (!same) break;
    }
    if (same) {
      Finding f;
      f.id = "equivalent_state";
      f.text = "in every wrong row LSE = m + log l and O / l are right: the state is the right softmax held with another "
               "running max (m, l and O off together), which the output does not see";
      f.numbers = {{"rows", n_rows}};
      out.push_back(f);
    }
  }

  // A quantity that holds one value in every wrong row (m = 0: a max that never left its start).
  auto add_constant_value = [&](const std::string& q, const std::vector<Pair>& pairs, bool wrong) {
    if (!wrong || pairs.size() < 2) return;
    for (const Pair& x : pairs)
      if (!(x.t == pairs.front().t)) return;
    Finding f;
    f.id = "constant_value";
    f.text = q + " is exactly " + format_figure(pairs.front().t) + " in " + checked_wrong_rows_text(rows.size(), wrong_total, rows_sampled, true, name);
    f.numbers = {{"value", pairs.front().t}, {"rows", n_rows}};
    f.numbers["quantity_" + q] = 1;
    out.push_back(f);
  };
  add_constant_value(m_name, local.m, local.m_wrong);
  if (!normalized) add_constant_value("l", local.l, local.l_wrong);

  // Constant ratios and offsets to the reference, over the stage's rows over tolerance.
  const Quantities ref = quantities_of(against_reference);
  const double n_ref = static_cast<double>(against_reference.size());
  auto add_ratio = [&](const std::string& q, const std::vector<Pair>& pairs, bool wrong) {
    if (!wrong) return false;
    if (const std::optional<double> c = ratio_fit(pairs)) {
      Finding f;
      f.id = "constant_ratio";
      f.text = q + " is " + figure_named(*c, known) + " times the reference in " +
               rows_over_tolerance(against_reference.size(), name) + checked_ref;
      f.numbers = {{"ratio", *c}, {"rows", n_ref}};
      f.numbers["quantity_" + q] = 1;
      out.push_back(f);
      return true;
    }
    return false;
  };
  const bool m_ratio = add_ratio(m_name, ref.m, ref.m_wrong);
  add_ratio("l", ref.l, ref.l_wrong);
  const bool o_ratio = add_ratio("O", ref.o, ref.o_wrong);
  if (ref.m_wrong && !m_ratio)
    if (const std::optional<double> c = offset_fit(ref.m)) {
      Finding f;
      f.id = "constant_offset";
      f.text = m_name + " is the reference " + (*c < 0 ? "- " : "+ ") + format_figure(std::fabs(*c)) + " in " +
               rows_over_tolerance(against_reference.size(), name) + checked_ref;
      f.numbers = {{"offset", *c}, {"rows", n_ref}};
      out.push_back(f);
    }

  // Per-row factors of O, per-row offsets of m, to the reference.
  if (ref.o_wrong && !o_ratio) {
    std::vector<double> factors;
    bool fits = true, is_l = true, is_inv_l = true;
    for (const WrongRow& w : against_reference) {
      double tp = 0, pp = 0;
      for (size_t c = 0; c < w.to.size(); ++c) {
        tp += w.to[c] * w.po[c];
        pp += w.po[c] * w.po[c];
      }
      if (!(pp > 0) || !std::isfinite(tp)) {
        fits = false;
        break;
      }
      const double f = tp / pp;
      for (size_t c = 0; c < w.to.size() && fits; ++c) fits = std::fabs(w.to[c] - f * w.po[c]) <= kReplaySlack * w.o_bar;
      factors.push_back(f);
      const double l = w.p_unnorm_l;
      is_l = is_l && l > 0 && std::fabs(f / l - 1.0) < 1e-3 && std::fabs(l - 1.0) > 1e-3;
      is_inv_l = is_inv_l && l > 0 && std::fabs(f * l - 1.0) < 1e-3 && std::fabs(l - 1.0) > 1e-3;
    }
    if (fits && !factors.empty()) {
      Finding f;
      f.id = "row_factor";
      const auto [lo, hi] = std::minmax_element(factors.begin(), factors.end());
      f.numbers = {{"min_factor", *lo}, {"max_factor", *hi}, {"rows", n_ref}};
      if (is_l) {
        f.text = "O is l times the reference in each row over tolerance (each row's own l: from " + format_figure(*lo) +
                 " to " + format_figure(*hi) + ")";
        f.numbers["factor_is_l"] = 1;
      } else if (is_inv_l) {
        f.text = "O is the reference divided by l in each row over tolerance";
        f.numbers["factor_is_inverse_l"] = 1;
      } else {
        f.text = "O is a factor times the reference in each row over tolerance, a different factor per row (" +
                 format_figure(*lo) + " to " + format_figure(*hi) + ")";
      }
      out.push_back(f);
    }
  }
  if (ref.m_wrong && !m_ratio) {
    int sign = 0;
    for (int s : {-1, 1}) {
      bool all = !against_reference.empty();
      for (const WrongRow& w : against_reference) {
        const double l = w.p_unnorm_l;
        all = all && l > 0 && std::isfinite(w.tm) && std::fabs(w.tm - (w.pm + s * std::log(l))) <= kReplaySlack * w.m_bar &&
              std::fabs(std::log(l)) > kReplaySlack * w.m_bar;
      }
      if (all) sign = s;
    }
    if (sign) {
      Finding f;
      f.id = "row_offset";
      f.text = m_name + " is the reference " + (sign < 0 ? "- log l" : "+ log l") + " in each row over tolerance";
      f.numbers = {{"log_l_sign", sign}, {"rows", n_ref}};
      out.push_back(f);
    }
  }

  // Rows whose running max rose at their step.
  {
    uint64_t in_extend = 0, rose = 0;
    uint64_t rose_rows_total = 0;
    std::set<size_t> events;
    for (const WrongRow& w : rows) {
      if (w.step->source != StepSource::extend) continue;
      ++in_extend;
      rose += w.pm > w.prev_m && !w.normalized;
      events.insert(w.event);
    }
    for (size_t e : events) {
      const ReplayStep* s = replay.step(e);
      const RefState pred = replay.correct_prediction(*s);
      const RefState prev = replay.previous(*s);
      for (int32_t r = 0; r < pred.rows; ++r) rose_rows_total += pred.m[static_cast<size_t>(r)] > prev.m[static_cast<size_t>(r)];
    }
    if (in_extend > 0 && in_extend == rows.size() && !normalized && (rose == in_extend || rose == 0)) {
      Finding f;
      f.id = "rows_max_rose";
      f.numbers = {{"wrong_rows", static_cast<double>(in_extend)}, {"rows_max_rose", static_cast<double>(rose_rows_total)},
                   {"all_wrong_rose", rose == in_extend ? 1.0 : 0.0}};
      f.text = rose == in_extend
                   ? "every wrong row is a row whose running max rose at its step (" + std::to_string(in_extend) + " wrong of " +
                         std::to_string(rose_rows_total) + " rows that rose in those events): the rows that differ are "
                         "those a rescale by exp(m_old - m_new) changes"
                   : "no wrong row's running max rose at its step";
      out.push_back(f);
    }
  }

  // Rows whose causal diagonal is inside their step's keys; events at the end of the keys.
  if (spec.causal != CausalAlign::none) {
    uint64_t on_diagonal = 0;
    for (const WrongRow& w : rows) {
      const EventHeader& h = run.headers[w.event];
      const int64_t diagonal = int64_t{h.q_begin} + w.r + spec.offset(h.batch);
      for (const KeyRange& k : w.step->piece) on_diagonal += diagonal >= k.begin && diagonal < k.end;
    }
    // Said only where it tells rows apart: an event whose piece holds every key its rows see (an
    // output, a state made in one step) has every row's diagonal inside it, wrong or right.
    bool some_row_elsewhere = false;
    for (const ReplayStep& s : replay.steps()) {
      if (some_row_elsewhere) break;
      const EventHeader& h = run.headers[s.event];
      if (h.stage != stage) continue;
      for (int32_t r = 0; r < h.rows && !some_row_elsewhere; ++r) {
        const int64_t diagonal = int64_t{h.q_begin} + r + spec.offset(h.batch);
        bool inside = false;
        for (const KeyRange& k : s.piece) inside = inside || (diagonal >= k.begin && diagonal < k.end);
        some_row_elsewhere = !inside;
      }
    }
    if (on_diagonal == rows.size() && some_row_elsewhere) {
      Finding f;
      f.id = "diagonal_rows";
      f.text = "every wrong row has its causal diagonal (key i + offset) inside its step's keys: the rows whose visible "
               "keys end inside the step";
      f.numbers = {{"rows", n_rows}};
      out.push_back(f);
    }
  }
  {
    std::set<size_t> wrong_events;
    for (const WrongRow& w : rows) wrong_events.insert(w.event);
    bool all_at_end = true;
    for (size_t e : wrong_events) {
      int64_t end = 0;
      for (const KeyRange& k : replay.step(e)->piece) end = std::max<int64_t>(end, k.end);
      all_at_end = all_at_end && end == spec.kv_len(run.headers[e].batch);
    }
    uint64_t others_at_end = 0;
    for (const ReplayStep& s : replay.steps()) {
      if (run.headers[s.event].stage != stage || wrong_events.count(s.event)) continue;
      int64_t end = 0;
      for (const KeyRange& k : s.piece) end = std::max<int64_t>(end, k.end);
      others_at_end += end == spec.kv_len(run.headers[s.event].batch);
    }
    const bool some_stop_short = others_at_end < replay.steps().size() && [&] {
      for (const ReplayStep& s : replay.steps()) {
        if (run.headers[s.event].stage != stage) continue;
        int64_t end = 0;
        for (const KeyRange& k : s.piece) end = std::max<int64_t>(end, k.end);
        if (end < spec.kv_len(run.headers[s.event].batch)) return true;
      }
      return false;
    }();
    if (all_at_end && some_stop_short && run.stages[static_cast<size_t>(stage)].kind != StageKind::final) {
      Finding f;
      f.id = "end_of_keys";
      f.text = "every event that goes wrong by itself is one whose step reaches the end of the keys (key " +
               std::to_string(spec.seq_kv - 1) + ")" +
               (others_at_end == 0 ? "; every other event stops short of it" : "");
      f.numbers = {{"events", static_cast<double>(wrong_events.size())}, {"others_at_end", static_cast<double>(others_at_end)}};
      out.push_back(f);
    }
  }

  // Which steps of their sequences.
  {
    std::set<size_t> wrong_events;
    size_t stage_events = 0;
    for (const ReplayStep& s : replay.steps()) stage_events += run.headers[s.event].stage == stage;
    bool all_last = true, all_first = true, none_first = true, multi = false;
    for (const WrongRow& w : rows)
      if (wrong_events.insert(w.event).second) {
        multi = multi || w.step->sequence_length > 1;
        all_last = all_last && w.step->position == w.step->sequence_length - 1;
        all_first = all_first && w.step->position == 0;
        none_first = none_first && w.step->position > 0;
      }
    if (multi) {
      Finding f;
      f.id = "step_positions";
      if (wrong_events.size() == stage_events) f.text = "every step of every sequence goes wrong by itself";
      else if (all_first) f.text = "only the first step of each sequence goes wrong by itself";
      else if (all_last) f.text = "only the last step of each sequence goes wrong by itself; the earlier steps are right";
      else if (none_first) f.text = "the first step of each sequence is right; later steps go wrong by themselves";
      else f.text = "steps go wrong by themselves at several places in their sequences, the first steps included";
      f.numbers = {{"only_first", all_first}, {"only_last", all_last}, {"first_right", none_first}};
      out.push_back(f);
    }
  }

  // Non-finite rows.
  {
    std::set<int64_t> nan_rows, pos_rows, neg_rows, nan_no_key;
    std::vector<std::string> examples;
    std::set<int64_t> example_queries;
    uint64_t no_key_state_but_keys = 0;
    for (const WrongRow& w : rows) {
      const EventHeader& h = run.headers[w.event];
      const int64_t q = int64_t{h.q_begin} + w.r;
      if (w.nan) nan_rows.insert(q);
      if (w.pos_inf) pos_rows.insert(q);
      if (w.neg_inf) neg_rows.insert(q);
      if (w.nan && w.expected_empty) nan_no_key.insert(q);
      if (w.no_key_state && !w.expected_empty) {
        ++no_key_state_but_keys;
        if (examples.size() < 2 && example_queries.insert(q).second) {
          const std::vector<KeyRange> keys = event_key_ranges(h, run.stage_of(w.event), spec);
          const AttentionSpec::KeySpan span = spec.visible_keys(h.batch, q);
          int64_t first = -1, last = -1, count = 0;
          for (const KeyRange& k : keys) {
            const int64_t b = std::max<int64_t>(k.begin, span.begin), e = std::min<int64_t>(k.end, span.end);
            if (b >= e) continue;
            count += e - b;
            first = first < 0 ? b : std::min(first, b);
            last = std::max(last, e - 1);
          }
          examples.push_back("query " + std::to_string(q) + " holds the no-key state (m = -inf, l = 0) at " +
                             describe_event(h, rep.stage_table, spec) + ", but the reference sees " +
                             (count == 1 ? "key " + std::to_string(first)
                                         : std::to_string(count) + " keys (" + std::to_string(first) + "-" + std::to_string(last) + ")") +
                             " there");
        }
      }
    }
    if (!nan_rows.empty() || !pos_rows.empty() || !neg_rows.empty()) {
      Finding f;
      f.id = "non_finite";
      std::vector<std::string> parts;
      if (!nan_rows.empty()) parts.push_back("NaN in " + rows_text(nan_rows));
      if (!pos_rows.empty()) parts.push_back("+Inf in " + rows_text(pos_rows));
      if (!neg_rows.empty()) parts.push_back("-Inf in " + rows_text(neg_rows));
      std::string text;
      for (size_t i = 0; i < parts.size(); ++i) text += (i ? "; " : "") + parts[i];
      text += " (of the wrong rows of " + name + ")";
      if (!nan_no_key.empty())
        text += (nan_no_key.size() == nan_rows.size() ? "; every NaN row is one that sees no key there" : "; NaN rows that see no key there: " + rows_text(nan_no_key));
      for (const std::string& e : examples) text += "; " + e;
      if (no_key_state_but_keys > examples.size())
        text += " (" + std::to_string(no_key_state_but_keys) + " such rows in all)";
      f.text = text;
      f.numbers = {{"nan_rows", static_cast<double>(nan_rows.size())},
                   {"pos_inf_rows", static_cast<double>(pos_rows.size())},
                   {"neg_inf_rows", static_cast<double>(neg_rows.size())},
                   {"nan_rows_without_keys", static_cast<double>(nan_no_key.size())},
                   {"no_key_state_rows_with_keys", static_cast<double>(no_key_state_but_keys)}};
      out.push_back(f);
    }
  }
  return out;
}

std::string wrong_rows_text(uint64_t rows, const std::string& count, const std::string& stage) {
  const std::string of = stage.empty() ? "" : " of " + stage;
  if (rows == 1) return "the one row" + of + " that goes wrong by itself";
  return count + " rows" + of + " that go wrong by themselves";
}

std::string checked_wrong_rows_text(uint64_t checked, uint64_t total, bool sampled, bool every, const std::string& stage) {
  const std::string n = std::to_string(checked);
  if (!sampled) return wrong_rows_text(checked, (every ? "all " : "the ") + n, stage);
  return (every ? "every one of the " : "the ") + n + " checked (evenly spaced events) of " +
         wrong_rows_text(total, "the " + std::to_string(total), stage);
}

}  // namespace ts
