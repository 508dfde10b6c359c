#include "app/model/analysis/report_text.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "app/model/analysis/failing_sets.h"
#include "app/model/analysis/index_ranges.h"
#include "app/model/analysis/state_compare.h"
#include "app/model/analysis/symptoms.h"
#include "app/model/analysis/worst_cell.h"
#include "base/list_text.h"

namespace ts {
namespace {

std::string cell(const std::string& s, size_t width) { return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' '); }

// The events left out of the comparison that would have come before the divergence, one line
// per stage: the kernel may have gone wrong there first.
std::string not_compared_before_text(const Divergence& d, const AnalysisReport& r) {
  std::string s;
  for (const UncomparedBefore& u : d.not_compared_before)
    s += "\n                  " + std::to_string(u.events) + " earlier events of " +
         (u.stage >= 0 ? "stage " + r.stage_name(u.stage) : std::string("no stage of the run")) +
         " were not compared (event " + std::to_string(u.first_event) + ": " + u.reason + ")";
  return s;
}

std::string divergence_text(const Divergence& d, const AnalysisReport& r) {
  std::string s = describe_event(d.header, r.stage_table, r.attention);
  if (d.missing) return s + ": never written" + not_compared_before_text(d, r);
  s += std::string("\n                  ") + (d.query_rows.size() == 1 ? "query " : "queries ") +
       format_ranges(std::span<const int64_t>(d.query_rows));
  if (!d.columns.empty())
    s += std::string(d.columns.size() == 1 ? ", head-dim column " : ", head-dim columns ") +
         format_ranges(std::span<const int32_t>(d.columns));
  std::string what;
  if (d.failed & kFailNaN) what += " NaN";
  if (d.failed & kFailM) what += " m";
  if (d.failed & kFailL) what += " l";
  if (d.failed & (kFailONorm | kFailORaw)) what += " O";
  s += "; wrong:" + what + " (up to " + format_figure(d.worst_ratio) + " x tolerance)";
  return s + not_compared_before_text(d, r);
}

// One non-finite row in words: "query 128 at my.tile ...: -Inf in m; the no-key state, but the
// reference sees 1 key (128)".
std::string non_finite_text(const NonFiniteRow& n, const AnalysisReport& r) {
  std::vector<std::string> kinds;
  if (n.nan) kinds.push_back("NaN");
  if (n.pos_inf) kinds.push_back("+Inf");
  if (n.neg_inf) kinds.push_back("-Inf");
  std::vector<std::string> where;
  if (n.m_non_finite) where.push_back("m");
  if (n.l_non_finite) where.push_back("l");
  if (n.o_columns) where.push_back(std::to_string(n.o_columns) + " O columns");
  std::string s = "query " + std::to_string(n.query) + " at " + describe_event(n.header, r.stage_table, r.attention) + ":";
  for (size_t i = 0; i < kinds.size(); ++i) s += (i ? "/" : " ") + kinds[i];
  s += " in";
  for (size_t i = 0; i < where.size(); ++i) s += (i ? ", " : " ") + where[i];
  if (n.holds_no_key_state) {
    s += " (the no-key state m = -inf, l = 0";
    if (n.reference_keys > 0)
      s += ", but the reference sees " +
           (n.reference_keys == 1 ? "key " + std::to_string(n.reference_span.begin)
                                  : std::to_string(n.reference_keys) + " keys, " + std::to_string(n.reference_span.begin) +
                                        "-" + std::to_string(n.reference_span.end - 1));
    s += ")";
  } else if (n.reference_keys == 0) {
    s += " (the row sees no key there)";
  }
  return s;
}

void stage_table(std::ostringstream& out, const AnalysisReport& r) {
  // The name and convention columns as wide as their widest entry (a user's stage names, a
  // convention such as "unnormalized, base-2 max"), so that the columns after them stay aligned.
  size_t name_w = 16, convention_w = 14;
  for (const StageReport& s : r.stages) {
    if (!s.traced) continue;
    name_w = std::max(name_w, s.info.name.size() + 1);
    convention_w = std::max(convention_w, s.convention.size() + 2);
  }
  out << "  " << cell("stage", name_w) << cell("convention", convention_w) << cell("events", 8) << cell("wrong", 7)
      << cell("missing", 9) << cell("not compared", 14) << cell("O/l err", 10) << cell("m err", 10) << cell("l rel", 10) << cell("NaN/Inf", 9)
      << "worst x tol\n";
  for (const StageReport& s : r.stages) {
    if (!s.traced) continue;
    out << "  " << cell(s.info.name, name_w) << cell(s.convention, convention_w)
        << cell(std::to_string(s.events_compared), 8) << cell(std::to_string(s.events_failing), 7)
        << cell(std::to_string(s.events_missing), 9) << cell(std::to_string(s.events_not_compared), 14)
        << cell(format_figure(s.o_norm.max_abs), 10)
        << cell(format_figure(s.m.max_abs), 10) << cell(format_figure(s.l.max_rel), 10)
        << cell(std::to_string(s.non_finite.total()), 9)
        << format_figure(std::max({s.m.max_ratio, s.l.max_ratio, s.o_norm.max_ratio, s.o_raw.max_ratio})) << "\n";
  }
  // Why events were left out, once: the first such event's reason (the notes list more).
  std::vector<std::string> counts;
  const StageReport* first = nullptr;
  for (const StageReport& s : r.stages) {
    if (s.events_not_compared == 0) continue;
    counts.push_back(std::to_string(s.events_not_compared) + " " + s.info.name);
    if (!first || s.first_not_compared_event < first->first_not_compared_event) first = &s;
  }
  if (first)
    out << "not compared:     " << spoken_list(counts, "and") << " events recorded but left out of the comparison; e.g. event "
        << first->first_not_compared_event << ": " << first->not_compared_reason << "\n";
}

}  // namespace

std::string config_line(const AttentionConfig& c) {
  std::ostringstream s;
  s << to_string(c.kernel) << " " << to_string(c.dtype) << " B=" << c.batch << " H=" << c.heads;
  if (c.kv_heads() != c.heads) s << " Hkv=" << c.kv_heads();
  s << " Sq=" << c.seq_q << " Skv=" << c.seq_kv << " D=" << c.head_dim;
  if (splits_kv(c.kernel)) s << " splits=" << c.num_splits;
  if (c.causal) s << " causal";
  if (c.has_window()) s << " window=" << window_text(c.window_left, c.window_right);
  if (c.softcap > 0.0) s << " softcap=" << c.softcap;
  if (c.fault != Fault::none) s << " fault=" << to_string(c.fault);
  return s.str();
}

std::string run_line(const AnalysisReport& r) {
  return r.config ? config_line(*r.config) : describe(r.attention);
}

std::string report_text(const AnalysisReport& r) {
  std::ostringstream out;
  out << "run:              " << r.label << "  (" << run_line(r) << ")\n";
  out << "verdict:          " << (r.clean() ? "clean" : "DIVERGENCE") << "\n";
  out << "symptom:          " << r.symptom.line << "\n";
  if (r.symptom.mechanism) {
    const Mechanism& m = *r.symptom.mechanism;
    out << "mechanism:        " << m.id << ", acts in " << m.scope << "\n";
    for (const std::string& e : m.evidence) out << "  evidence:       " << e << "\n";
  }
  for (const Mechanism& m : r.symptom.alternatives) {
    out << "fits equally:     " << m.id << ": " << m.claim << " (" << m.scope << ")\n";
    for (const std::string& e : m.evidence) out << "  evidence:       " << e << "\n";
  }
  for (const Finding& f : r.symptom.findings) out << "measured:         " << f.text << "\n";
  for (const std::string& a : r.symptom.also_wrong) out << "also:             " << a << "\n";
  if (!r.symptom.next_measurement.empty()) out << "next:             " << r.symptom.next_measurement << "\n";
  if (r.first_divergence.found)
    out << "first divergence: " << divergence_text(r.first_divergence, r) << "\n";
  for (const StageReport& s : r.stages)
    if (s.events_failing > 0) out << "where:            " << s.info.name << ": " << failing_sets_text(s.failing) << "\n";
  if (r.worst_cell) out << "worst cell:       " << describe_worst_cell(*r.worst_cell, r) << "\n";
  if (!r.non_finite_rows.empty()) {
    const size_t shown = std::min<size_t>(r.non_finite_rows.size(), 4);
    for (size_t i = 0; i < shown; ++i) {
      const NonFiniteRow& n = r.non_finite_rows[i];
      out << "non-finite:       " << non_finite_text(n, r) << "\n";
    }
    if (r.non_finite_rows.size() > shown)
      out << "                  ... " << r.non_finite_rows.size() - shown << " more rows"
          << (r.non_finite_rows.size() == kMaxNonFiniteRows ? " (listing capped)" : "") << "\n";
  }
  stage_table(out, r);
  if (!r.missing.empty()) {
    out << "missing events:   " << r.missing.size() << " never written, e.g. "
        << describe_event(r.missing.front(), r.stage_table, r.attention) << "\n";
  }
  for (const std::string& a : r.anomalies) out << "note:             " << a << "\n";
  out << "tolerance:        " << r.tolerance.describe() << "\n";
  out << "                  " << comparison_rule() << " (docs/diagnosis.md)\n";
  return out.str();
}

std::string ab_verdict_text(const ABReport& r) {
  switch (r.verdict) {
    case Verdict::clean: return "clean";
    case Verdict::divergence: return "DIVERGENCE";
    case Verdict::not_compared: return "NOT COMPARED: the runs' inputs differ";
  }
  return "DIVERGENCE";
}

std::string ab_report_text(const ABReport& r) {
  std::ostringstream out;
  out << "A:                " << r.a.label << "  (" << run_line(r.a) << ")\n";
  out << "B:                " << r.b.label << "  (" << run_line(r.b) << ")\n";
  out << "verdict:          " << ab_verdict_text(r)
      << (r.verdict == Verdict::not_compared ? " (" + r.inputs_note + ")" : std::string()) << "\n";
  out << "symptom:          " << r.symptom.line << "\n";
  if (r.inputs_identical) {
    out << "A vs B:           compared at " << r.compared_at << ": " << r.compared
        << (r.tilings_match ? " events" : " output rows") << ", " << r.differing << " differ (max |O/l A - B| "
        << format_figure(r.max_o_norm_diff) << ", max |m A - B| " << format_figure(r.max_m_diff) << ")\n";
    if (r.first_difference) {
      const ABDifference& d = *r.first_difference;
      out << "first difference: " << describe_event(d.where, r.a.stage_table, r.a.attention) << "\n                  "
          << (d.query_rows.size() == 1 ? "query " : "queries ") << format_ranges(std::span<const int64_t>(d.query_rows))
          << "\n";
    }
  }
  for (const std::string& line : r.symptom.details) out << "  - " << line << "\n";
  out << "\n== A against the reference\n" << report_text(r.a);
  out << "\n== B against the reference\n" << report_text(r.b);
  return out.str();
}

}  // namespace ts
