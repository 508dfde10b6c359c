#include "app/model/analysis/report_json.h"

#include <algorithm>
#include <cmath>

#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/failing_sets.h"
#include "app/model/analysis/index_ranges.h"
#include "app/model/analysis/state_compare.h"

namespace ts {
namespace {

nlohmann::json quantity_json(const QuantityStats& q) {
  return {{"max_abs", json_figure(q.max_abs)},
          {"max_rel", json_figure(q.max_rel)},
          {"max_ratio", json_figure(q.max_ratio)},
          {"failing_rows", q.failing_rows}};
}

nlohmann::json bar_json(const QuantityBar& b) {
  return {{"atol", json_figure(b.atol)}, {"rtol", json_figure(b.rtol)}, {"atol_per_l", b.atol_per_l}};
}

nlohmann::json bars_json(const StageBars& b) {
  return {{"m", bar_json(b.m)}, {"l", bar_json(b.l)}, {"o_norm", bar_json(b.o_norm)}, {"o_raw", bar_json(b.o_raw)}};
}

nlohmann::json quantities(uint8_t failed) {
  nlohmann::json q = nlohmann::json::array();
  if (failed & kFailNaN) q.push_back("NaN");
  if (failed & kFailM) q.push_back("m");
  if (failed & kFailL) q.push_back("l");
  if (failed & kFailONorm) q.push_back("o_norm");
  if (failed & kFailORaw) q.push_back("o_raw");
  return q;
}

// The coordinates of an event: stage, batch, head, kv head, query rows, split, step, keys.
nlohmann::json place_json(const EventHeader& h, const std::vector<StageInfo>& stages) {
  const bool known = h.stage >= 0 && static_cast<size_t>(h.stage) < stages.size();
  nlohmann::json keys = nlohmann::json::array();
  for (int32_t k = 0; k < std::clamp(h.num_key_ranges, 0, kMaxKeyRanges); ++k) keys.push_back({h.keys[k].begin, h.keys[k].end});
  nlohmann::json j = {{"stage", known ? stages[static_cast<size_t>(h.stage)].name : "?"},
                      {"stage_index", h.stage},
                      {"stage_kind", known ? std::string(to_string(stages[static_cast<size_t>(h.stage)].kind)) : "?"},
                      {"batch", h.batch},
                      {"head", h.head},
                      {"kv_head", h.kv_head},
                      {"q_begin", h.q_begin},
                      {"rows", h.rows},
                      {"split", h.split},
                      {"step", h.step},
                      {"block", h.block},
                      {"keys", keys}};
  return j;
}

// Sorted indices as inclusive runs: [[0, 15], [17, 17]].
nlohmann::json runs_json(const std::vector<int64_t>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    out.push_back({v[i], v[j]});
    i = j + 1;
  }
  return out;
}

nlohmann::json index_set_json(const IndexSet& s, const IndexNames& names) {
  return {{"failing", runs_json(s.failing)}, {"compared", runs_json(s.compared)}, {"all", s.all()},
          {"count", s.failing.size()}, {"of", s.compared.size()}, {"text", index_set_text(s, names)}};
}

nlohmann::json failing_sets_json(const FailingSets& f) {
  return {{"events_failing", f.events_failing},
          {"events_compared", f.events_compared},
          {"batches", index_set_json(f.batches, kBatchNames)},
          {"heads", index_set_json(f.heads, kHeadNames)},
          {"query_rows", index_set_json(f.query_rows, kQueryNames)},
          {"splits", index_set_json(f.splits, kSplitNames)},
          {"steps", index_set_json(f.steps, kEventOfItsBlock)},
          {"key_ends", index_set_json(f.key_ends, kKeyNames)},
          {"columns", index_set_json(f.columns, kColumnNames)},
          {"column_events_checked", f.column_events_checked},
          {"quantities", quantities(f.quantities)},
          {"text", failing_sets_text(f)}};
}

nlohmann::json numbers_json(const std::map<std::string, double>& numbers) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : numbers) j[k] = json_figure(v);
  return j;
}

nlohmann::json mechanism_json(const Mechanism& m) {
  return {{"id", m.id}, {"claim", m.claim}, {"scope", m.scope}, {"evidence", m.evidence}, {"numbers", numbers_json(m.numbers)},
          {"meaning", std::string(symptom_kind_info(m.kind).meaning)}};
}

nlohmann::json worst_cell_json(const WorstCell& w, const std::vector<StageInfo>& stages) {
  return {{"place", place_json(w.header, stages)},
          {"event_index", w.event_index},
          {"query", w.query},
          {"quantity", w.quantity},
          {"column", w.column < 0 ? nlohmann::json(nullptr) : nlohmann::json(w.column)},
          {"trace", json_figure(w.trace)},
          {"trace_l", w.trace_l ? json_figure(*w.trace_l) : nlohmann::json(nullptr)},
          {"reference", json_figure(w.reference)},
          {"abs_error", json_figure(w.abs_error)},
          {"rel_error", json_figure(w.rel_error)},
          {"allowed", json_figure(w.allowed)},
          {"atol", json_figure(w.atol)},
          {"rtol", json_figure(w.rtol)},
          {"row_scale", json_figure(w.row_scale)},
          {"error_over_allowed", json_figure(w.ratio)}};
}

nlohmann::json non_finite_json(const NonFiniteRow& n, const std::vector<StageInfo>& stages) {
  return {{"place", place_json(n.header, stages)},
          {"event_index", n.event_index},
          {"query", n.query},
          {"nan", n.nan},
          {"pos_inf", n.pos_inf},
          {"neg_inf", n.neg_inf},
          {"m_non_finite", n.m_non_finite},
          {"l_non_finite", n.l_non_finite},
          {"o_columns_non_finite", n.o_columns},
          {"holds_no_key_state", n.holds_no_key_state},
          {"reference_keys", n.reference_keys},
          {"reference_span", {n.reference_span.begin, n.reference_span.end}}};
}

nlohmann::json tolerance_json(const Tolerance& t) {
  nlohmann::json j = {{"kind", t.from_rule ? "rule" : "explicit"}, {"description", t.describe()},
                      {"rule", std::string(comparison_rule())},
                      {"intermediate", bars_json(t.intermediate)}, {"final", bars_json(t.final_stage)},
                      {"final_from_f32", t.final_from_f32}};
  // The bars of the other formulations the run's stages declare (StageInfo::p_rounded, exp2_folded).
  if (t.forms.p_rounded) j["intermediate_p_rounded"] = bars_json(t.intermediate_p_rounded);
  if (t.forms.folded) j["intermediate_exp2_folded"] = bars_json(t.intermediate_folded);
  if (t.forms.folded_p_rounded) j["intermediate_exp2_folded_p_rounded"] = bars_json(t.intermediate_folded_p_rounded);
  if (t.from_rule) {
    j["naive_errors"] = {{"m_f32", json_figure(t.naive.m_f32)},
                         {"l_rel_f32", json_figure(t.naive.l_rel_f32)},
                         {"o_norm_f32", json_figure(t.naive.o_norm_f32)},
                         {"o_dtype", json_figure(t.naive.o_dtype)},
                         {"lse_dtype", json_figure(t.naive.lse_dtype)}};
    if (t.forms.p_rounded) {
      j["naive_errors"]["o_norm_p_rounded"] = json_figure(t.naive.o_norm_p_rounded);
      j["naive_errors"]["l_rel_p_rounded"] = json_figure(t.naive.l_rel_p_rounded);
    }
    if (t.forms.any_folded()) {
      j["naive_errors"]["m_exp2_folded"] = json_figure(t.naive.m_folded);
      j["naive_errors"]["l_rel_exp2_folded"] = json_figure(t.naive.l_rel_folded);
    }
    if (t.forms.folded) j["naive_errors"]["o_norm_exp2_folded"] = json_figure(t.naive.o_norm_folded);
    if (t.forms.folded_p_rounded) {
      j["naive_errors"]["o_norm_exp2_folded_p_rounded"] = json_figure(t.naive.o_norm_folded_p_rounded);
      j["naive_errors"]["l_rel_exp2_folded_p_rounded"] = json_figure(t.naive.l_rel_folded_p_rounded);
    }
  } else {
    j["bounds"] = {{"atol", t.override_bounds.atol}, {"rtol", t.override_bounds.rtol}};
  }
  return j;
}

}  // namespace

nlohmann::json json_figure(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

nlohmann::json report_json(const AnalysisReport& r) {
  nlohmann::json j;
  j["run"] = r.label;
  j["attention"] = r.attention;
  j["stage_table"] = nlohmann::json::parse(stage_table_json(r.stage_table));
  if (r.config) j["config"] = *r.config;
  if (r.tiling) j["tiling"] = *r.tiling;
  j["verdict"] = std::string(to_string(r.verdict));
  j["symptom"] = r.symptom.line;
  j["symptom_kind"] = r.symptom.kind;
  j["details"] = r.symptom.details;
  j["mechanism"] = r.symptom.mechanism ? mechanism_json(*r.symptom.mechanism) : nlohmann::json(nullptr);
  nlohmann::json alternatives = nlohmann::json::array();
  for (const Mechanism& m : r.symptom.alternatives) alternatives.push_back(mechanism_json(m));
  j["alternatives"] = alternatives;
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : r.symptom.findings) findings.push_back({{"id", f.id}, {"text", f.text}, {"numbers", numbers_json(f.numbers)}});
  j["findings"] = findings;
  j["next_measurement"] =
      r.symptom.next_measurement.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.symptom.next_measurement);
  j["also_wrong"] = r.symptom.also_wrong;
  j["origin_stage"] = r.symptom.origin_stage >= 0 ? nlohmann::json(r.stage_name(r.symptom.origin_stage)) : nlohmann::json(nullptr);
  nlohmann::json sets = nlohmann::json::object();
  for (const StageReport& s : r.stages)
    if (s.events_failing > 0) sets[s.info.name] = failing_sets_json(s.failing);
  j["failing_sets"] = sets;
  j["worst_cell"] = r.worst_cell ? worst_cell_json(*r.worst_cell, r.stage_table) : nlohmann::json(nullptr);
  nlohmann::json non_finite = nlohmann::json::array();
  for (const NonFiniteRow& n : r.non_finite_rows) non_finite.push_back(non_finite_json(n, r.stage_table));
  j["non_finite_rows"] = non_finite;
  j["tolerance"] = tolerance_json(r.tolerance);

  const Divergence& d = r.first_divergence;
  if (!d.found) {
    j["first_divergence"] = nullptr;
  } else {
    nlohmann::json f = place_json(d.header, r.stage_table);
    f["missing"] = d.missing;
    f["event_index"] = d.event_index;
    f["query_row"] = d.query_rows.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.query_rows.front());
    f["query_rows"] = d.query_rows;
    f["query_rows_text"] = format_ranges(std::span<const int64_t>(d.query_rows), 64);
    f["columns"] = d.columns;
    f["quantities"] = quantities(d.failed);
    f["nan"] = d.nan;
    f["worst_ratio"] = json_figure(d.worst_ratio);
    f["first_failing_event"] = d.first_failing_event;
    nlohmann::json before = nlohmann::json::array();
    for (const UncomparedBefore& u : d.not_compared_before)
      before.push_back({{"stage", u.stage >= 0 ? nlohmann::json(r.stage_name(u.stage)) : nlohmann::json(nullptr)},
                        {"events", u.events},
                        {"first_event", u.first_event},
                        {"reason", u.reason}});
    f["not_compared_before"] = before;
    j["first_divergence"] = f;
  }

  nlohmann::json stages = nlohmann::json::object();
  for (const StageReport& s : r.stages) {
    if (!s.traced) continue;
    stages[s.info.name] = {
        {"kind", std::string(to_string(s.info.kind))},
        {"pass", s.info.pass},
        {"verdict", s.clean() ? "clean" : "divergence"},
        {"convention", s.convention},
        {"events",
         {{"expected", s.events_expected}, {"compared", s.events_compared}, {"failing", s.events_failing},
          {"missing", s.events_missing}, {"not_compared", s.events_not_compared}}},
        {"rows", {{"compared", s.rows_compared}, {"failing", s.rows_failing}}},
        {"m", quantity_json(s.m)},
        {"l", quantity_json(s.l)},
        {"o_norm", quantity_json(s.o_norm)},
        {"o_raw", quantity_json(s.o_raw)},
        {"non_finite", {{"nan", s.non_finite.nan}, {"pos_inf", s.non_finite.pos_inf}, {"neg_inf", s.non_finite.neg_inf}}},
        {"first_failing_event", s.first_failing_event}};
    if (s.events_failing > 0) stages[s.info.name]["failing_sets"] = failing_sets_json(s.failing);
    if (s.events_not_compared > 0)
      stages[s.info.name]["not_compared"] = {{"first_event", s.first_not_compared_event},
                                             {"reason", s.not_compared_reason}};
    if (s.worst_cell) stages[s.info.name]["worst_cell"] = worst_cell_json(*s.worst_cell, r.stage_table);
  }
  j["stages"] = stages;

  nlohmann::json missing = nlohmann::json::array();
  for (const EventHeader& m : r.missing) missing.push_back(place_json(m, r.stage_table));
  j["missing_events"] = missing;
  j["anomalies"] = r.anomalies;
  j["dropped_events"] = r.dropped_events;
  j["events"] = r.events.size();
  return j;
}

nlohmann::json ab_report_json(const ABReport& r) {
  nlohmann::json j;
  j["verdict"] = std::string(to_string(r.verdict));
  j["symptom"] = r.symptom.line;
  j["symptom_kind"] = r.symptom.kind;
  j["details"] = r.symptom.details;
  j["inputs_identical"] = r.inputs_identical;
  j["inputs_note"] = r.inputs_note;
  j["same_kernel"] = r.same_kernel;
  j["tilings_match"] = r.tilings_match;
  j["compared_at"] = r.compared_at;
  j["compared"] = r.compared;
  j["differing"] = r.differing;
  j["only_in_one"] = r.only_in_one;
  j["max_o_norm_diff"] = json_figure(r.max_o_norm_diff);
  j["max_m_diff"] = json_figure(r.max_m_diff);
  if (r.first_difference) {
    const ABDifference& d = *r.first_difference;
    nlohmann::json f = place_json(d.where, r.a.stage_table);
    f["event_a"] = d.event_a;
    f["event_b"] = d.event_b;
    f["query_row"] = d.query_rows.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.query_rows.front());
    f["query_rows"] = d.query_rows;
    f["max_o_norm_diff"] = json_figure(d.max_o_norm);
    f["max_m_diff"] = json_figure(d.max_m);
    j["first_difference"] = f;
  } else {
    j["first_difference"] = nullptr;
  }
  j["a"] = report_json(r.a);
  j["b"] = report_json(r.b);
  return j;
}

}  // namespace ts
