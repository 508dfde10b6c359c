#include "app/model/analysis/ab_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

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

void check_same_problem(const AttentionConfig& a, const AttentionConfig& b) {
  auto differ = [](const char* what, const std::string& x, const std::string& y) {
    throw AnalysisError(std::string("runs A and B are not the same problem: ") + what + " " + x + " vs " + y +
                        "; compare runs of the same sizes, masking and dtype");
  };
  if (a.batch != b.batch) differ("batch", std::to_string(a.batch), std::to_string(b.batch));
  if (a.heads != b.heads) differ("heads", std::to_string(a.heads), std::to_string(b.heads));
  if (a.seq_q != b.seq_q) differ("seq_q", std::to_string(a.seq_q), std::to_string(b.seq_q));
  if (a.seq_kv != b.seq_kv) differ("seq_kv", std::to_string(a.seq_kv), std::to_string(b.seq_kv));
  if (a.head_dim != b.head_dim) differ("head_dim", std::to_string(a.head_dim), std::to_string(b.head_dim));
  if (a.causal != b.causal) differ("causal", a.causal ? "on" : "off", b.causal ? "on" : "off");
  if (a.dtype != b.dtype) differ("dtype", std::string(to_string(a.dtype)), std::string(to_string(b.dtype)));
  if (a.effective_scale() != b.effective_scale())
    differ("softmax scale", format_figure(a.effective_scale()), format_figure(b.effective_scale()));
}

// Whether the pairs both runs hold have the same Q, K, V; `note` says where they first differ.
bool same_inputs(const RunView& a, const RunView& b, std::string& note) {
  size_t common = 0;
  for (size_t pa = 0; pa < a.inputs.pairs.size(); ++pa) {
    const int32_t batch = a.inputs.pairs[pa][0], head = a.inputs.pairs[pa][1];
    const int32_t pb = b.pair_index(batch, head);
    if (pb < 0) continue;
    ++common;
    const std::pair<const char*, std::pair<const HostTensor*, const HostTensor*>> tensors[] = {
        {"q", {&a.inputs.q, &b.inputs.q}}, {"k", {&a.inputs.k, &b.inputs.k}}, {"v", {&a.inputs.v, &b.inputs.v}}};
    for (const auto& [name, t] : tensors) {
      const HostTensor &x = *t.first, &y = *t.second;
      if (x.shape.size() != 3 || x.shape != y.shape || x.dtype != y.dtype) {
        note = std::string("inputs.") + name + " has shape " + shape_string(x.shape) + " in A and " +
               shape_string(y.shape) + " in B";
        return false;
      }
      const int64_t elems = x.shape[1] * x.shape[2];
      const size_t es = x.element_size();
      const std::byte* px = x.bytes.data() + static_cast<size_t>(pa) * static_cast<size_t>(elems) * es;
      const std::byte* py = y.bytes.data() + static_cast<size_t>(pb) * static_cast<size_t>(elems) * es;
      if (std::memcmp(px, py, static_cast<size_t>(elems) * es) == 0) continue;
      int64_t i = 0;
      while (i < elems && std::memcmp(px + static_cast<size_t>(i) * es, py + static_cast<size_t>(i) * es, es) == 0) ++i;
      note = std::string("the inputs differ: ") + name + " of batch " + std::to_string(batch) + " head " +
             std::to_string(head) + " first differs at [" + std::to_string(i / x.shape[2]) + ", " +
             std::to_string(i % x.shape[2]) + "] (" + format_figure(x.get_float(static_cast<int64_t>(pa) * elems + i)) +
             " vs " + format_figure(y.get_float(static_cast<int64_t>(pb) * elems + i)) +
             "); capture both runs from the same seed or input files";
      return false;
    }
  }
  if (common == 0) note = "the runs hold no (batch, head) pair in common: inputs not compared";
  return true;
}

RefState state_of(const RunEvent& e, int32_t head_dim) {
  RefState s;
  s.convention = static_cast<Convention>(e.header.convention);
  s.rows = e.header.rows;
  s.head_dim = head_dim;
  s.m.assign(e.m.begin(), e.m.begin() + e.header.rows);
  s.l.assign(e.l.begin(), e.l.begin() + e.header.rows);
  s.o.assign(e.o.begin(), e.o.begin() + static_cast<ptrdiff_t>(e.header.rows) * head_dim);
  return s;
}

void note_difference(ABReport& r, uint64_t count, const EventKey& key, const KvTileRange& kv, int64_t ia,
                     int64_t ib, const std::vector<int64_t>& rows, double o_norm, double m) {
  r.differing += count;
  if (r.first_difference) return;
  r.first_difference = ABDifference{key, kv, ia, ib, rows, o_norm, m};
}

void compare_events(const RunView& a, const RunView& b, ABReport& r) {
  r.compared_at = "every event";
  const Tiling& t = r.a.tiling;
  std::map<EventKey, size_t> in_b;
  for (size_t j = 0; j < b.num_events(); ++j)
    if (r.b.events[j].compared) in_b.emplace(event_key(b.headers[j]), j);
  std::vector<std::pair<OrderKey, size_t>> order;
  for (size_t i = 0; i < a.num_events(); ++i)
    if (r.a.events[i].compared) order.emplace_back(order_key(event_key(a.headers[i]), t), i);
  std::sort(order.begin(), order.end());
  size_t matched = 0;
  std::vector<RowError> errors(static_cast<size_t>(a.block_m));
  for (const auto& [ok, i] : order) {
    const EventKey key = event_key(a.headers[i]);
    const auto it = in_b.find(key);
    if (it == in_b.end()) {
      ++r.only_in_one;
      continue;
    }
    ++matched;
    ++r.compared;
    const RunEvent ea = a.event(i), eb = b.event(it->second);
    const StageBars bars = sum(r.a.tolerance.for_stage(static_cast<Stage>(key.stage)),
                               r.b.tolerance.for_stage(static_cast<Stage>(key.stage)));
    // NaN on both sides at the same place is no difference between A and B: such values are
    // compared as zeros.
    RefState want = state_of(eb, b.head_dim);
    std::vector<float> am(ea.m.begin(), ea.m.begin() + ea.header.rows), al(ea.l.begin(), ea.l.begin() + ea.header.rows),
        ao(ea.o.begin(), ea.o.begin() + static_cast<ptrdiff_t>(want.o.size()));
    auto unpair_nan = [](std::vector<float>& x, std::vector<double>& y) {
      for (size_t k = 0; k < x.size() && k < y.size(); ++k)
        if (std::isnan(x[k]) && std::isnan(y[k])) x[k] = 0.0f, y[k] = 0.0;
    };
    unpair_nan(am, want.m);
    unpair_nan(al, want.l);
    unpair_nan(ao, want.o);
    const TraceState got{static_cast<Convention>(ea.header.convention), ea.header.rows, a.head_dim, am, al, ao};
    compare_state(got, want, std::span<RowError>(errors).first(static_cast<size_t>(ea.header.rows)));
    std::vector<int64_t> rows;
    double o_norm = 0, m = 0;
    for (int32_t row = 0; row < ea.header.rows; ++row) {
      const RowError& e = errors[static_cast<size_t>(row)];
      r.max_o_norm_diff = std::max<double>(r.max_o_norm_diff, e.o_norm_err);
      r.max_m_diff = std::max<double>(r.max_m_diff, e.m_err);
      if (!judge_row(e, bars).passes()) {
        rows.push_back(static_cast<int64_t>(key.q_tile) * t.block_m + row);
        o_norm = std::max<double>(o_norm, e.o_norm_err);
        m = std::max<double>(m, e.m_err);
      }
    }
    if (!rows.empty()) note_difference(r, 1, key, expected_kv_range(key, t), static_cast<int64_t>(i),
                                       static_cast<int64_t>(it->second), rows, o_norm, m);
  }
  r.only_in_one += in_b.size() - matched;
}

// The final output of a run, row by row: LSE and O/l per (batch, head, query), from its final
// events (the normalised convention).
struct FinalRows {
  int64_t seq_q = 0, head_dim = 0;
  std::vector<uint8_t> present;  // [batch * heads * seq_q]
  std::vector<double> lse, o;    // [rows], [rows * head_dim]
};

FinalRows final_rows(const RunView& run, const AnalysisReport& rep) {
  FinalRows f;
  f.seq_q = rep.config.seq_q;
  f.head_dim = rep.config.head_dim;
  const size_t rows = static_cast<size_t>(rep.config.batch * rep.config.heads * rep.config.seq_q);
  f.present.assign(rows, 0);
  f.lse.assign(rows, 0.0);
  f.o.assign(rows * static_cast<size_t>(f.head_dim), 0.0);
  for (size_t i = 0; i < run.num_events(); ++i) {
    const EventHeader& h = run.headers[i];
    if (!rep.events[i].compared || h.stage != static_cast<int32_t>(Stage::final_output)) continue;
    const RunEvent e = run.event(i);
    const Convention conv = static_cast<Convention>(h.convention);
    for (int32_t r = 0; r < h.rows; ++r) {
      const RowValues v = row_values(e.m[static_cast<size_t>(r)], e.l[static_cast<size_t>(r)], conv, Convention::normalized);
      const size_t row = static_cast<size_t>((static_cast<int64_t>(h.batch) * rep.config.heads + h.head) * f.seq_q +
                                             static_cast<int64_t>(h.q_tile) * rep.tiling.block_m + r);
      f.present[row] = 1;
      f.lse[row] = v.m;
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
  const AttentionConfig& c = r.a.config;
  const size_t d = static_cast<size_t>(c.head_dim);
  // Rows grouped by (batch, head, A's query tile), so that a difference names a place in A.
  for (int64_t bh = 0; bh < c.batch * c.heads; ++bh) {
    std::map<int32_t, std::vector<int64_t>> differing_by_tile;
    double o_norm_max = 0, m_max = 0;
    for (int64_t q = 0; q < c.seq_q; ++q) {
      const size_t row = static_cast<size_t>(bh * c.seq_q + q);
      if (!fa.present[row] || !fb.present[row]) {
        r.only_in_one += fa.present[row] != fb.present[row];
        continue;
      }
      ++r.compared;
      double o_err = 0, o_ref = 0;
      // NaN in both at the same place is no difference between A and B.
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
        differing_by_tile[static_cast<int32_t>(q / r.a.tiling.block_m)].push_back(q);
        o_norm_max = std::max(o_norm_max, o_err);
        m_max = std::max(m_max, m_err);
      }
    }
    for (const auto& [tile, rows] : differing_by_tile) {
      EventKey key{static_cast<int32_t>(Stage::final_output), static_cast<int32_t>(bh / c.heads),
                   static_cast<int32_t>(bh % c.heads), tile, -1, 0};
      note_difference(r, rows.size(), key, expected_kv_range(key, r.a.tiling), -1, -1, rows, o_norm_max, m_max);
    }
  }
}

std::string tiling_text(const Tiling& t) {
  if (t.kernel == KernelKind::fa1)
    return "fa1, " + std::to_string(t.block_m) + "x" + std::to_string(t.block_n) + " tiles";
  return "splitk, " + count_of(t.num_splits, "split") + " of " + count_of(t.kv_tiles_per_split, "kv tile") +
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
  const std::string where = r.first_difference
                                ? describe_event(r.first_difference->key, r.first_difference->kv, r.a.tiling) +
                                      ", queries " +
                                      format_ranges(std::span<const int64_t>(r.first_difference->query_rows))
                                : std::string();
  if (!r.inputs_identical) {
    s.kind = "inputs_differ";
    s.line = "A and B did not run on the same inputs, so they are not compared: " + r.inputs_note;
  } else if (r.differing > 0 && r.same_kernel && r.tilings_match && !backends_differ(r)) {
    s.kind = "race";
    s.line = "a race: the same kernel on the same inputs gave different results in A and B (" +
             std::to_string(r.differing) + " of " + std::to_string(r.compared) + " events differ, first at " + where +
             "): the result depends on the thread schedule — look for a missing __syncthreads() between the last "
             "reads of a shared-memory tile and the writes that replace it";
  } else if (r.differing > 0) {
    const bool a_bad = !r.a.clean(), b_bad = !r.b.clean();
    s.kind = "runs_differ";
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
    s.kind = "both_diverge";
    s.line = "A and B agree with each other (compared at " + r.compared_at + ") but not with the reference: " +
             (!r.a.clean() ? r.a.symptom.line : r.b.symptom.line);
  } else {
    s.kind = "agree";
    s.line = "A and B agree (compared at " + r.compared_at + ", " + std::to_string(r.compared) +
             (r.tilings_match ? " events" : " output rows") + ") and both match the float64 reference";
  }
  if (!r.tilings_match)
    s.details.push_back("the tilings differ (A: " + tiling_text(r.a.tiling) + "; B: " + tiling_text(r.b.tiling) +
                        "): compared where they meet, the final output");
  if (!r.inputs_note.empty() && r.inputs_identical) s.details.push_back(r.inputs_note);
  if (r.only_in_one) s.details.push_back(std::to_string(r.only_in_one) + (r.tilings_match ? " events" : " output rows") +
                                         " are in one run only (filters or missing events): not compared");
  s.details.push_back("A vs reference: " + std::string(to_string(r.a.verdict)) + ": " + r.a.symptom.line);
  s.details.push_back("B vs reference: " + std::string(to_string(r.b.verdict)) + ": " + r.b.symptom.line);
  return s;
}

}  // namespace

ABReport compare_runs(const RunView& a, const RunView& b, const AnalysisOptions& options) {
  check_same_problem(a.config, b.config);
  ABReport r;
  r.a = analyze_run(a, options);
  r.b = analyze_run(b, options);
  r.inputs_identical = same_inputs(a, b, r.inputs_note);
  r.same_kernel = a.config == b.config;
  r.tilings_match = r.a.tiling == r.b.tiling && a.block_m == b.block_m;
  if (r.inputs_identical) {
    if (r.tilings_match) compare_events(a, b, r);
    else compare_outputs(a, b, r);
  }
  r.verdict = (!r.inputs_identical || r.differing > 0 || !r.a.clean() || !r.b.clean()) ? Verdict::divergence
                                                                                           : Verdict::clean;
  r.symptom = ab_symptom(r);
  return r;
}

}  // namespace ts
