#include "app/model/analysis/report_json.h"

#include <algorithm>
#include <cmath>

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

nlohmann::json tolerance_json(const Tolerance& t) {
  nlohmann::json j = {{"kind", t.from_rule ? "rule" : "explicit"}, {"description", t.describe()},
                      {"intermediate", bars_json(t.intermediate)}, {"final", bars_json(t.final_stage)}};
  if (t.from_rule)
    j["naive_errors"] = {{"m_f32", json_figure(t.naive.m_f32)},
                         {"l_rel_f32", json_figure(t.naive.l_rel_f32)},
                         {"o_norm_f32", json_figure(t.naive.o_norm_f32)},
                         {"o_dtype", json_figure(t.naive.o_dtype)},
                         {"lse_dtype", json_figure(t.naive.lse_dtype)}};
  else
    j["bounds"] = {{"atol", t.override_bounds.atol}, {"rtol", t.override_bounds.rtol}};
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
          {"missing", s.events_missing}}},
        {"rows", {{"compared", s.rows_compared}, {"failing", s.rows_failing}}},
        {"m", quantity_json(s.m)},
        {"l", quantity_json(s.l)},
        {"o_norm", quantity_json(s.o_norm)},
        {"o_raw", quantity_json(s.o_raw)},
        {"non_finite", {{"nan", s.non_finite.nan}, {"pos_inf", s.non_finite.pos_inf}, {"neg_inf", s.non_finite.neg_inf}}},
        {"first_failing_event", s.first_failing_event}};
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
