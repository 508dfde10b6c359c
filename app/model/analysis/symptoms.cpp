// The diagnosis phase: origin, mechanisms, findings, and the sentence (symptoms.h).
#include "app/model/analysis/symptoms.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "app/model/analysis/error_shape.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/failing_sets.h"
#include "app/model/analysis/index_ranges.h"
#include "app/model/analysis/local_replay.h"
#include "app/model/analysis/mechanisms.h"
#include "app/model/analysis/row_states.h"
#include "app/model/analysis/worst_cell.h"
#include "base/count_text.h"
#include "base/list_text.h"
#include "kernels/fault_trigger.h"

namespace ts {
namespace {

std::string stage_summary(const StageReport& s) {
  std::string line = s.info.name + ": ";
  if (s.clean()) return line + "all " + std::to_string(s.events_compared) + " events match";
  line += std::to_string(s.events_failing) + " of " + std::to_string(s.events_compared) + " events wrong";
  if (s.events_missing) line += ", " + std::to_string(s.events_missing) + " never written";
  line += " (worst: O/l " + format_figure(s.o_norm.max_abs) + ", m " + format_figure(s.m.max_abs) + ", l rel " +
          format_figure(s.l.max_rel) + ")";
  if (s.non_finite.nan) line += ", " + std::to_string(s.non_finite.nan) + " NaN";
  return line;
}

Symptom missing_symptom(const AnalysisReport& r) {
  Symptom s;
  const Divergence& d = r.first_divergence;
  const StageInfo& first = r.stage_table[static_cast<size_t>(d.header.stage)];
  if (first.kind == StageKind::state && d.header.split >= 0) {
    std::set<int32_t> splits;
    bool all_empty = true;
    for (const EventHeader& m : r.missing)
      if (m.stage == d.header.stage) {
        splits.insert(m.split);
        bool empty = true;
        for (int32_t k = 0; k < m.num_key_ranges; ++k) empty = empty && m.keys[k].end <= m.keys[k].begin;
        all_empty = all_empty && empty;
      }
    const std::vector<int32_t> list(splits.begin(), splits.end());
    const bool one = list.size() == 1;
    bool merge_wrong = false, merge_nan = false;
    for (const StageReport& st : r.stages)
      if (st.info.kind == StageKind::merge) {
        merge_wrong = merge_wrong || st.events_failing > 0;
        merge_nan = merge_nan || st.non_finite.nan > 0;
      }
    s.set_kind(SymptomKind::missing_partial);
    s.line = std::string(one ? "split " : "splits ") + format_ranges(std::span<const int32_t>(list)) +
             (one ? " has no " : " have no ") + first.name + " state";
    if (all_empty)
      s.line += " (" + std::string(one ? "it covers" : "they cover") + " no key: more splits than the keys fill)";
    if (merge_nan)
      s.line += "; the merge reads the unwritten state and NaN poisons the merged rows from split " +
                std::to_string(list.front()) + " on: an empty split must write m = -inf, l = 0, O = 0";
    else if (merge_wrong)
      s.line += "; the merge reads the unwritten state and is wrong from split " + std::to_string(list.front()) + " on";
    else
      s.line += "; the kernel never wrote " + std::string(one ? "its" : "their") + " state";
    return s;
  }
  s.set_kind(SymptomKind::missing_events);
  s.line = std::to_string(r.missing.size()) + " events were never written; the first: " +
           describe_event(d.header, r.stage_table, r.attention);
  return s;
}

// Where a stage's rows that go wrong by themselves are, as sets (compared: the stage's events).
FailingSets origin_sets(const LocalReplay& replay, int32_t stage) {
  const RunView& run = replay.run();
  std::set<int64_t> fb, fh, fq, fs, ft, fk, cb, ch, cq, cs, ct, ck;
  std::vector<uint8_t> columns(static_cast<size_t>(run.head_dim), 0);
  FailingSets f;
  // Columns from the origin events of evenly spaced row blocks (within the budget).
  std::vector<size_t> origin_events;
  for (const ReplayStep& s : replay.steps())
    if (run.headers[s.event].stage == stage && replay.any_locally_wrong(s.event)) origin_events.push_back(s.event);
  bool sampled = false;
  const std::vector<size_t> column_sample = sample_row_blocks(origin_events, run.headers, diagnosis_budget(run.attention), sampled);
  const std::set<size_t> column_events(column_sample.begin(), column_sample.end());
  for (const ReplayStep& s : replay.steps()) {
    const EventHeader& h = run.headers[s.event];
    if (h.stage != stage) continue;
    const int64_t end = event_key_end(h, run.stage_of(s.event), run.attention);
    cb.insert(h.batch);
    ch.insert(h.head);
    cs.insert(h.split);
    ct.insert(h.step);
    ck.insert(end);
    for (int32_t r = 0; r < h.rows; ++r) cq.insert(int64_t{h.q_begin} + r);
    ++f.events_compared;
    const std::vector<uint8_t>& wrong = replay.locally_wrong(s.event);
    if (std::find(wrong.begin(), wrong.end(), uint8_t{1}) == wrong.end()) continue;
    const bool columns_too = column_events.count(s.event) > 0;
    std::optional<RefState> pred;
    if (columns_too) {
      pred = replay.correct_prediction(s);
      ++f.column_events_checked;
    }
    for (int32_t r = 0; r < static_cast<int32_t>(wrong.size()); ++r)
      if (wrong[static_cast<size_t>(r)]) {
        fq.insert(int64_t{h.q_begin} + r);
        if (columns_too) replay.check_row(s.event, r, *pred, {}, &columns);
      }
    ++f.events_failing;
    fb.insert(h.batch);
    fh.insert(h.head);
    fs.insert(h.split);
    ft.insert(h.step);
    fk.insert(end);
  }
  auto fill = [](IndexSet& out, const std::set<int64_t>& failing, const std::set<int64_t>& compared) {
    out.failing.assign(failing.begin(), failing.end());
    out.compared.assign(compared.begin(), compared.end());
  };
  fill(f.batches, fb, cb);
  fill(f.heads, fh, ch);
  fill(f.query_rows, fq, cq);
  fill(f.splits, fs, cs);
  fill(f.steps, ft, ct);
  fill(f.key_ends, fk, ck);
  for (int64_t c = 0; c < run.head_dim; ++c) {
    f.columns.compared.push_back(c);
    if (columns[static_cast<size_t>(c)]) f.columns.failing.push_back(c);
  }
  return f;
}

// The sets of origin rows in words, without the quantities (the findings say those).
std::string origin_where(const FailingSets& f) {
  std::string s = failing_sets_text(f);
  const size_t cut = s.rfind("; ");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings)
    if (f.id == id) return &f;
  return nullptr;
}

bool fits_kind(const std::vector<ModelFit>& fits, SymptomKind kind) {
  return std::any_of(fits.begin(), fits.end(), [&](const ModelFit& f) { return f.model.kind == kind; });
}

// Whether every event of a merge stage merges one state over one range of keys (a run of one
// split), not a sequence of merges.
bool merges_of_one_state(const LocalReplay& replay, int32_t stage) {
  const RunView& run = replay.run();
  if (run.stages[static_cast<size_t>(stage)].kind != StageKind::merge) return false;
  for (const ReplayStep& s : replay.steps())
    if (run.headers[s.event].stage == stage && (s.sequence_length > 1 || s.piece.size() != 1)) return false;
  return true;
}

// Stages with rows that go wrong by themselves, in the order their first such event runs.
std::vector<int32_t> origin_stages(const LocalReplay& replay, const AnalysisReport& r, const RunView& run) {
  std::map<OrderKey, int32_t> first;
  std::set<int32_t> seen;
  for (size_t i = 0; i < run.num_events(); ++i) {
    if (!r.events[i].compared || r.events[i].passes || !replay.any_locally_wrong(i)) continue;
    const OrderKey k = order_key(run.headers[i], run.stages);
    const int32_t stage = run.headers[i].stage;
    auto it = std::find_if(first.begin(), first.end(), [&](const auto& e) { return e.second == stage; });
    if (it == first.end()) first.emplace(k, stage);
    else if (k < it->first) {
      first.erase(it);
      first.emplace(k, stage);
    }
  }
  std::vector<int32_t> out;
  for (const auto& [k, stage] : first) out.push_back(stage);
  return out;
}

// The findings worth a place in the sentence, most telling first.
std::string measured_summary(const std::vector<Finding>& findings) {
  std::vector<std::string> parts;
  for (const char* id : {"quantities", "equivalent_state", "non_finite", "constant_value", "constant_ratio", "constant_offset", "row_factor", "row_offset",
                         "rows_max_rose", "diagonal_rows", "end_of_keys", "step_positions"})
    for (const Finding& f : findings)
      if (f.id == id) parts.push_back(f.text);
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? "; " : "") + parts[i];
  return s;
}

// Whether the divergent event's rows' scores pass float32's largest value: the largest |q . k|
// (unscaled or scaled, whichever is larger) over the keys each row sees, in float64, of the rows
// that could pass it; 0 when none can. A float32 score cannot hold more than FLT_MAX: past it the
// kernel's scores, and the reference's input-dtype rounding of them, are infinite, and no
// comparison of the states says anything. |q . k| <= |q| |k| keeps inputs of ordinary size to
// norms, without a dot product. The unscaled |q . k| is kept apart: which factor passed the limit,
// the inputs or the softmax scale, is what the report tells the user to change.
struct LargestScore {
  double dot = 0.0;    // largest |q . k|
  double score = 0.0;  // largest |q . k| x max(1, scale)
  double scale = 1.0;  // the softmax scale
};
LargestScore largest_score(const Divergence& d, const RunView& run) {
  const AttentionSpec& spec = run.attention;
  const HeadInputs& in = run.inputs;
  LargestScore out;
  out.scale = spec.effective_scale();
  const int32_t qp = in.q_index(d.header.batch, d.header.head);
  const int32_t kp = in.kv_index(d.header.batch, spec.kv_head_of(d.header.head));
  if (qp < 0 || kp < 0 || in.q.numel() == 0 || in.k.numel() == 0) return out;
  const int64_t dim = spec.head_dim, keys = spec.seq_kv;
  const double scale = std::max(1.0, std::fabs(out.scale));
  const double limit = static_cast<double>(std::numeric_limits<float>::max());
  constexpr size_t kRowsChecked = 64;  // the work bound: rows x keys x head_dim
  const size_t rows = std::min(d.query_rows.size(), kRowsChecked);
  std::vector<float> q(rows * static_cast<size_t>(dim)), k(static_cast<size_t>(keys * dim));
  for (size_t i = 0; i < rows; ++i)
    in.q.copy_floats((int64_t{qp} * spec.seq_q + d.query_rows[i]) * dim, dim, q.data() + i * static_cast<size_t>(dim));
  in.k.copy_floats(int64_t{kp} * keys * dim, keys * dim, k.data());
  auto norm = [&](const float* x) {
    double sum = 0.0;
    for (int64_t c = 0; c < dim; ++c) sum += static_cast<double>(x[c]) * x[c];
    return std::sqrt(sum);
  };
  double k_norm = 0.0;
  for (int64_t j = 0; j < keys; ++j) k_norm = std::max(k_norm, norm(k.data() + j * dim));
  for (size_t i = 0; i < rows; ++i) {
    const float* qr = q.data() + i * static_cast<size_t>(dim);
    if (!(norm(qr) * k_norm * scale > limit)) continue;  // NaN inputs are not this
    const AttentionSpec::KeySpan span = spec.visible_keys(d.header.batch, d.query_rows[i]);
    for (int64_t j = span.begin; j < span.end; ++j) {
      double dot = 0.0;
      for (int64_t c = 0; c < dim; ++c) dot += static_cast<double>(qr[c]) * k[static_cast<size_t>(j * dim + c)];
      out.dot = std::max(out.dot, std::fabs(dot));
      out.score = std::max(out.score, std::fabs(dot) * scale);
    }
  }
  return out;
}
void strip_by_itself(std::string& text) {
  for (const std::string phrase : {" by itself", " by themselves"})
    for (size_t at = text.find(phrase); at != std::string::npos; at = text.find(phrase, at)) text.erase(at, phrase.size());
}

// Whether the replay predicted a step of the origin from the reference where the kernel read a
// state an earlier stage made: an output with no recorded state before it, or a merge of a piece
// whose state was not recorded (a partial filtered out). `rows_with_states`: the (batch, head,
// first row, rows) of every recorded state event; a merge whose pieces are not single recorded
// states (one merge over several partials, as a user's kernel may record it) but whose rows have
// recorded states read recorded states.
using RowsKey = std::tuple<int32_t, int32_t, int32_t, int32_t>;
RowsKey rows_key_of(const EventHeader& h) { return {h.batch, h.head, h.q_begin, h.rows}; }
bool reads_unrecorded_state(const ReplayStep& s, StageKind kind, const EventHeader& h,
                            const std::set<RowsKey>& rows_with_states) {
  if (kind == StageKind::final) return s.source == StepSource::from_empty;
  if (kind != StageKind::merge || s.piece_event >= 0 || rows_with_states.count(rows_key_of(h)) != 0) return false;
  return std::any_of(s.piece.begin(), s.piece.end(), [](const KeyRange& k) { return k.end > k.begin; });
}

// Whether stage a runs before stage b in the kernel's order: by pass, then by the table's order
// (docs/trace-format.md).
bool runs_before(const StageInfo& a, int32_t a_index, const StageInfo& b, int32_t b_index) {
  return std::make_pair(a.pass, a_index) < std::make_pair(b.pass, b_index);
}

// Where the error may have been made when every one of the origin's wrong events read a state
// that was not recorded (reads_unrecorded_state): the stages before it that make states (a merge
// reads states and merges) and recorded no event; else none, and the origin goes wrong by itself
// (what it read was never made, e.g. rows that see no key have no running state, or was recorded).
std::vector<std::string> unrecorded_stages_before(const LocalReplay& replay, const AnalysisReport& r, int32_t origin) {
  const StageInfo& origin_info = r.stage_table[static_cast<size_t>(origin)];
  if (origin_info.kind == StageKind::state) return {};
  const RunView& run = replay.run();
  std::set<RowsKey> rows_with_states;
  for (const EventHeader& h : run.headers)
    if (h.stage >= 0 && static_cast<size_t>(h.stage) < r.stage_table.size() &&
        r.stage_table[static_cast<size_t>(h.stage)].kind == StageKind::state)
      rows_with_states.insert(rows_key_of(h));
  bool any = false;
  for (const ReplayStep& s : replay.steps()) {
    const EventHeader& h = run.headers[s.event];
    if (h.stage != origin || !replay.any_locally_wrong(s.event)) continue;
    if (!reads_unrecorded_state(s, origin_info.kind, h, rows_with_states)) return {};
    any = true;
  }
  if (!any) return {};
  std::vector<std::string> names;
  for (const StageReport& st : r.stages)  // in the table's order
    if (st.events_compared == 0 && st.info.kind != StageKind::final &&
        runs_before(st.info, st.stage, origin_info, origin))
      names.push_back(st.info.name);
  return names;
}
}  // namespace

Symptom diagnose(const AnalysisReport& r, const RunView& run, const RunReference& ref, unsigned workers) {
  Symptom s;
  const Divergence& d = r.first_divergence;
  if (!d.found) {
    uint64_t events = 0;
    for (const StageReport& st : r.stages) events += st.events_compared;
    s.set_kind(SymptomKind::clean);
    s.line = events == 1 ? "no divergence: the one event matches the float64 reference within tolerance"
                         : "no divergence: all " + std::to_string(events) +
                               " events match the float64 reference within tolerance";
    if (r.dropped_events > 0)  // a full trace buffer: what was dropped was never checked
      s.line = "no divergence in the " +
               (events == 1 ? std::string("one recorded event") : std::to_string(events) + " recorded events") +
               ", but the trace is incomplete: " +
               (r.dropped_events == 1 ? std::string("1 event was dropped")
                                      : std::to_string(r.dropped_events) + " events were dropped") +
               " (the trace buffer was full) and not checked; capture again with a larger trace capacity or narrower "
               "trace filters";
    uint64_t not_compared = 0;
    for (const StageReport& st : r.stages) not_compared += st.events_not_compared;
    if (not_compared > 0)  // "clean" speaks for the compared events only
      s.line += "; " + count_of(static_cast<int64_t>(not_compared), "more recorded event") +
                (not_compared == 1 ? " was" : " were") + " not compared (the \"not compared\" line says why)";
    if (r.config && r.tiling && r.config->fault != Fault::none) {
      // A faulty kernel that ran clean: say why, so that "clean" does not read as "no bug".
      const std::string why = why_fault_cannot_show(*r.config, *r.tiling);
      s.line += "; the kernel was built with fault " + std::string(to_string(r.config->fault)) + ", but " +
                (why.empty() ? "its error stayed within the tolerance here" : why);
    }
    for (const std::string& a : r.anomalies) s.details.push_back(a);
    return s;
  }

  // Scores past float32's range (no softcap to bound them): the inputs are out of range of the
  // computation, which is what to say; a kernel bug cannot be told from the overflow.
  if (!d.missing && run.attention.softcap <= 0.0) {
    const LargestScore largest = largest_score(d, run);
    const double limit = static_cast<double>(std::numeric_limits<float>::max());
    if (largest.score > limit) {
      // The inputs' product alone passes the limit, or only the scale takes it there.
      const bool inputs = largest.dot > limit;
      const std::string scores = inputs ? "|q . k| = " + format_figure(largest.dot)
                                        : "|q . k| x scale = " + format_figure(largest.score) + " (|q . k| up to " +
                                              format_figure(largest.dot) + ", softmax scale " +
                                              format_figure(largest.scale) + ")";
      s.set_kind(SymptomKind::unexplained);
      s.line = "the scores of the first wrong rows (at " + describe_event(d.header, r.stage_table, r.attention) +
               ") reach " + scores + ", past float32's largest value (" + format_figure(limit) +
               "): in float32 they are infinite, and so are the states computed from them; " +
               (inputs ? std::string("the inputs are too large for this attention (scale them down)")
                       : "the softmax scale " + format_figure(largest.scale) +
                             " is too large for these inputs (make it smaller)") +
               ", and no kernel bug can be told apart from the overflow";
      Finding f;
      f.id = "scores_overflow";
      f.text = "largest " + std::string(inputs ? "|q . k|" : "|q . k| x scale") + " of the first wrong rows " +
               format_figure(inputs ? largest.dot : largest.score) + " > float32's largest value";
      f.numbers["largest_score"] = largest.score;
      f.numbers["largest_dot"] = largest.dot;
      f.numbers["scale"] = largest.scale;
      s.findings.push_back(std::move(f));
      for (const std::string& a : r.anomalies) s.details.push_back(a);
      return s;
    }
  }

  const LocalReplay replay(run, ref, r);
  replay.find_locally_wrong(workers);
  RowStates rows(ref.attention(), run.inputs);
  const std::vector<int32_t> origins = origin_stages(replay, r, run);
  std::vector<std::string> mechanism_details, measured_details;

  if (d.missing) {
    s = missing_symptom(r);
  } else if (origins.empty()) {
    // Every failing event reproduces from what it read: nothing goes wrong by itself (its inputs
    // were never recorded right, e.g. a merge of states that were filtered out).
    s.set_kind(SymptomKind::unexplained);
    s.line = "the first wrong values are at " + describe_event(d.header, r.stage_table, r.attention) + ": " +
             quantities_text(d.failed) + " in queries " + format_ranges(std::span<const int64_t>(d.query_rows)) +
             "; every wrong event follows from the states it read, none of which is recorded wrong";
  } else {
    const int32_t origin = origins.front();
    s.origin_stage = origin;
    const std::string& name = run.stages[static_cast<size_t>(origin)].name;
    const std::vector<ModelFit> fits = establish_mechanisms(replay, origin, rows);
    s.findings = measure_error_shape(replay, origin);
    const FailingSets where = origin_sets(replay, origin);
    const OriginCounts counts = origin_counts(replay, origin);
    // An output whose wrong rows no recorded state covers (the stages before it filtered out, or
    // dropped from a full trace buffer) is predicted from the reference alone: the error may have
    // been made in a stage that was not recorded, so the report names those and claims no origin.
    const std::vector<std::string> unrecorded = unrecorded_stages_before(replay, r, origin);
    const bool merge_origin = r.stage_table[static_cast<size_t>(origin)].kind == StageKind::merge;
    const std::string where_text =
        name + (unrecorded.empty() ? " goes wrong by itself in " : " goes wrong in ") + std::to_string(counts.events) +
        " of " + std::to_string(where.events_compared) + " events (" + origin_where(where) + ")" +
        (unrecorded.empty()
             ? ""
             : (merge_origin ? ", and the states it merges were not recorded: "
                             : ", and no recorded state before it covers its rows' keys: ") +
                   spoken_list(unrecorded, "and") +
                   " recorded no event (filtered out, or dropped when the trace buffer was full), and the error may have "
                   "been made there");
    // Stages wrong only through what they read.
    std::vector<std::string> carried;
    for (const StageReport& st : r.stages)
      if (st.events_failing > 0 && std::find(origins.begin(), origins.end(), st.stage) == origins.end())
        carried.push_back(st.info.name);
    const std::string carried_text =
        carried.empty() ? "" : "; " + spoken_list(carried, "and") + (carried.size() == 1 ? " is" : " are") + " wrong only through it";

    if (!unrecorded.empty() && !fits.empty()) {
      // The states the origin read were predicted from the reference: an error of the same form
      // made in the stages that were not recorded fits its events just as well, so no mechanism
      // is claimed; the report names the form and what to trace to tell where it is made.
      s.set_kind(SymptomKind::unexplained);
      s.line = where_text + ". Its errors have the form of ";
      for (size_t i = 0; i < fits.size(); ++i) {
        const Mechanism m = to_mechanism(fits[i], replay, origin);
        s.line += (i ? "; or of " : "") + m.claim;
        mechanism_details.push_back("has the form of (" + m.id + "): " + m.claim + "; in " + name +
                                    ", or in a stage that was not recorded");
        for (const std::string& e : m.evidence) mechanism_details.push_back("  evidence: " + e);
      }
      s.line += " (reproducing " + reproduced_rows_text(fits.front(), name) + "), made in " + name + " or before it" +
                carried_text;
    } else if (fits.size() == 1) {
      const Mechanism m = to_mechanism(fits.front(), replay, origin);
      s.set_kind(m.kind);
      const ModelFit& fit = fits.front();
      s.line = m.claim + (fit.scope_splits.empty() ? "" : " — in " + m.scope) +
               ". Evidence: it reproduces " + reproduced_rows_text(fit, name) + " and contradicts no right row" +
               (fit.scope_splits.empty()
                    ? (fit.right_rows_checked + fit.right_rows_untouched == 0
                           ? " (the stage has none)"
                           : " (" + std::to_string(fit.right_rows_checked) + " checked" +
                                 (fit.right_rows_untouched ? ", " + std::to_string(fit.right_rows_untouched) + " it does not change" : "") +
                                 ")")
                    : " there (" + std::to_string(fit.right_rows_in_scope) + " checked); elsewhere it would break " +
                          std::to_string(fit.right_rows_broken) + " right rows") +
               carried_text;
      if (const Finding* rose = find(s.findings, "rows_max_rose");
          rose && (m.kind == SymptomKind::o_not_rescaled || m.kind == SymptomKind::l_not_rescaled))
        s.line += "; " + rose->text;
      s.mechanism = m;
    } else if (fits.size() > 1) {
      s.set_kind(SymptomKind::competing);
      s.line = std::to_string(fits.size()) + " mechanisms reproduce every error of " + name + " equally (" +
               reproduced_rows_text(fits.front(), "") + "), and the trace cannot tell them apart: ";
      for (size_t i = 0; i < fits.size(); ++i) {
        const Mechanism m = to_mechanism(fits[i], replay, origin);
        s.line += (i ? "; or " : "") + m.claim + (fits[i].scope_splits.empty() ? "" : " (in " + m.scope + ")");
        s.alternatives.push_back(m);
      }
      if (fits_kind(fits, SymptomKind::reduce_scaled_by_l) && fits_kind(fits, SymptomKind::o_times_l) &&
          merges_of_one_state(replay, origin))
        s.line += " (each merge of " + name + " reads one state: weighted by its l again, its O is O times l; a run "
                  "with two or more splits tells them apart)";
      s.line += carried_text;
    } else {
      const Finding* non_finite = find(s.findings, "non_finite");
      s.set_kind(non_finite ? SymptomKind::non_finite : SymptomKind::unexplained);
      s.line = where_text + ": " + measured_summary(s.findings) + ". No mechanism tested reproduces it (" +
               std::to_string(models_tested(replay, origin)) + " tested: docs/diagnosis.md)" + carried_text;
    }
    if (!unrecorded.empty()) {
      // No origin is claimed (origin_stage: the stage whose events go wrong by themselves), and
      // "by itself" says that a row is wrong against what its step read as recorded; here what it
      // read was not recorded, so the measurements speak of the rows that go wrong.
      s.origin_stage = -1;
      strip_by_itself(s.line);
      for (Finding& f : s.findings) strip_by_itself(f.text);
      for (std::string& m : mechanism_details) strip_by_itself(m);
    }
    mechanism_details.push_back((unrecorded.empty() ? "goes wrong by itself: " : "goes wrong: ") + where_text);
    if (s.mechanism) {
      mechanism_details.push_back("mechanism (" + s.mechanism->id + "): " + s.mechanism->claim + "; acts in " + s.mechanism->scope);
      for (const std::string& e : s.mechanism->evidence) mechanism_details.push_back("evidence: " + e);
    }
    for (const Mechanism& m : s.alternatives) {
      mechanism_details.push_back("fits equally (" + m.id + "): " + m.claim + "; acts in " + m.scope);
      for (const std::string& e : m.evidence) mechanism_details.push_back("  evidence: " + e);
    }
    for (const Finding& f : s.findings) measured_details.push_back("measured: " + f.text);
    if (!unrecorded.empty()) {
      // Where the error is made is the question: the stages that were not recorded answer it.
      s.next_measurement = "capture the run again with " + spoken_list(unrecorded, "and") +
                           " traced as well (tilescope capture --stages; a larger trace capacity if they were dropped), "
                           "so that the states " + name + " reads are recorded and the stage that makes the error can be told";
      measured_details.push_back("next measurement: " + s.next_measurement);
    } else if (!s.mechanism && s.alternatives.empty() &&
               r.stage_table[static_cast<size_t>(origin)].kind != StageKind::final) {
      // A race has no single-run signature; two schedules of the same run tell it from a deterministic bug.
      s.next_measurement =
          "record the run twice on the CPU path with different thread schedules (TILESCOPE_CPU_PERTURB_SEED=1 and =2 "
          "for your own program; `tilescope capture --perturb-seed N` for tilescope's kernels) and compare them with "
          "`tilescope diff A --against B`: if they differ, it is a race, else a deterministic bug";
      measured_details.push_back("next measurement: " + s.next_measurement);
    }
    // Later stages that go wrong by themselves too, with what fits there.
    for (size_t k = 1; k < origins.size(); ++k) {
      const int32_t st = origins[k];
      const OriginCounts c = origin_counts(replay, st);
      std::string line = run.stages[static_cast<size_t>(st)].name + " also goes wrong by itself (" +
                         count_of(static_cast<int64_t>(c.rows), "row") + " in " +
                         count_of(static_cast<int64_t>(c.events), "event") + ", beyond what it reads)";
      const std::vector<ModelFit> more = establish_mechanisms(replay, st, rows);
      if (more.size() == 1) line += ": " + more.front().claim;
      else if (more.size() > 1) line += ": " + std::to_string(more.size()) + " mechanisms fit equally";
      s.also_wrong.push_back(line);
      mechanism_details.push_back(line);
    }
    for (const std::string& c : carried) mechanism_details.push_back(c + ": every wrong event follows from the wrong states it reads");
  }

  s.details.insert(s.details.begin(), "first divergence: " + describe_event(d.header, r.stage_table, r.attention) +
                                          (d.missing ? " was never written" : ""));
  s.details.insert(s.details.end(), mechanism_details.begin(), mechanism_details.end());
  s.details.insert(s.details.end(), measured_details.begin(), measured_details.end());
  for (const StageReport& st : r.stages)
    if (st.events_failing > 0) s.details.push_back("where, " + st.info.name + ": " + failing_sets_text(st.failing));
  if (r.worst_cell) s.details.push_back("worst cell: " + describe_worst_cell(*r.worst_cell, r));
  for (const StageReport& st : r.stages)
    if (st.traced) s.details.push_back(stage_summary(st));
  for (const std::string& a : r.anomalies) s.details.push_back(a);
  return s;
}

}  // namespace ts
