// The kinds of symptom a report can carry, as one enum with one table of texts: the stable
// identifier scripts and the viewer read (`symptom_kind` and `mechanism.id` in the JSON), whether
// the kind names a mechanism (a cause established by its evidence) or only describes what was
// measured, and what the mechanism means for the kernel in words (the sentences build on it).
//
// Mechanism kinds are claimed only when their sufficient evidence holds over the whole run
// (docs/diagnosis.md says what each needs); the others say what was measured: a clean run,
// events never written, several mechanisms that fit equally, or errors no tested mechanism
// explains. The A/B kinds belong to ab_compare.h.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace ts {

enum class SymptomKind {
  // What was measured, no mechanism.
  clean,             // every event within tolerance
  missing_partial,   // a split wrote no state; the merge reads the unwritten one
  missing_events,    // events the kernel never wrote (other cases)
  competing,         // several mechanisms fit every error equally; all are listed
  unexplained,       // wrong values no tested mechanism explains: what and where, measured
  non_finite,        // NaN / Inf no tested mechanism explains: which rows, measured
  // Mechanisms (app/model/analysis/mechanisms.h tests each).
  nan_fully_masked,       // NaN exactly where a row sees no key (no guard for m = -inf)
  m_channel_units,        // only the m / LSE channel wrong: stored in other units than declared
  lse_without_log_l,      // only the LSE wrong: it is m; log l never added
  m_holds_lse,            // only m wrong: it holds m + log l where the running max is declared
  o_times_l,              // only O wrong: l times the expected (not divided by l, or weighted by it)
  o_divided_by_l,         // only O wrong: divided by l once more (normalised where unnormalised is declared, or twice)
  o_not_rescaled,         // the running O not rescaled by exp(m_old - m_new) (l is)
  l_not_rescaled,         // the running l not rescaled by exp(m_old - m_new) (O is)
  no_online_rescale,      // each step uses its own max, the running state never rescaled
  stale_state,            // the P.V accumulator is not reset: earlier products added again
  reduce_scaled_by_l,     // a merge weights each merged O by its l again
  previous_state_dropped, // a step replaces the running state by its own
  step_not_added,         // a step's keys are never added
  step_added_twice,       // a step's keys are added twice
  key_set_changed,        // the visible keys differ from the attention's at a boundary
  scores_scaled,          // every score is c times the attention's
  exponent_base,          // exp(c (s - m)) in place of exp(s - m)
  softcap_ignored,        // the attention's softcap is not applied
  alibi_ignored,          // the attention's ALiBi bias is not applied
  causal_alignment,       // the causal diagonal aligned the other way
  causal_mask_ignored,    // no causal mask
  rows_shifted,           // row i holds row i + delta's state
  rows_exchanged,         // row q holds row q xor k's output or state (a fragment-layout mix-up)
  wrong_kv_input,         // keys and values of another (batch, kv head)
  query_layout,           // a merge reads the partials of other (query, split) pairs
  // A/B (ab_compare.h).
  inputs_differ,
  race,
  runs_differ,
  both_diverge,
  agree,
};

struct SymptomKindInfo {
  SymptomKind kind;
  std::string_view id;        // stable: "reduce_scaled_by_l"
  bool mechanism;             // names a cause (claimed only on its sufficient evidence)
  std::string_view meaning;   // what it says about the kernel, one clause
};

std::span<const SymptomKindInfo> all_symptom_kinds();
const SymptomKindInfo& symptom_kind_info(SymptomKind kind);
std::string_view to_string(SymptomKind kind);  // the stable id
std::optional<SymptomKind> symptom_kind_from_id(std::string_view id);

}  // namespace ts
