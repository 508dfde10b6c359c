// Step models, their candidates, their test over a stage, and their text (mechanisms.h).
#include "app/model/analysis/mechanisms.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <set>
#include <string>

#include "app/model/analysis/error_shape.h"
#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/index_ranges.h"
#include "app/model/analysis/state_compare.h"

namespace ts {
namespace {

struct NamedConstant {
  double value;
  std::string name;
};

// The constants a wrong factor usually is, with what each means.
std::vector<NamedConstant> factor_constants(const AttentionSpec& spec) {
  const double scale = spec.effective_scale();
  std::vector<NamedConstant> c = {{std::numbers::log2e, "log2 e"}, {std::numbers::ln2, "ln 2"}};
  if (std::fabs(scale - 1.0) > 1e-6) {
    c.push_back({scale, "the softmax scale " + format_figure(scale)});
    c.push_back({1.0 / scale, "1 / the softmax scale (" + format_figure(1.0 / scale) + ")"});
  }
  return c;
}

std::string plural(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The steps of one stage, and which of them go wrong by themselves.
struct StageSteps {
  std::vector<const ReplayStep*> all, origin;
  std::map<size_t, uint64_t> origin_rows;  // rows that go wrong by themselves, per origin event
  std::map<int32_t, std::vector<const ReplayStep*>> sequences;  // by sequence id, each in position order
  StageKind kind = StageKind::state;
  bool any_extend = false;     // running states: combine rules apply
  bool keys_read = false;      // the steps' pieces are keys the kernel read (not recorded states)
  bool any_nan_wrong = false;  // a wrong row holds NaN
  bool any_normalized = false, any_unnormalized = false;
  int32_t splits = 0;          // merges: the split count (longest sequence)
};

StageSteps stage_steps(const LocalReplay& replay, int32_t stage) {
  StageSteps st;
  const RunView& run = replay.run();
  st.kind = run.stages[static_cast<size_t>(stage)].kind;
  for (const ReplayStep& s : replay.steps()) {
    if (run.headers[s.event].stage != stage) continue;
    st.all.push_back(&s);
    st.sequences[s.sequence].push_back(&s);
    st.any_extend = st.any_extend || s.source == StepSource::extend;
    st.keys_read = st.keys_read || ((s.source == StepSource::extend || s.source == StepSource::from_empty) && s.piece_event < 0);
    st.splits = std::max(st.splits, s.sequence_length);
    const bool normalized = (run.headers[s.event].convention & kNormalized) != 0;
    st.any_normalized = st.any_normalized || normalized;
    st.any_unnormalized = st.any_unnormalized || !normalized;
    if (replay.any_locally_wrong(s.event)) {
      st.origin.push_back(&s);
      const std::vector<uint8_t>& wrong = replay.locally_wrong(s.event);
      st.origin_rows[s.event] = static_cast<uint64_t>(std::count(wrong.begin(), wrong.end(), uint8_t{1}));
      const RunEvent ev = run.event(s.event);
      const size_t d = static_cast<size_t>(run.head_dim);
      for (size_t r = 0; r < wrong.size() && !st.any_nan_wrong; ++r) {
        if (!wrong[r]) continue;
        bool nan = std::isnan(ev.m[r]) || std::isnan(ev.l[r]);
        for (size_t c = 0; c < d && !nan; ++c) nan = std::isnan(ev.o[r * d + c]);
        st.any_nan_wrong = nan;
      }
    }
  }
  for (auto& [id, steps] : st.sequences)
    std::sort(steps.begin(), steps.end(), [](const ReplayStep* a, const ReplayStep* b) { return a->position < b->position; });
  return st;
}

StepModel combine_model(SymptomKind kind, CombineRule rule) {
  StepModel m;
  m.kind = kind;
  m.combine = rule;
  return m;
}

StepModel stored_model(SymptomKind kind, StoredChannelRule rule) {
  StepModel m;
  m.kind = kind;
  m.stored = rule;
  return m;
}

StepModel key_model(KeyEdge edge, int32_t delta) {
  StepModel m;
  m.kind = SymptomKind::key_set_changed;
  m.piece = PieceRule::key_set;
  m.keys = {edge, delta};
  return m;
}

StepModel attention_model(SymptomKind kind, AttentionChange change) {
  StepModel m;
  m.kind = kind;
  m.piece = PieceRule::attention;
  m.attention = change;
  return m;
}

std::vector<StepModel> candidate_models(const StageSteps& st, const AttentionSpec& spec) {
  std::vector<StepModel> out;
  // The combine rules: running states, and merges also where each reads one state (one split: that
  // state merged into the empty one), where a merged O weighted by its l again is O stored times l.
  if (st.any_extend || st.kind == StageKind::merge) {
    out.push_back(combine_model(SymptomKind::o_not_rescaled, CombineRule::o_not_rescaled));
    out.push_back(combine_model(SymptomKind::l_not_rescaled, CombineRule::l_not_rescaled));
    out.push_back(combine_model(SymptomKind::no_online_rescale, CombineRule::own_max));
    out.push_back(combine_model(SymptomKind::stale_state, CombineRule::stale_accumulator));
    out.push_back(combine_model(SymptomKind::reduce_scaled_by_l, CombineRule::o_weighted_by_l));
    out.push_back(combine_model(SymptomKind::previous_state_dropped, CombineRule::drop_previous));
    out.push_back(combine_model(SymptomKind::step_not_added, CombineRule::skip_piece));
    out.push_back(combine_model(SymptomKind::step_added_twice, CombineRule::piece_twice));
  }
  for (const NamedConstant& c : factor_constants(spec))
    out.push_back(stored_model(SymptomKind::m_channel_units, {.m_factor = c.value}));
  if (st.any_normalized) out.push_back(stored_model(SymptomKind::lse_without_log_l, {.m_log_l = -1}));
  if (st.any_unnormalized) out.push_back(stored_model(SymptomKind::m_holds_lse, {.m_log_l = 1}));
  out.push_back(stored_model(SymptomKind::o_times_l, {.o_l_power = 1}));
  out.push_back(stored_model(SymptomKind::o_divided_by_l, {.o_l_power = -1}));
  if (st.any_nan_wrong) out.push_back(stored_model(SymptomKind::nan_fully_masked, {.nan_where_no_key = true}));
  if (st.keys_read) {
    const bool diagonal = spec.causal != CausalAlign::none || spec.window_right >= 0;
    for (int32_t delta : {-2, -1, 1, 2}) {
      if (diagonal) out.push_back(key_model(KeyEdge::diagonal, delta));
      out.push_back(key_model(KeyEdge::piece_begin, delta));
      out.push_back(key_model(KeyEdge::piece_end, delta));
      out.push_back(key_model(KeyEdge::piece_shift, delta));
      out.push_back(key_model(KeyEdge::piece_shift_in_keys, delta));
    }
    for (int32_t n = 1; n <= 4; ++n) out.push_back(key_model(KeyEdge::zero_keys_at_end, n));
    std::vector<double> factors = {2.0, 0.5};
    for (const NamedConstant& c : factor_constants(spec)) factors.push_back(c.value);
    for (double f : factors) {
      AttentionChange a;
      a.score.score_factor = f;
      out.push_back(attention_model(SymptomKind::scores_scaled, a));
    }
    for (double f : {std::numbers::ln2, std::numbers::log2e})
      for (double prev : {1.0, f}) {
        AttentionChange a;
        a.score.exponent_factor = f;
        StepModel m = attention_model(SymptomKind::exponent_base, a);
        m.exponents = {prev, f};
        out.push_back(m);
      }
    if (spec.softcap > 0.0) {
      AttentionChange a;
      a.score.softcap = false;
      out.push_back(attention_model(SymptomKind::softcap_ignored, a));
    }
    if (!spec.alibi_slopes.empty()) {
      AttentionChange a;
      a.score.alibi = false;
      out.push_back(attention_model(SymptomKind::alibi_ignored, a));
    }
    if (spec.causal != CausalAlign::none) {
      AttentionChange flip;
      flip.causal = spec.causal == CausalAlign::top_left ? CausalAlign::bottom_right : CausalAlign::top_left;
      out.push_back(attention_model(SymptomKind::causal_alignment, flip));
      AttentionChange none;
      none.causal = CausalAlign::none;
      out.push_back(attention_model(SymptomKind::causal_mask_ignored, none));
    }
    for (int32_t delta : {-2, -1, 1, 2}) {
      StepModel m;
      m.kind = SymptomKind::rows_shifted;
      m.piece = PieceRule::row_shift;
      m.row_delta = delta;
      out.push_back(m);
    }
  }
  // A fragment's row halves stored the wrong way round: row q holds row q xor k (the two halves of
  // an mma accumulator are 8 rows apart; 4 and 16 for other tile shapes), all of its state, or its
  // output alone with the row's own LSE (a kernel that writes LSE apart from O), or in a state
  // stage its unnormalised O alone with the row's own m and l (a partial state whose O is stored
  // apart from them).
  for (int32_t k : {4, 8, 16})
    for (int form = 0; form < (st.kind == StageKind::final ? 2 : 3); ++form) {
      StepModel m;
      m.kind = SymptomKind::rows_exchanged;
      m.piece = PieceRule::row_exchange;
      m.row_xor = k;
      m.exchange_o_only = form > 0;
      m.exchange_raw_o = form == 2;
      out.push_back(m);
    }
  if (st.kind == StageKind::merge && st.splits > 1) {
    const int64_t n = st.splits;
    const std::array<int64_t, 3> maps[] = {{1, 1, 0}, {n, 1, n}, {n, 1, -n}, {n - 1, 1, 0}, {n + 1, 1, 0}, {n, 0, 0}};
    for (const auto& map : maps) {
      StepModel m;
      m.kind = SymptomKind::query_layout;
      m.piece = PieceRule::partial_map;
      m.partial_map = map;
      m.partial_splits = n;
      out.push_back(m);
    }
  }
  return out;
}

// Evaluates models over one stage's steps.
class Evaluator {
 public:
  Evaluator(const LocalReplay& replay, RowStates& rows, const StageSteps& st)
      : replay_(replay), run_(replay.run()), spec_(replay.reference().attention()), rows_(rows), st_(st) {}

  // Whether the model can predict anything but the correct step for any row of s (cheap).
  bool may_change(const StepModel& m, const ReplayStep& s) const {
    if (m.piece == PieceRule::reference || m.piece == PieceRule::row_exchange) return true;
    if (s.source == StepSource::copy || s.source == StepSource::normalise) return false;
    if (m.piece == PieceRule::kv_input) {
      const EventHeader& h = run_.headers[s.event];
      return m.kv_map.count({h.batch, h.head}) > 0;
    }
    if (m.piece != PieceRule::key_set) return true;
    const EventHeader& h = run_.headers[s.event];
    for (int32_t r = 0; r < h.rows; ++r) {
      int32_t zero = 0;
      const std::vector<KeyRange> ref = visible_in(spec_, h.batch, int64_t{h.q_begin} + r, s.piece);
      const std::vector<KeyRange> alt = changed_keys(m.keys, s, int64_t{h.q_begin} + r, zero);
      if (zero > 0 || !same(ref, alt)) return true;
    }
    return false;
  }

  // The model's prediction of s; rows it cannot predict (a mapped row outside the run) are
  // marked in `untestable`.
  RefState predict(const StepModel& m, const ReplayStep& s, std::vector<uint8_t>& untestable) {
    const EventHeader& h = run_.headers[s.event];
    untestable.assign(static_cast<size_t>(h.rows), 0);
    if (m.piece == PieceRule::reference) {
      if (m.combine == CombineRule::merge) return replay_.correct_prediction(s);
      return replay_.combine(s, replay_.piece_state(s), m.combine);
    }
    if (m.piece == PieceRule::row_exchange) return exchanged_rows(m, s, untestable);
    if (s.source == StepSource::copy || s.source == StepSource::normalise) return replay_.correct_prediction(s);
    RefState x = replay_.piece_state(s);
    const size_t d = static_cast<size_t>(run_.head_dim);
    const int32_t kv_head = static_cast<int32_t>(spec_.kv_head_of(h.head));
    for (int32_t r = 0; r < h.rows; ++r) {
      const int64_t row = int64_t{h.q_begin} + r;
      std::optional<RowState> alt;
      switch (m.piece) {
        case PieceRule::key_set: {
          int32_t zero = 0;
          const std::vector<KeyRange> keys = changed_keys(m.keys, s, row, zero);
          if (zero > 0 || !same(keys, visible_in(spec_, h.batch, row, s.piece)))
            alt = rows_.state(h.batch, h.head, row, h.batch, kv_head, keys, zero, {});
          break;
        }
        case PieceRule::attention: {
          AttentionSpec changed = spec_;
          if (m.attention.causal) changed.causal = *m.attention.causal;
          alt = rows_.state(h.batch, h.head, row, h.batch, kv_head, visible_in(changed, h.batch, row, s.piece), 0,
                            m.attention.score);
          break;
        }
        case PieceRule::row_shift: {
          const int64_t other = row + m.row_delta;
          if (other < 0 || other >= spec_.q_len(h.batch)) {
            untestable[static_cast<size_t>(r)] = 1;
            break;
          }
          alt = rows_.state(h.batch, h.head, other, h.batch, kv_head, visible_in(spec_, h.batch, other, s.piece), 0, {});
          break;
        }
        case PieceRule::kv_input: {
          const auto it = m.kv_map.find({h.batch, h.head});
          if (it != m.kv_map.end())
            alt = rows_.state(h.batch, h.head, row, it->second.first, it->second.second,
                              visible_in(spec_, h.batch, row, s.piece), 0, {});
          break;
        }
        case PieceRule::partial_map: {
          const auto& [a, b, c] = m.partial_map;
          const int64_t n = st_.splits;
          const int64_t flat = a * row + b * s.position + c;
          const std::vector<const ReplayStep*>& seq = st_.sequences.at(s.sequence);
          if (flat < 0 || flat >= spec_.seq_q * n || static_cast<int64_t>(seq.size()) != n) {
            untestable[static_cast<size_t>(r)] = 1;
            break;
          }
          const int64_t q = flat / n;
          const size_t split = static_cast<size_t>(flat % n);
          alt = rows_.state(h.batch, h.head, q, h.batch, kv_head, visible_in(spec_, h.batch, q, seq[split]->piece), 0, {});
          break;
        }
        case PieceRule::reference:
        case PieceRule::row_exchange: break;
      }
      if (!alt) continue;
      x.m[static_cast<size_t>(r)] = alt->m;
      x.l[static_cast<size_t>(r)] = alt->l;
      std::copy(alt->o.begin(), alt->o.end(), x.o.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(r) * d));
    }
    return replay_.combine(s, x, CombineRule::merge, m.exponents);
  }

  // The correct step with row q holding row q ^ k's state (or its O / l alone, the row's own
  // LSE kept, also where the row saw no key and the event is normalised). A partner past
  // the batch's queries is a row the kernel computed in its last query tile but never stored: its
  // state is zero_query_state's over the keys it sees of those the correct state covers. A partner
  // inside the queries but outside the event's rows cannot be predicted.
  RefState exchanged_rows(const StepModel& m, const ReplayStep& s, std::vector<uint8_t>& untestable) const {
    const EventHeader& h = run_.headers[s.event];
    const RefState right = replay_.correct_prediction(s);
    RefState out = right;
    const size_t d = static_cast<size_t>(right.head_dim);
    const int32_t kv_head = static_cast<int32_t>(spec_.kv_head_of(h.head));
    const bool normalized = (h.convention & kNormalized) != 0;
    std::vector<double> past_o;  // the partner's O when it lies past the queries
    for (int32_t r = 0; r < h.rows; ++r) {
      const int64_t row = int64_t{h.q_begin} + r;
      const int64_t partner = row ^ m.row_xor;
      const int64_t pr = partner - h.q_begin;
      const size_t a = static_cast<size_t>(r);
      const double* src = nullptr;
      double mb = 0, lb = 0;
      if (partner >= spec_.q_len(h.batch)) {
        if (!rows_.has_kv(h.batch, kv_head)) {
          untestable[a] = 1;
          continue;
        }
        const RowState p = rows_.zero_query_state(h.batch, h.head, partner, h.batch, kv_head,
                                                  visible_past_end(spec_, h.batch, partner, covered_keys(s)));
        past_o = p.o;
        src = past_o.data();
        mb = p.m;
        lb = p.l;
      } else if (pr < 0 || pr >= h.rows) {
        untestable[a] = 1;
        continue;
      } else {
        const size_t b = static_cast<size_t>(pr);
        src = right.o.data() + b * d;
        mb = right.m[b];
        lb = right.l[b];
      }
      double* dst = out.o.data() + a * d;
      if (!m.exchange_o_only) {
        out.m[a] = mb;
        out.l[a] = lb;
        std::copy(src, src + d, dst);
        continue;
      }
      if (m.exchange_raw_o) {  // the partner's O as it stands, beside this row's own m and l
        std::copy(src, src + d, dst);
        continue;
      }
      // The partner's O / l at this row's own m and l (both empty rows: O = 0 either way).
      const double la = right.l[a];
      for (size_t c = 0; c < d; ++c) dst[c] = lb > 0.0 ? src[c] / lb * la : 0.0;
      if (lb > 0.0 && la == 0.0) {
        // A row that saw no key holding another's O / l: a normalised event states it as its own
        // LSE (-inf) with l = 1 and O the partner's O / l; an unnormalised state cannot.
        if (normalized) {
          out.l[a] = 1.0;
          for (size_t c = 0; c < d; ++c) dst[c] = src[c] / lb;
        } else {
          untestable[a] = 1;
        }
      }
    }
    return out;
  }

  // Whether row r of s takes its partner's state from a row past the queries.
  bool partner_past_end(const StepModel& m, const ReplayStep& s, int32_t r) const {
    const EventHeader& h = run_.headers[s.event];
    return ((int64_t{h.q_begin} + r) ^ m.row_xor) >= spec_.q_len(h.batch);
  }

  // The keys the correct state of s covers: those of the state it copies or normalises, else its
  // own event's.
  std::vector<KeyRange> covered_keys(const ReplayStep& s) const {
    const bool carried = (s.source == StepSource::copy || s.source == StepSource::normalise) && s.prev >= 0;
    const EventHeader& h = run_.headers[carried ? static_cast<size_t>(s.prev) : s.event];
    return std::vector<KeyRange>(h.keys, h.keys + h.num_key_ranges);
  }

  ModelFit evaluate(const StepModel& m) {
    ModelFit fit;
    fit.model = m;
    std::map<int32_t, uint64_t> wrong_by_split, broken_by_split, checked_by_split;
    std::set<size_t> origin_events;
    std::vector<uint8_t> untestable;
    // Every row that goes wrong by itself must be reproduced (within the budget: the origin
    // events of evenly spaced row blocks).
    std::vector<size_t> origin_list;
    for (const ReplayStep* s : st_.origin) {
      origin_events.insert(s->event);
      origin_list.push_back(s->event);
      fit.wrong_rows_total += st_.origin_rows.at(s->event);
    }
    const std::vector<size_t> origin_sample =
        sample_row_blocks(origin_list, run_.headers, diagnosis_budget(spec_), fit.wrong_sampled);
    for (size_t e : origin_sample) {
      const ReplayStep* s = replay_.step(e);
      if (!may_change(m, *s)) return fail(fit);
      const RefState pred = predict(m, *s, untestable);
      const std::vector<uint8_t>& wrong = replay_.locally_wrong(s->event);
      const int32_t split = run_.headers[s->event].split;
      ++fit.wrong_events;
      for (int32_t r = 0; r < static_cast<int32_t>(wrong.size()); ++r) {
        const RowCheck c = replay_.check_row(s->event, r, pred, m.stored);
        if (wrong[static_cast<size_t>(r)]) {
          ++fit.wrong_rows;
          ++wrong_by_split[split];
          if (untestable[static_cast<size_t>(r)] || !c.matches) return fail(fit);
          if (m.piece == PieceRule::row_exchange && partner_past_end(m, *s, r)) ++fit.wrong_rows_past_end;
        } else if (!untestable[static_cast<size_t>(r)]) {
          ++fit.right_rows_checked;
          ++checked_by_split[split];
          if (!c.matches) {
            ++fit.right_rows_broken;
            ++broken_by_split[split];
          }
        }
      }
    }
    // Right rows elsewhere: every event it may change, or those of evenly spaced row blocks.
    std::vector<size_t> others;
    for (const ReplayStep* s : st_.all) {
      if (origin_events.count(s->event)) continue;
      if (!may_change(m, *s)) {
        fit.right_rows_untouched += static_cast<uint64_t>(run_.headers[s->event].rows);
        continue;
      }
      others.push_back(s->event);
    }
    for (size_t e : sample_row_blocks(others, run_.headers, diagnosis_budget(spec_), fit.sampled)) {
      const ReplayStep* s = replay_.step(e);
      const RefState pred = predict(m, *s, untestable);
      const int32_t split = run_.headers[s->event].split;
      for (int32_t r = 0; r < run_.headers[s->event].rows; ++r) {
        if (untestable[static_cast<size_t>(r)]) continue;
        ++fit.right_rows_checked;
        ++checked_by_split[split];
        if (!replay_.check_row(s->event, r, pred, m.stored).matches) {
          ++fit.right_rows_broken;
          ++broken_by_split[split];
        }
      }
    }
    if (fit.right_rows_broken == 0) {
      fit.holds = true;
      return fit;
    }
    // Established inside the splits holding the wrong rows, when it breaks nothing there.
    if (wrong_by_split.count(-1)) return fail(fit);
    for (const auto& [split, n] : wrong_by_split)
      if (broken_by_split.count(split)) return fail(fit);
    for (const auto& [split, n] : wrong_by_split) {
      fit.scope_splits.push_back(split);
      fit.right_rows_in_scope += checked_by_split[split];
    }
    fit.holds = true;
    return fit;
  }

  std::vector<KeyRange> changed_keys(const KeyChange& k, const ReplayStep& s, int64_t row, int32_t& zero_keys) const {
    const EventHeader& h = run_.headers[s.event];
    zero_keys = 0;
    const int64_t kv_len = spec_.kv_len(h.batch);
    const AttentionSpec::KeySpan span = spec_.visible_keys(h.batch, row);
    auto clip = [&](int64_t b, int64_t e) {
      return KeyRange{static_cast<int32_t>(std::clamp<int64_t>(b, 0, kv_len)), static_cast<int32_t>(std::clamp<int64_t>(e, 0, kv_len))};
    };
    switch (k.edge) {
      case KeyEdge::diagonal: {
        if (row >= spec_.q_len(h.batch)) return {};
        // The row's keys with the end its diagonal sets (causal, or a right window bound) moved.
        const int64_t diagonal = row + spec_.offset(h.batch);
        int64_t limit = std::numeric_limits<int64_t>::max();
        if (spec_.causal != CausalAlign::none) limit = diagonal + 1;
        if (spec_.window_right >= 0) limit = std::min(limit, diagonal + spec_.window_right + 1);
        if (limit == std::numeric_limits<int64_t>::max()) return visible_in(spec_, h.batch, row, s.piece);  // no diagonal
        const int64_t begin = spec_.window_left >= 0 ? std::max<int64_t>(0, diagonal - spec_.window_left) : 0;
        return intersect(clip(begin, std::min(limit + k.delta, kv_len)), s.piece);
      }
      case KeyEdge::piece_begin:
      case KeyEdge::piece_end:
      case KeyEdge::piece_shift:
      case KeyEdge::piece_shift_in_keys: {
        std::vector<KeyRange> out;
        for (const KeyRange& p : s.piece) {
          const int64_t db = k.edge == KeyEdge::piece_end ? 0 : k.delta;
          int64_t de = k.edge == KeyEdge::piece_begin ? 0 : k.delta;
          if (k.edge == KeyEdge::piece_shift_in_keys && p.end == kv_len) de = 0;
          const KeyRange moved = clip(p.begin + db, p.end + de);
          for (const KeyRange& v : visible_in(spec_, h.batch, row, std::span<const KeyRange>(&moved, 1))) out.push_back(v);
        }
        return out;
      }
      case KeyEdge::zero_keys_at_end: {
        std::vector<KeyRange> keys = visible_in(spec_, h.batch, row, s.piece);
        int64_t piece_end = 0;
        for (const KeyRange& p : s.piece) piece_end = std::max<int64_t>(piece_end, p.end);
        if (piece_end == kv_len && span.end == kv_len && !keys.empty()) zero_keys = k.delta;
        return keys;
      }
    }
    return {};
  }

 private:
  static ModelFit fail(ModelFit fit) {
    fit.holds = false;
    return fit;
  }
  static bool same(const std::vector<KeyRange>& a, const std::vector<KeyRange>& b) {
    if (count_keys(a) != count_keys(b) || a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].begin != b[i].begin || a[i].end != b[i].end) return false;
    return true;
  }
  static std::vector<KeyRange> intersect(const KeyRange& k, const std::vector<KeyRange>& piece) {
    std::vector<KeyRange> out;
    for (const KeyRange& p : piece) {
      const int32_t b = std::max(k.begin, p.begin), e = std::min(k.end, p.end);
      if (b < e) out.push_back({b, e});
    }
    return out;
  }

  const LocalReplay& replay_;
  const RunView& run_;
  const AttentionSpec& spec_;
  RowStates& rows_;
  const StageSteps& st_;
};

// A kv-input model: for each (batch, head) with wrong rows, the other kv pair whose keys and
// values reproduce its first wrong event; none when some head has no such pair.
std::optional<StepModel> kv_input_model(const LocalReplay& replay, RowStates& rows, const StageSteps& st, Evaluator& ev) {
  const RunView& run = replay.run();
  const AttentionSpec& spec = replay.reference().attention();
  if (!st.keys_read || rows.kv_pairs().size() < 2) return std::nullopt;
  StepModel model;
  model.kind = SymptomKind::wrong_kv_input;
  model.piece = PieceRule::kv_input;
  std::set<std::pair<int32_t, int32_t>> done;
  std::vector<uint8_t> untestable;
  for (const ReplayStep* s : st.origin) {
    const EventHeader& h = run.headers[s->event];
    if (!done.insert({h.batch, h.head}).second) continue;
    if (s->source == StepSource::copy || s->source == StepSource::normalise) return std::nullopt;
    const std::pair<int32_t, int32_t> own = {h.batch, static_cast<int32_t>(spec.kv_head_of(h.head))};
    bool found = false;
    for (const auto& pair : rows.kv_pairs()) {
      if (std::make_pair(pair[0], pair[1]) == own) continue;
      StepModel trial = model;
      trial.kv_map = {{{h.batch, h.head}, {pair[0], pair[1]}}};
      const RefState pred = ev.predict(trial, *s, untestable);
      const std::vector<uint8_t>& wrong = replay.locally_wrong(s->event);
      bool all = true;
      for (int32_t r = 0; r < h.rows && all; ++r)
        if (wrong[static_cast<size_t>(r)]) all = replay.check_row(s->event, r, pred).matches;
      if (all) {
        model.kv_map[{h.batch, h.head}] = {pair[0], pair[1]};
        found = true;
        break;
      }
    }
    if (!found) return std::nullopt;
  }
  return model;
}

std::string keys_word(int64_t n) { return n == 1 ? "key" : "keys"; }

std::string claim_text(const StepModel& m, const LocalReplay& replay, int32_t stage, std::map<std::string, double>& numbers) {
  const AttentionSpec& spec = replay.reference().attention();
  const RunView& run = replay.run();
  const std::string& name = run.stages[static_cast<size_t>(stage)].name;
  auto constant_name = [&](double v) {
    for (const NamedConstant& c : factor_constants(spec))
      if (std::fabs(v / c.value - 1.0) < 1e-9) return c.name;
    return format_figure(v);
  };
  switch (m.piece) {
    case PieceRule::key_set: {
      const int32_t d = m.keys.delta;
      const int64_t n = std::abs(d);
      numbers["delta_keys"] = d;
      switch (m.keys.edge) {
        case KeyEdge::diagonal:
          numbers["boundary_causal_diagonal"] = 1;
          if (d > 0)
            return "each row of " + name + " also sees the " + plural(n, "key", "keys") +
                   " just past its causal diagonal (key i + offset + 1" + (n > 1 ? " to i + offset + " + std::to_string(n) : "") +
                   "): the causal mask lets in " + plural(n, "key", "keys") + " too many (a limit off by " +
                   std::to_string(n) + ", e.g. `<=` where `<` is meant)";
          return "each row of " + name + " misses the last " + plural(n, "key", "keys") +
                 " it should see at its causal diagonal (" + (n == 1 ? "the diagonal key i + offset itself" : "keys i + offset - " + std::to_string(n - 1) + " to i + offset") +
                 "): the causal mask drops " + plural(n, "key", "keys") + " (a limit off by " + std::to_string(n) +
                 ", e.g. `<` where `<=` is meant)";
        case KeyEdge::piece_begin:
          numbers["boundary_step_begin"] = 1;
          return "each event of " + name + " reads its keys from " + std::to_string(n) + " " + keys_word(n) + " " +
                 (d < 0 ? "before" : "after") + " the first key it declares (the start of its key range is off by " +
                 std::to_string(d) + ")";
        case KeyEdge::piece_end:
          numbers["boundary_step_end"] = 1;
          return "each event of " + name + " reads " + (d > 0 ? std::to_string(n) + " " + keys_word(n) + " past" : "up to " + std::to_string(n) + " " + keys_word(n) + " short of") +
                 " the end of the key range it declares (the end is off by " + std::to_string(d) + ")";
        case KeyEdge::piece_shift:
        case KeyEdge::piece_shift_in_keys:
          numbers["boundary_step_shift"] = 1;
          return "each event of " + name + " reads keys [b " + (d < 0 ? "- " : "+ ") + std::to_string(n) + ", e " +
                 (d < 0 ? "- " : "+ ") + std::to_string(n) + ") where it declares [b, e): its key indices are off by " +
                 std::to_string(d) +
                 (m.keys.edge == KeyEdge::piece_shift_in_keys ? " (a step that reaches the end of the keys still stops there)" : "");
        case KeyEdge::zero_keys_at_end:
          numbers["zero_keys"] = d;
          numbers["kv_len"] = static_cast<double>(spec.seq_kv);
          return "every event of " + name + " that reaches the end of the keys holds " + plural(n, "extra key", "extra keys") +
                 " of score 0 and value 0: " + (n == 1 ? "the position" : "positions") + " past the last key (seq_kv = " +
                 std::to_string(spec.seq_kv) + ") in a zero-filled tile " + (n == 1 ? "is" : "are") +
                 " not masked (the tail mask lets padded keys in)";
      }
      break;
    }
    case PieceRule::attention: {
      const ScoreVariant& v = m.attention.score;
      if (m.kind == SymptomKind::scores_scaled) {
        numbers["factor"] = v.score_factor;
        const std::string c = constant_name(v.score_factor);
        std::string why;
        if (std::fabs(v.score_factor / spec.effective_scale() - 1.0) < 1e-9 && std::fabs(spec.effective_scale() - 1.0) > 1e-6)
          why = ": the softmax scale is applied twice (or 1 / head_dim used for 1 / sqrt(head_dim))";
        else if (std::fabs(v.score_factor * spec.effective_scale() - 1.0) < 1e-9 && std::fabs(spec.effective_scale() - 1.0) > 1e-6)
          why = ": the softmax scale is not applied";
        return "every score in " + name + " is " + format_figure(v.score_factor) + " (" + c + ") times the attention's (m = " +
               format_figure(v.score_factor) + " x the expected m, and l, O are those of the scaled scores)" + why;
      }
      if (m.kind == SymptomKind::exponent_base) {
        numbers["exponent_factor"] = v.exponent_factor;
        const bool exp2 = std::fabs(v.exponent_factor - std::numbers::ln2) < 1e-12;
        numbers["old_state_exponent_factor"] = m.exponents.prev;
        return std::string("the exponentials in ") + name + " are exp(" + format_figure(v.exponent_factor) + " (s - m)) = " +
               (exp2 ? "exp2(s - m) on natural-log scores: log2 e is not folded into the scores before exp2 (m is right; l and "
                       "O are those of exponents x ln 2)"
                     : "exp(log2 e (s - m)): exp taken of base-2 scores (m is right; l and O are those of exponents x log2 e)") +
               (m.exponents.prev == 1.0 ? "; the running state is rescaled with exp(m_old - m_new) as it should"
                                        : "; the running state is rescaled the same way");
      }
      if (m.kind == SymptomKind::softcap_ignored) {
        numbers["softcap"] = spec.softcap;
        return "the logit softcap (" + format_figure(spec.softcap) + " tanh(s / " + format_figure(spec.softcap) +
               ")) is not applied in " + name + ": every state is that of the uncapped scores";
      }
      if (m.kind == SymptomKind::alibi_ignored)
        return "the ALiBi bias (- slope x |i + offset - j|) is not applied in " + name + ": every state is that of the unbiased scores";
      if (m.kind == SymptomKind::causal_alignment)
        return std::string("the causal diagonal in ") + name + " is aligned " +
               (*m.attention.causal == CausalAlign::top_left
                    ? "top-left (query i sees keys j <= i) where the attention says bottom-right (j <= i + kv_len - q_len)"
                    : "bottom-right (j <= i + kv_len - q_len) where the attention says top-left (j <= i)");
      if (m.kind == SymptomKind::causal_mask_ignored) return "no causal mask is applied in " + name + ": every row sees every key";
      break;
    }
    case PieceRule::row_shift:
      numbers["row_delta"] = m.row_delta;
      return "query row i of " + name + " holds the state of row i " + (m.row_delta < 0 ? "- " : "+ ") +
             std::to_string(std::abs(m.row_delta)) + " (its query and its mask): the query row index is off by " +
             std::to_string(m.row_delta);
    case PieceRule::row_exchange:
      numbers["row_xor"] = m.row_xor;
      return "query row q of " + name + " holds " +
             (m.exchange_raw_o ? "the unnormalised O of" : m.exchange_o_only ? "the output (O / l) of" : "the state of") +
             " row q xor " + std::to_string(m.row_xor) +
             (m.exchange_raw_o ? " (its m and l are its own)" : m.exchange_o_only ? " (its LSE is its own)" : "") +
             ": rows q and q + " + std::to_string(m.row_xor) + " of each block of " + std::to_string(2 * m.row_xor) +
             " are stored the wrong way round, as when the two row halves of a tensor-core accumulator fragment "
             "(mma c0, c1 and c2, c3) are exchanged at the store";
    case PieceRule::kv_input: {
      std::string list;
      size_t k = 0;
      for (const auto& [q, kv] : m.kv_map) {
        if (k++ == 4) {
          list += ", ...";
          break;
        }
        list += (list.empty() ? "" : ", ") + std::string("batch ") + std::to_string(q.first) + " head " + std::to_string(q.second) +
                " reads (batch " + std::to_string(kv.first) + ", kv head " + std::to_string(kv.second) + ")";
      }
      numbers["heads_remapped"] = static_cast<double>(m.kv_map.size());
      return "some heads read the keys and values of another (batch, kv head): " + list +
             " (a batch or head stride, or the query-to-kv head mapping, is off)";
    }
    case PieceRule::partial_map: {
      const auto& [a, b, c] = m.partial_map;
      numbers["a"] = static_cast<double>(a);
      numbers["b"] = static_cast<double>(b);
      numbers["c"] = static_cast<double>(c);
      if (a == m.partial_splits && b == 1 && c % m.partial_splits == 0) {
        const int64_t dq = c / m.partial_splits;
        numbers["query_delta"] = static_cast<double>(dq);
        return "for query q, " + name + " merges the partial states of query q " + (dq < 0 ? "- " : "+ ") +
               std::to_string(std::llabs(dq)) + " (every split): the query index of the partial buffers is off by " +
               std::to_string(dq);
      }
      std::string formula = (a == 1 ? std::string("q") : std::to_string(a) + " q");
      if (b) formula += b == 1 ? " + s" : " + " + std::to_string(b) + " s";
      if (c) formula += (c < 0 ? " - " : " + ") + std::to_string(std::llabs(c));
      return "for query q and split s, " + name + " merges the partial state at buffer row " + formula +
             " (query floor(row / S), split row mod S, S = " + std::to_string(m.partial_splits) +
             " splits) where the partial pass wrote (q, s) at row q S + s: the reducer indexes the partial buffers with "
             "another layout";
    }
    case PieceRule::reference: break;
  }
  const StoredChannelRule& s = m.stored;
  if (s.m_factor != 1.0) {
    numbers["factor"] = s.m_factor;
    return "the m (or LSE) channel of " + name + " is " + format_figure(s.m_factor) + " (" + constant_name(s.m_factor) +
           ") times the expected in every row while l and O are right: it is stored in other units than the event's "
           "convention declares" +
           (std::fabs(s.m_factor - std::numbers::log2e) < 1e-12 ? " (base 2 where natural is declared: declare log base 2, or divide by log2 e)"
            : std::fabs(s.m_factor - std::numbers::ln2) < 1e-12 ? " (natural where base 2 is declared)"
                                                                 : "");
  }
  if (s.m_log_l < 0) return "the LSE of " + name + " is m alone, log l is never added (LSE = m + log l)";
  if (s.m_log_l > 0) return "the m channel of " + name + " holds m + log l (the LSE) where the event declares the running max m";
  if (s.o_l_power > 0) return "O in " + name + " is l times the expected (row by row): O is not divided by l, or weighted by l once more";
  if (s.o_l_power < 0) {
    bool normalized = false, unnormalized = false;
    for (const ReplayStep& st : replay.steps()) {
      const EventHeader& h = replay.run().headers[st.event];
      if (h.stage != stage) continue;
      ((h.convention & kNormalized) ? normalized : unnormalized) = true;
    }
    if (!unnormalized)
      return "O in " + name + " is divided by l twice (row by row): the normalised O is divided by l once more";
    return "O in " + name + " is divided by l once more than its convention says (row by row): " +
           (normalized ? "normalised where an unnormalised state is declared, or divided by l twice"
                       : "already normalised where the event declares an unnormalised state");
  }
  if (s.nan_where_no_key)
    return "rows of " + name + " whose state has seen no key yet hold NaN where they should hold m = -inf, l = 0, O = 0: "
           "exp(-inf - -inf) is NaN; guard rows whose running max is still -inf";
  return name + ": " + std::string(symptom_kind_info(m.kind).meaning);
}

}  // namespace

std::vector<ModelFit> establish_mechanisms(const LocalReplay& replay, int32_t stage, RowStates& rows) {
  const StageSteps st = stage_steps(replay, stage);
  std::vector<ModelFit> established;
  if (st.origin.empty()) return established;
  Evaluator ev(replay, rows, st);
  std::vector<StepModel> models = candidate_models(st, replay.reference().attention());
  if (std::optional<StepModel> kv = kv_input_model(replay, rows, st, ev)) models.push_back(*kv);
  std::set<SymptomKind> kinds;
  for (const StepModel& m : models) {
    // One model of a kind is enough, but for exchanged rows the distance is the claim itself: when
    // two distances fit (rows that see the same keys, e.g. the zero-query rows past the end, hold
    // the same output) they compete.
    if (kinds.count(m.kind) && m.kind != SymptomKind::rows_exchanged) continue;
    ModelFit fit = ev.evaluate(m);
    if (!fit.holds) continue;
    kinds.insert(m.kind);
    fit.claim = claim_text(fit.model, replay, stage, fit.numbers);
    established.push_back(std::move(fit));
  }
  // A model that holds everywhere is a stronger claim than one that needs a scope.
  const bool any_global = std::any_of(established.begin(), established.end(), [](const ModelFit& f) { return f.scope_splits.empty(); });
  if (any_global)
    established.erase(std::remove_if(established.begin(), established.end(), [](const ModelFit& f) { return !f.scope_splits.empty(); }),
                      established.end());
  return established;
}

size_t models_tested(const LocalReplay& replay, int32_t stage) {
  const StageSteps st = stage_steps(replay, stage);
  return candidate_models(st, replay.reference().attention()).size() + 1;
}

Mechanism to_mechanism(const ModelFit& fit, const LocalReplay& replay, int32_t stage) {
  const RunView& run = replay.run();
  const std::string& name = run.stages[static_cast<size_t>(stage)].name;
  Mechanism m;
  m.kind = fit.model.kind;
  m.id = std::string(to_string(fit.model.kind));
  m.claim = fit.claim;
  m.numbers = fit.numbers;
  m.numbers["wrong_rows"] = static_cast<double>(fit.wrong_rows);
  m.numbers["wrong_events"] = static_cast<double>(fit.wrong_events);
  m.numbers["right_rows_checked"] = static_cast<double>(fit.right_rows_checked);
  if (fit.scope_splits.empty()) {
    m.scope = "every event of " + name;
  } else {
    std::vector<int64_t> splits(fit.scope_splits.begin(), fit.scope_splits.end());
    m.scope = std::string(splits.size() == 1 ? "split " : "splits ") + format_ranges(std::span<const int64_t>(splits)) +
              " of " + name + " only";
    m.numbers["right_rows_broken_outside_scope"] = static_cast<double>(fit.right_rows_broken);
  }
  m.numbers["wrong_rows_total"] = static_cast<double>(fit.wrong_rows_total);
  m.evidence.push_back(
      "replaying each event of " + name + " from the trace's own previous state with this change reproduces " +
      reproduced_rows_text(fit, "") + " (in " + plural(static_cast<int64_t>(fit.wrong_events), "event", "events") +
      ") within " + format_figure(kReplaySlack) + " x the tolerance");
  if (fit.scope_splits.empty() && fit.right_rows_checked + fit.right_rows_untouched == 0)
    m.evidence.push_back("every event of " + name + " is wrong: no right row could contradict it");
  else if (fit.scope_splits.empty())
    m.evidence.push_back("it contradicts no right row: it predicts the " + std::to_string(fit.right_rows_checked) +
                         " right rows it was checked on" + (fit.sampled ? " (evenly spaced events within the check budget)" : "") +
                         (fit.right_rows_untouched ? " and leaves the other " + std::to_string(fit.right_rows_untouched) +
                                                         " (events it does not change) as they are"
                                                   : ""));
  else
    m.evidence.push_back("inside that scope it keeps every right row right; outside it the same change would break " +
                         plural(static_cast<int64_t>(fit.right_rows_broken), "right row", "right rows") +
                         ", so it acts there only");
  if (fit.wrong_rows_past_end > 0) {
    m.numbers["wrong_rows_partner_past_end"] = static_cast<double>(fit.wrong_rows_past_end);
    m.evidence.push_back(plural(static_cast<int64_t>(fit.wrong_rows_past_end), "of those rows holds", "of those rows hold") +
                         std::string(fit.model.exchange_raw_o ? " the O" : fit.model.exchange_o_only ? " the output" : " the state") +
                         " of a row past the queries, which the kernel computes in its last query tile but "
                         "never stores: replayed as the state of a zero-filled query row over the keys it sees");
  }
  return m;
}

std::string reproduced_rows_text(const ModelFit& fit, const std::string& stage) {
  return checked_wrong_rows_text(fit.wrong_rows, fit.wrong_rows_total, fit.wrong_sampled, true, stage);
}

}  // namespace ts
