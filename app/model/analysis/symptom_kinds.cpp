// The one table of symptom kinds: stable ids and what each means (symptom_kinds.h).
#include "app/model/analysis/symptom_kinds.h"

#include <stdexcept>

namespace ts {
namespace {

using K = SymptomKind;

constexpr SymptomKindInfo kKinds[] = {
    {K::clean, "clean", false, "every event matches the float64 reference within tolerance"},
    {K::missing_partial, "missing_partial", false, "a split never wrote its state and the merge read the unwritten one"},
    {K::missing_events, "missing_events", false, "events the kernel planned were never written"},
    {K::competing, "competing", false, "several mechanisms reproduce every error equally"},
    {K::unexplained, "unexplained", false, "no tested mechanism reproduces the errors"},
    {K::non_finite, "non_finite", false, "NaN or Inf where the reference is finite, no tested mechanism reproduces them"},
    {K::nan_fully_masked, "nan_fully_masked", true,
     "rows that see no key get NaN from exp(-inf - -inf): guard rows whose running max is still -inf so that they "
     "keep m = -inf, l = 0, O = 0"},
    {K::m_channel_units, "m_channel_units", true,
     "the m (or LSE) channel is stored in other units than the event declares; l and O are right"},
    {K::lse_without_log_l, "lse_without_log_l", true, "the LSE is the running max m alone: log l is never added"},
    {K::m_holds_lse, "m_holds_lse", true,
     "the m channel holds LSE = m + log l where the event declares the running max"},
    {K::o_times_l, "o_times_l", true, "O is l times what it should be: not divided by l, or weighted by l again"},
    {K::o_divided_by_l, "o_divided_by_l", true,
     "O is divided by l once more than the event's convention says: normalised where an unnormalised state is "
     "declared, or a normalised O divided by l again"},
    {K::o_not_rescaled, "o_not_rescaled", true,
     "the running O is not rescaled by exp(m_old - m_new) when the running max rises (l is)"},
    {K::l_not_rescaled, "l_not_rescaled", true,
     "the running l is not rescaled by exp(m_old - m_new) when the running max rises (O is)"},
    {K::no_online_rescale, "no_online_rescale", true,
     "each step normalises with its own max and the running state is never rescaled (no online softmax)"},
    {K::stale_state, "stale_state", true,
     "the P.V accumulator is not reset between steps: every earlier step's product is added again"},
    {K::reduce_scaled_by_l, "reduce_scaled_by_l", true,
     "the merge weights each merged state's O by its sum l again; weight it by exp(m_s - m) only"},
    {K::previous_state_dropped, "previous_state_dropped", true,
     "the running state is discarded at the step: the step's own state replaces it"},
    {K::step_not_added, "step_not_added", true, "the step's keys are never added: the state stays what it was"},
    {K::step_added_twice, "step_added_twice", true, "the step's keys are added twice"},
    {K::key_set_changed, "key_set_changed", true, "the kernel's visible keys differ from the attention's at a boundary"},
    {K::scores_scaled, "scores_scaled", true, "every score is a constant times the attention's"},
    {K::exponent_base, "exponent_base", true, "the exponentials are exp(c (s - m)) instead of exp(s - m)"},
    {K::softcap_ignored, "softcap_ignored", true, "the attention's logit softcap is not applied"},
    {K::alibi_ignored, "alibi_ignored", true, "the attention's ALiBi bias is not applied"},
    {K::causal_alignment, "causal_alignment", true, "the causal diagonal is aligned the other way"},
    {K::causal_mask_ignored, "causal_mask_ignored", true, "the causal mask is not applied"},
    {K::rows_shifted, "rows_shifted", true, "each query row holds another row's state"},
    {K::rows_exchanged, "rows_exchanged", true,
     "row q holds row q xor k's output or state: rows stored through the wrong half of a register fragment"},
    {K::wrong_kv_input, "wrong_kv_input", true, "some heads read the keys and values of another (batch, kv head)"},
    {K::query_layout, "query_layout", true,
     "the merge reads the partial states of other (query, split) pairs: the reducer indexes the partial buffers "
     "with another layout than the partial pass wrote"},
    {K::inputs_differ, "inputs_differ", false, "A and B ran on different inputs"},
    {K::race, "race", false, "the same kernel on the same inputs gave different results: a race"},
    {K::runs_differ, "runs_differ", false, "A and B differ"},
    {K::both_diverge, "both_diverge", false, "A and B agree with each other but not with the reference"},
    {K::agree, "agree", false, "A and B agree and match the reference"},
};

}  // namespace

std::span<const SymptomKindInfo> all_symptom_kinds() { return kKinds; }

const SymptomKindInfo& symptom_kind_info(SymptomKind kind) {
  for (const SymptomKindInfo& i : kKinds)
    if (i.kind == kind) return i;
  throw std::logic_error("symptom kind missing from the table");
}

std::string_view to_string(SymptomKind kind) { return symptom_kind_info(kind).id; }

std::optional<SymptomKind> symptom_kind_from_id(std::string_view id) {
  for (const SymptomKindInfo& i : kKinds)
    if (i.id == id) return i.kind;
  return std::nullopt;
}

}  // namespace ts
