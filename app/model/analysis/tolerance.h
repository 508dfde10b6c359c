// How close a traced value must be to the float64 reference to count as right.
//
// The default is the correctness rule of flash-attention's tests: a kernel's error against the
// float64 reference may be at most 2x the error of a naive implementation of the same precision
// on the same inputs, plus a tiny absolute floor; NaN never passes. The "same precision" is
//   - float32 for the intermediate stages (fa1.step, splitk.partial, splitk.reduce): the kernels
//     hold their running state in float32 whatever the input dtype (inputs are exact in
//     float32), so a float32 textbook attention is the fair yardstick; holding them to a bf16
//     baseline would let a wrong state hide under bf16's 8-bit mantissa;
//   - the input dtype for the final output: the kernel rounds O to that dtype when it writes it,
//     exactly as the textbook implementation in that dtype does;
//   - for an intermediate stage that rounds the softmax weights P to the input dtype before P V
//     (StageInfo::p_rounded: a tensor-core kernel, whose mma takes 16-bit operands), the float32
//     textbook with P rounded the same way: its O carries that rounding (2^-9 relative in bf16),
//     which the plain float32 textbook's bar would call a divergence; and its l too where the
//     kernel sums the rounded P (it may sum P before the rounding or after: the bars take the
//     larger error of the two sums);
//   - for an intermediate stage that takes its weights by exp2 with the scale and log2 e folded
//     into one multiply-add (StageInfo::exp2_folded: FlashAttention-2's exponent), the float32
//     textbook that folds them the same way (P rounded too where the stage rounds it): near a
//     large |m| that rounding moves the row's largest weight off 1 by a few ulps of m log2 e,
//     which l and O carry and a textbook that subtracts the max first never has.
// `--tol atol[,rtol]` replaces the rule with explicit bounds.
//
// A bar is applied per query row: |got - want| <= atol + rtol * scale, where scale is the row's
// largest reference magnitude of the quantity (the error of a sum of products scales with the
// row's magnitude, not with each element's, which may cancel to ~0). Under the rule, raw
// unnormalised O is held to atol * l_ref (O grows with the row's sum l).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "instrumentation/trace/trace_event.h"
#include "base/dtype.h"

namespace ts {

class ToleranceError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct QuantityBar {
  double atol = 0.0;
  double rtol = 0.0;
  bool atol_per_l = false;  // atol is per unit of the row's reference l (raw unnormalised O)

  // The largest error allowed for a row whose reference has magnitude `ref_scale` and sum l_ref.
  double bar(double ref_scale, double l_ref) const {
    return (atol_per_l ? atol * l_ref : atol) + rtol * ref_scale;
  }
};

// The four compared quantities of a state: m (LSE in the normalised convention), l, O/l and
// raw O.
struct StageBars {
  QuantityBar m, l, o_norm, o_raw;
};

// The naive baselines' errors against the float64 reference, over the compared query tiles.
struct NaiveErrors {
  // Float32 textbook unnormalised states (scores, max, exp, sums in order) of each kv tile
  // alone and of all keys: the yardstick of the intermediate stages. Per tile as well as
  // overall, because a state over few keys is legitimately less accurate (its softmax weights
  // are larger) than the final output over all of them.
  double m_f32 = 0.0;       // max |m - m_ref|
  double l_rel_f32 = 0.0;   // max |l - l_ref| / l_ref
  double o_norm_f32 = 0.0;  // max |O/l - ref|
  // The same with P rounded to the input dtype before P V (the yardstick of p_rounded stages; the
  // float32 figures when the trace has none): l and O/l the larger of l summed before the rounding
  // and after it (a kernel may do either).
  double o_norm_p_rounded = 0.0, l_rel_p_rounded = 0.0;
  // The textbook states with the exponents folded (the yardstick of exp2_folded stages; the
  // float32 figures above when the trace has none), and their l and O/l with P rounded as well.
  double m_folded = 0.0, l_rel_folded = 0.0, o_norm_folded = 0.0;
  double o_norm_folded_p_rounded = 0.0, l_rel_folded_p_rounded = 0.0;
  // The textbook attention in the input dtype (kernels/naive_attention.h): the final output.
  double o_dtype = 0.0, lse_dtype = 0.0;
};

// The formulations of a run's intermediate (state and merge) stages besides the plain one
// (StageInfo::p_rounded, exp2_folded): which further textbook states the baselines compute and
// which bars the tolerance states.
struct StageForms {
  bool p_rounded = false;         // a stage rounds P and does not fold its exponents
  bool folded = false;            // a stage folds its exponents and does not round P
  bool folded_p_rounded = false;  // a stage does both
  bool any_folded() const { return folded || folded_p_rounded; }
};
StageForms stage_forms(const std::vector<StageInfo>& stages);

struct ToleranceOverride {
  double atol = 0.0;
  double rtol = 0.0;
};

// Parses "atol" or "atol,rtol" (non-negative finite numbers). Throws ToleranceError naming
// the problem.
ToleranceOverride parse_tolerance(std::string_view text);

struct Tolerance {
  bool from_rule = true;  // false: an explicit --tol override
  NaiveErrors naive{};    // what the rule's bars were made from
  double floor_intermediate = 0.0, floor_final = 0.0;
  ToleranceOverride override_bounds{};  // when !from_rule
  StageBars intermediate{};            // fa1.step, splitk.partial, splitk.reduce
  StageBars intermediate_p_rounded{};  // intermediate stages with P rounded
  StageBars intermediate_folded{};     // intermediate stages with the exponents folded
  StageBars intermediate_folded_p_rounded{};  // both (fa2.step)
  StageBars final_stage{};             // final (normalised O and LSE)
  bool final_from_f32 = false;         // the input-dtype naive overflowed: final bars from float32
  StageForms forms{};                  // the formulations whose bars the run's stages use

  const StageBars& for_stage(const StageInfo& stage) const {
    if (stage.kind == StageKind::final) return final_stage;
    if (stage.exp2_folded) return stage.p_rounded ? intermediate_folded_p_rounded : intermediate_folded;
    return stage.p_rounded ? intermediate_p_rounded : intermediate;
  }
  std::string describe() const;  // one line, for reports
};

// How a value is judged under any Tolerance, in one sentence (reports print it;
// docs/diagnosis.md explains it with its numbers).
std::string_view comparison_rule();

// The absolute floor of the rule: an O(1) value's last few bits in the given precision (it
// matters where the naive error is 0, e.g. a row that sees one key: O = V exactly).
double tolerance_floor(DType precision);

// Half the distance from 1 to the next number of the precision: the largest relative error of
// rounding to it.
double unit_roundoff(DType precision);

// The rule's bars from the naive baselines' errors; `dtype` is the run's input dtype, `forms` the
// formulations of its stages (NaiveErrors holds their figures).
Tolerance rule_tolerance(const NaiveErrors& naive, DType dtype, StageForms forms = {});
Tolerance override_tolerance(const ToleranceOverride& bounds);

}  // namespace ts
