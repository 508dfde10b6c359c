#include "app/model/analysis/ab_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <compare>
#include <map>
#include <string>

#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/index_ranges.h"
#include "app/model/analysis/state_compare.h"
#include "app/model/analysis/symptoms.h"
#include "base/count_text.h"

namespace ts {
namespace {

// A and B may each be off the reference by its bar, so they may differ by both. The bars'
// absolute parts are rounding errors at the magnitude of the reference; a state far larger than
// that (a faulty reduce's O/l is l times too large) rounds proportionally more on each backend
// (FMA contraction on the GPU, none on the CPU), so the A/B bar also grows with B's magnitude.
QuantityBar sum(const QuantityBar& a, const QuantityBar& b) {
  const bool per_l = a.atol_per_l || b.atol_per_l;
  const double atol = a.atol + b.atol;
  return {atol, a.rtol + b.rtol + (per_l ? 0.0 : atol), per_l};
}
StageBars sum(const StageBars& a, const StageBars& b) {
  return {sum(a.m, b.m), sum(a.l, b.l), sum(a.o_norm, b.o_norm), sum(a.o_raw, b.o_raw)};
}

void check_same_problem(const AttentionSpec& a, const AttentionSpec& b) {
  auto differ = [](const char* what, const std::string& x, const std::string& y) {
    throw AnalysisError(std::string("runs A and B are not the same problem: ") + what + " " + x + " vs " + y +
                        "; compare runs of the same attention (sizes, heads, masks, dtype, scale)");
  };
  auto num = [](auto v) { return std::to_string(v); };
  if (a.batch != b.batch) differ("batch", num(a.batch), num(b.batch));
  if (a.heads_q != b.heads_q) differ("query heads", num(a.heads_q), num(b.heads_q));
  if (a.heads_kv != b.heads_kv) differ("kv heads", num(a.heads_kv), num(b.heads_kv));
  if (a.seq_q != b.seq_q) differ("seq_q", num(a.seq_q), num(b.seq_q));
  if (a.seq_kv != b.seq_kv) differ("seq_kv", num(a.seq_kv), num(b.seq_kv));
  if (a.head_dim != b.head_dim) differ("head_dim", num(a.head_dim), num(b.head_dim));
  if (a.dtype != b.dtype) differ("dtype", std::string(to_string(a.dtype)), std::string(to_string(b.dtype)));
  if (a.effective_scale() != b.effective_scale())
    differ("softmax scale", format_figure(a.effective_scale()), format_figure(b.effective_scale()));
  if (a != b) differ("attention", describe(a), describe(b));  // masks, softcap, lengths, ALiBi
}

// Whether the pairs both runs hold have the same Q, K, V; `note` says where they first differ.
bool same_inputs(const RunView& a, const RunView& b, std::string& note) {
  size_t common = 0;
  // One kind of pair (query heads: q; kv heads: k and v) at a time.
  const auto check = [&](const std::vector<std::array<int32_t, 2>>& pairs_a, bool kv,
                         std::initializer_list<std::pair<const char*, std::pair<const HostTensor*, const HostTensor*>>>
                             tensors) {
    for (size_t pa = 0; pa < pairs_a.size(); ++pa) {
      const int32_t batch = pairs_a[pa][0], head = pairs_a[pa][1];
      const int32_t pb = kv ? b.inputs.kv_index(batch, head) : b.inputs.q_index(batch, head);
      if (pb < 0) continue;
      ++common;
      for (const auto& [name, t] : tensors) {
        const HostTensor &x = *t.first, &y = *t.second;
        if (x.shape.size() != 3 || y.shape.size() != 3 || x.shape[1] != y.shape[1] || x.shape[2] != y.shape[2] ||
            x.dtype != y.dtype) {
          note = std::string(name) + " has shape " + shape_string(x.shape) + " in A and " + shape_string(y.shape) +
                 " in B";
          return false;
        }
        const int64_t elems = x.shape[1] * x.shape[2];
        const size_t es = x.element_size();
        const std::byte* px = x.bytes.data() + pa * static_cast<size_t>(elems) * es;
        const std::byte* py = y.bytes.data() + static_cast<size_t>(pb) * static_cast<size_t>(elems) * es;
        if (std::memcmp(px, py, static_cast<size_t>(elems) * es) == 0) continue;
        int64_t i = 0;
        while (i < elems && std::memcmp(px + static_cast<size_t>(i) * es, py + static_cast<size_t>(i) * es, es) == 0) ++i;
        note = std::string(name) + " of batch " + std::to_string(batch) +
               (kv ? " kv head " : " head ") + std::to_string(head) + " first differs at [" +
               std::to_string(i / x.shape[2]) + ", " + std::to_string(i % x.shape[2]) + "] (" +
               format_figure(x.get_float(static_cast<int64_t>(pa) * elems + i)) + " vs " +
               format_figure(y.get_float(static_cast<int64_t>(pb) * elems + i)) +
               "); capture both runs from the same seed or input files";
        return false;
      }
    }
    return true;
  };
  if (!check(a.inputs.q_pairs, false, {{"q", {&a.inputs.q, &b.inputs.q}}})) return false;
  if (!check(a.inputs.kv_pairs, true, {{"k", {&a.inputs.k, &b.inputs.k}}, {"v", {&a.inputs.v, &b.inputs.v}}}))
    return false;
  if (common == 0) note = "the runs hold no head in common: inputs not compared";
  return true;
}

// What makes two runs' events the same point of a kernel: the stage's name (not its index:
// two recordings may number their stages differently), the rows, the split and the keys
// covered. Not the step: a recording with more events per block (Split-K with tile events)
// numbers the same state differently.
struct PairKey {
  std::string stage;
  int32_t batch, head, q_begin, rows, split;
  std::vector<std::pair<int32_t, int32_t>> keys;
  friend auto operator<=>(const PairKey&, const PairKey&) = default;
};
PairKey pair_key(const RunView& run, size_t i) {
  const EventHeader& h = run.headers[i];
  const StageInfo& st = run.stage_of(i);
  PairKey k{st.name, h.batch, h.head, h.q_begin, h.rows, h.split, {}};
  for (const KeyRange& r : event_key_ranges(h, st, run.attention)) k.keys.push_back({r.begin, r.end});
  return k;
}

RefState state_of(const RunEvent& e, int32_t head_dim) {
  RefState s;
  s.normalized = (e.header.convention & kNormalized) != 0;
  s.rows = e.header.rows;
  s.head_dim = head_dim;
  s.m.assign(e.m.begin(), e.m.begin() + e.header.rows);
  s.l.assign(e.l.begin(), e.l.begin() + e.header.rows);
  s.o.assign(e.o.begin(), e.o.begin() + static_cast<ptrdiff_t>(e.header.rows) * head_dim);
  return s;
}

void note_difference(ABReport& r, uint64_t count, const EventHeader& where, int64_t ia, int64_t ib,
                     const std::vector<int64_t>& rows, double o_norm, double m) {
  r.differing += count;
  if (ia >= 0) r.differing_events_a.push_back(ia);
  if (r.first_difference) return;
  r.first_difference = ABDifference{where, ia, ib, rows, o_norm, m};
}

void compare_events(const RunView& a, const RunView& b, ABReport& r) {
  r.compared_at = "every event";
  std::map<PairKey, size_t> in_b;
  for (size_t j = 0; j < b.num_events(); ++j)
    if (r.b.events[j].compared) in_b.emplace(pair_key(b, j), j);
  std::vector<std::pair<OrderKey, size_t>> order;
  for (size_t i = 0; i < a.num_events(); ++i)
    if (r.a.events[i].compared) order.emplace_back(order_key(a.headers[i], a.stages), i);
  std::sort(order.begin(), order.end());
  size_t matched = 0;
  std::vector<RowError> errors(static_cast<size_t>(a.max_rows));
  // B's values stand where the reference stands: in B's convention, with B's m units (canonical).
  const double scale = a.attention.effective_scale();
  for (const auto& [ok, i] : order) {
    const auto it = in_b.find(pair_key(a, i));
    if (it == in_b.end()) {
      ++r.only_in_one;
      continue;
    }
    ++matched;
    ++r.compared;
    const RunEvent ea = a.event(i), eb = b.event(it->second);
    const StageBars bars = sum(r.a.tolerance.for_stage(a.stage_of(i)), r.b.tolerance.for_stage(b.stage_of(it->second)));
    // NaN on both sides at the same place is no difference between A and B: such values are
    // compared as zeros.
    RefState want = state_of(eb, b.head_dim);
    for (double& m : want.m) m = canonical_m(m, eb.header.convention, scale);
    const bool b_has_m = (eb.header.convention & kNoMax) == 0;
    std::vector<float> am(ea.m.begin(), ea.m.begin() + ea.header.rows), al(ea.l.begin(), ea.l.begin() + ea.header.rows),
        ao(ea.o.begin(), ea.o.begin() + static_cast<ptrdiff_t>(want.o.size()));
    auto unpair_nan = [](std::vector<float>& x, std::vector<double>& y) {
      for (size_t k = 0; k < x.size() && k < y.size(); ++k)
        if (std::isnan(x[k]) && std::isnan(y[k])) x[k] = 0.0f, y[k] = 0.0;
    };
    unpair_nan(am, want.m);
    unpair_nan(al, want.l);
    unpair_nan(ao, want.o);
    const int32_t a_conv = b_has_m ? ea.header.convention : ea.header.convention | kNoMax;
    const TraceState got{a_conv, scale, ea.header.rows, a.head_dim, am, al, ao};
    compare_state(got, want, std::span<RowError>(errors).first(static_cast<size_t>(ea.header.rows)));
    std::vector<int64_t> rows;
    double o_norm = 0, m = 0;
    for (int32_t row = 0; row < ea.header.rows; ++row) {
      const RowError& e = errors[static_cast<size_t>(row)];
      r.max_o_norm_diff = std::max<double>(r.max_o_norm_diff, e.o_norm_err);
      r.max_m_diff = std::max<double>(r.max_m_diff, e.m_err);
      if (!judge_row(e, bars).passes()) {
        rows.push_back(int64_t{ea.header.q_begin} + row);
        o_norm = std::max<double>(o_norm, e.o_norm_err);
        m = std::max<double>(m, e.m_err);
      }
    }
    if (!rows.empty())
      note_difference(r, 1, ea.header, static_cast<int64_t>(i), static_cast<int64_t>(it->second), rows, o_norm, m);
  }
  r.only_in_one += in_b.size() - matched;
}

// The final output of a run, row by row: LSE and O/l per (batch, head, query), from its final
// events (the normalised convention).
struct FinalRows {
  int64_t seq_q = 0, head_dim = 0;
  std::vector<uint8_t> present;  // [batch * heads * seq_q]
  std::vector<int64_t> event;    // [rows]: the event the row was read from
  std::vector<double> lse, o;    // [rows], [rows * head_dim]
};

// The final-kind stage whose rows a run's output is read from: the one of the last pass (the
// kernel's output tensor when the run has it).
int32_t output_stage(const RunView& run) {
  int32_t best = -1;
  for (size_t s = 0; s < run.num_stages(); ++s)
    if (run.stages[s].kind == StageKind::final && (best < 0 || run.stages[s].pass >= run.stages[static_cast<size_t>(best)].pass))
      best = static_cast<int32_t>(s);
  return best;
}

FinalRows final_rows(const RunView& run, const AnalysisReport& rep) {
  FinalRows f;
  const AttentionSpec& spec = run.attention;
  f.seq_q = spec.seq_q;
  f.head_dim = spec.head_dim;
  const size_t rows = static_cast<size_t>(spec.batch * spec.heads_q * spec.seq_q);
  f.present.assign(rows, 0);
  f.event.assign(rows, -1);
  f.lse.assign(rows, 0.0);
  f.o.assign(rows * static_cast<size_t>(f.head_dim), 0.0);
  const int32_t stage = output_stage(run);
  const double scale = spec.effective_scale();
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (!rep.events[i].compared || h.stage != stage) continue;
    const RunEvent e = run.event(i);
    const bool normalized = (h.convention & kNormalized) != 0;
    for (int32_t r = 0; r < h.rows; ++r) {
      const double m = canonical_m(e.m[static_cast<size_t>(r)], h.convention, scale);
      const RowValues v = row_values(m, e.l[static_cast<size_t>(r)], normalized, true);
      const size_t row = static_cast<size_t>((int64_t{h.batch} * spec.heads_q + h.head) * f.seq_q + h.q_begin + r);
      f.present[row] = 1;
      f.event[row] = static_cast<int64_t>(i);
      f.lse[row] = (h.convention & kNoMax) ? std::numeric_limits<double>::quiet_NaN() : v.m;
      for (int64_t c = 0; c < f.head_dim; ++c)
        f.o[row * static_cast<size_t>(f.head_dim) + static_cast<size_t>(c)] =
            scaled_o(e.o[static_cast<size_t>(r * f.head_dim + c)], v, true);
    }
  }
  return f;
}

void compare_outputs(const RunView& a, const RunView& b, ABReport& r) {
  r.compared_at = "the final output";
  const FinalRows fa = final_rows(a, r.a), fb = final_rows(b, r.b);
  const StageBars bars = sum(r.a.tolerance.final_stage, r.b.tolerance.final_stage);
  const AttentionSpec& c = a.attention;
  const size_t d = static_cast<size_t>(c.head_dim);
  const int32_t stage = output_stage(a);
  const int32_t group = std::max(1, a.max_rows);
  // Rows grouped by (batch, head) and blocks of A's event rows, so that a difference names a place in A.
  for (int64_t bh = 0; bh < c.batch * c.heads_q; ++bh) {
    std::map<int64_t, std::vector<int64_t>> differing_by_block;
    double o_norm_max = 0, m_max = 0;
    for (int64_t q = 0; q < c.seq_q; ++q) {
      const size_t row = static_cast<size_t>(bh * c.seq_q + q);
      if (!fa.present[row] || !fb.present[row]) {
        r.only_in_one += fa.present[row] != fb.present[row];
        continue;
      }
      ++r.compared;
      double o_err = 0, o_ref = 0;
      // NaN in both at the same place is no difference between A and B; an LSE one run lacks is
      // not compared.
      auto diff = [](double x, double y) { return std::isnan(x) && std::isnan(y) ? 0.0 : value_error(x, y); };
      for (size_t col = 0; col < d; ++col) {
        o_err = std::max(o_err, diff(fa.o[row * d + col], fb.o[row * d + col]));
        if (std::isfinite(fb.o[row * d + col])) o_ref = std::max(o_ref, std::fabs(fb.o[row * d + col]));
      }
      const double m_err = diff(fa.lse[row], fb.lse[row]);
      r.max_o_norm_diff = std::max(r.max_o_norm_diff, o_err);
      r.max_m_diff = std::max(r.max_m_diff, m_err);
      const bool ok = bar_ratio(o_err, bars.o_norm.bar(o_ref, 1.0)) <= 1.0f &&
                      bar_ratio(m_err, bars.m.bar(std::isfinite(fb.lse[row]) ? std::fabs(fb.lse[row]) : 0.0, 1.0)) <= 1.0f;
      if (!ok) {
        differing_by_block[q / group].push_back(q);
        o_norm_max = std::max(o_norm_max, o_err);
        m_max = std::max(m_max, m_err);
      }
    }
    for (const auto& [block, rows] : differing_by_block) {
      EventHeader where{};
      where.stage = stage;
      where.batch = static_cast<int32_t>(bh / c.heads_q);
      where.head = static_cast<int32_t>(bh % c.heads_q);
      where.kv_head = static_cast<int32_t>(c.kv_head_of(where.head));
      where.q_begin = static_cast<int32_t>(block * group);
      where.rows = static_cast<int32_t>(std::min<int64_t>(group, c.seq_q - where.q_begin));
      where.split = -1;
      const size_t first_row = static_cast<size_t>(bh * c.seq_q + rows.front());
      note_difference(r, rows.size(), where, fa.event[first_row], fb.event[first_row], rows, o_norm_max, m_max);
    }
  }
}

std::string tiling_text(const AnalysisReport& r) {
  if (!r.tiling) {
    std::string s;
    for (const StageReport& st : r.stages)
      if (st.traced) s += (s.empty() ? "" : ", ") + count_of(static_cast<int64_t>(st.events_compared), st.info.name + " event");
    return s.empty() ? "no events" : s;
  }
  const Tiling& t = *r.tiling;
  if (!splits_kv(t.kernel))
    return std::string(to_string(t.kernel)) + ", " + std::to_string(t.block_m) + "x" + std::to_string(t.block_n) + " tiles";
  return std::string(to_string(t.kernel)) + ", " + count_of(t.num_splits, "split") + " of " + count_of(t.kv_tiles_per_split, "kv tile") +
         ", block_m " + std::to_string(t.block_m);
}

std::string backend_of(const AnalysisReport& r) {
  const auto it = r.metadata.find("backend");
  return it == r.metadata.end() ? std::string() : it->second;
}
bool backends_differ(const ABReport& r) {
  return !backend_of(r.a).empty() && !backend_of(r.b).empty() && backend_of(r.a) != backend_of(r.b);
}

Symptom ab_symptom(const ABReport& r) {
  Symptom s;
  // The event, then which of its rows differ (a row range of its own: the event's rows may agree
  // in part, as query 0 does when only later queries read the wrong partials).
  std::string where;
  if (r.first_difference) {
    const std::vector<int64_t>& rows = r.first_difference->query_rows;
    where = describe_event(r.first_difference->where, r.a.stage_table, r.a.attention) + ", where " +
            (rows.size() == 1 ? "query " : "queries ") + format_ranges(std::span<const int64_t>(rows)) +
            (rows.size() == 1 ? " differs" : " differ");
  }
  if (!r.inputs_identical) {
    s.set_kind(SymptomKind::inputs_differ);
    s.line = "A and B did not run on the same inputs, so they were not compared: " + r.inputs_note;
  } else if (r.differing > 0 && r.same_kernel && r.tilings_match && !backends_differ(r)) {
    s.set_kind(SymptomKind::race);
    s.line = "a race: the same kernel on the same inputs gave different results in A and B (" +
             std::to_string(r.differing) + " of " + std::to_string(r.compared) + " events differ, first at " + where +
             "): the result depends on the thread schedule — look for a missing __syncthreads() (or __syncwarp()) "
             "between one thread's write to shared memory and another's access to it: after a tile or partial is "
             "written and before it is read, or after its last reads and before it is overwritten";
  } else if (r.differing > 0) {
    const bool a_bad = !r.a.clean(), b_bad = !r.b.clean();
    s.set_kind(SymptomKind::runs_differ);
    s.line = std::string(r.same_kernel && backends_differ(r)
                             ? "the same kernel on the same inputs gives different results on the " + backend_of(r.a) +
                                   " and " + backend_of(r.b) + " backends: "
                             : "") +
             "A and B differ (" + std::to_string(r.differing) + " of " + std::to_string(r.compared) + " " +
             (r.tilings_match ? "events" : "output rows") + ", first at " + where + ")";
    if (a_bad && !b_bad) s.line += "; B matches the reference, A does not: " + r.a.symptom.line;
    else if (b_bad && !a_bad) s.line += "; A matches the reference, B does not: " + r.b.symptom.line;
    else if (a_bad && b_bad) s.line += "; neither matches the reference. A: " + r.a.symptom.line + ". B: " + r.b.symptom.line;
    else s.line += ", though each is within tolerance of the reference";
  } else if (!r.a.clean() || !r.b.clean()) {
    s.set_kind(SymptomKind::both_diverge);
    s.line = "A and B agree with each other (compared at " + r.compared_at + ") but not with the reference: " +
             (!r.a.clean() ? r.a.symptom.line : r.b.symptom.line);
  } else {
    s.set_kind(SymptomKind::agree);
    s.line = "A and B agree (compared at " + r.compared_at + ", " + std::to_string(r.compared) +
             (r.tilings_match ? " events" : " output rows") + ") and both match the float64 reference";
  }
  if (!r.tilings_match)
    s.details.push_back("the tilings differ (A: " + tiling_text(r.a) + "; B: " + tiling_text(r.b) +
                        "): compared where they meet, the final output");
  if (!r.inputs_note.empty() && r.inputs_identical) s.details.push_back(r.inputs_note);
  if (r.only_in_one) s.details.push_back(std::to_string(r.only_in_one) + (r.tilings_match ? " events" : " output rows") +
                                         " are in one run only (filters or missing events): not compared");
  s.details.push_back("A vs reference: " + std::string(to_string(r.a.verdict)) + ": " + r.a.symptom.line);
  s.details.push_back("B vs reference: " + std::string(to_string(r.b.verdict)) + ": " + r.b.symptom.line);
  return s;
}

// Whether the two runs' events are the same points of a kernel: our kernels' runs with one tiling,
// or runs whose stage tables and event identities (with their keys) coincide.
bool events_match(const RunView& a, const RunView& b) {
  if (a.tiling && b.tiling) return *a.tiling == *b.tiling && a.max_rows == b.max_rows;
  if (a.stages != b.stages || a.num_events() != b.num_events()) return false;
  std::vector<PairKey> ka, kb;
  for (size_t i = 0; i < a.num_events(); ++i) ka.push_back(pair_key(a, i));
  for (size_t i = 0; i < b.num_events(); ++i) kb.push_back(pair_key(b, i));
  std::sort(ka.begin(), ka.end());
  std::sort(kb.begin(), kb.end());
  return ka == kb;
}

}  // namespace

ABReport compare_runs(const RunView& a, const RunView& b, const AnalysisOptions& options) {
  check_same_problem(a.attention, b.attention);
  ABReport r;
  r.a = analyze_run(a, options);
  r.b = analyze_run(b, options);
  r.inputs_identical = same_inputs(a, b, r.inputs_note);
  r.same_kernel = a.config && b.config ? *a.config == *b.config : a.stages == b.stages;
  r.tilings_match = events_match(a, b);
  if (r.inputs_identical) {
    if (r.tilings_match) compare_events(a, b, r);
    else compare_outputs(a, b, r);
  }
  std::vector<int64_t>& events = r.differing_events_a;
  std::sort(events.begin(), events.end(), [&](int64_t x, int64_t y) {
    return std::pair(order_key(a.headers[static_cast<size_t>(x)], a.stages), x) <
           std::pair(order_key(a.headers[static_cast<size_t>(y)], a.stages), y);
  });
  events.erase(std::unique(events.begin(), events.end()), events.end());
  r.verdict = !r.inputs_identical                                         ? Verdict::not_compared
              : (r.differing > 0 || !r.a.clean() || !r.b.clean()) ? Verdict::divergence
                                                                   : Verdict::clean;
  r.symptom = ab_symptom(r);
  return r;
}

}  // namespace ts
