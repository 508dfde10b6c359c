#include "app/model/analysis/tolerance.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ts {
namespace {

double parse_bound(std::string_view text, const char* what) {
  const std::string s(text);
  if (s.empty())
    throw ToleranceError(std::string("--tol: the ") + what +
                         " is empty; write atol or atol,rtol, e.g. --tol 1e-3,1e-2");
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE)
    throw ToleranceError(std::string("--tol: the ") + what + " '" + s +
                         "' is not a number; write atol or atol,rtol, e.g. --tol 1e-3,1e-2");
  if (!std::isfinite(v) || v < 0.0)
    throw ToleranceError(std::string("--tol: the ") + what + " must be a finite number >= 0 (got " +
                         s + ")");
  return v;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

// The bars of a formulation with the exponents folded, when a stage uses it: its m and l differ
// from the plain textbook's too.
std::string folded_bars(const std::string& what, bool used, const StageBars& b) {
  if (!used) return "";
  return what + ", O/l " + number(b.o_norm.atol) + ", m " + number(b.m.atol) + ", l " + number(b.l.rtol) + " x l";
}

}  // namespace

ToleranceOverride parse_tolerance(std::string_view text) {
  ToleranceOverride t;
  const size_t comma = text.find(',');
  if (comma == std::string_view::npos) {
    t.atol = parse_bound(text, "atol");
    return t;
  }
  if (text.find(',', comma + 1) != std::string_view::npos)
    throw ToleranceError("--tol takes at most two numbers, atol,rtol (got '" + std::string(text) + "')");
  t.atol = parse_bound(text.substr(0, comma), "atol");
  t.rtol = parse_bound(text.substr(comma + 1), "rtol");
  return t;
}

double unit_roundoff(DType precision) {
  switch (precision) {
    case DType::f32: return 0x1p-24;
    case DType::f16: return 0x1p-11;
    case DType::bf16: return 0x1p-8;
  }
  return 0x1p-24;
}

double tolerance_floor(DType precision) {
  switch (precision) {
    case DType::f32: return 1e-6;   // ~8 float32 ulps of 1
    case DType::f16: return 1e-5;
    case DType::bf16: return 1e-4;
  }
  return 1e-6;
}

StageForms stage_forms(const std::vector<StageInfo>& stages) {
  StageForms f;
  for (const StageInfo& s : stages) {
    if (s.kind == StageKind::final) continue;
    if (s.exp2_folded) (s.p_rounded ? f.folded_p_rounded : f.folded) = true;
    else if (s.p_rounded) f.p_rounded = true;
  }
  return f;
}

Tolerance rule_tolerance(const NaiveErrors& naive, DType dtype, StageForms forms) {
  Tolerance t;
  t.from_rule = true;
  t.forms = forms;
  t.naive = naive;
  t.floor_intermediate = tolerance_floor(DType::f32);
  t.floor_final = tolerance_floor(dtype);

  // Intermediate states (float32 arithmetic), each quantity against the float32 textbook's of
  // the stage's formulation. Raw O = (O/l) * l combines the O/l and l bars.
  auto bars = [&](double m_err, double l_rel_err, double o_norm_err) {
    const double m = 2.0 * m_err + t.floor_intermediate;
    const double l_rel = 2.0 * l_rel_err + t.floor_intermediate;
    const double o_norm = 2.0 * o_norm_err + t.floor_intermediate;
    StageBars b;
    b.m = {m, 0.0, false};
    b.l = {0.0, l_rel, false};
    b.o_norm = {o_norm, 0.0, false};
    b.o_raw = {o_norm, l_rel, true};
    return b;
  };
  t.intermediate = bars(naive.m_f32, naive.l_rel_f32, naive.o_norm_f32);
  t.intermediate_p_rounded =
      bars(naive.m_f32, std::max(naive.l_rel_f32, naive.l_rel_p_rounded), naive.o_norm_p_rounded);
  t.intermediate_folded = bars(naive.m_folded, naive.l_rel_folded, naive.o_norm_folded);
  t.intermediate_folded_p_rounded = bars(
      naive.m_folded, std::max(naive.l_rel_folded, naive.l_rel_folded_p_rounded), naive.o_norm_folded_p_rounded);

  // The final output (normalised: the m channel holds LSE, l holds 1, O is the output).
  t.final_stage.l = {t.floor_final, 0.0, false};
  if (std::isfinite(naive.lse_dtype) && std::isfinite(naive.o_dtype)) {
    const double lse = 2.0 * naive.lse_dtype + t.floor_final;
    const double out = 2.0 * naive.o_dtype + t.floor_final;
    t.final_stage.m = {lse, 0.0, false};
    t.final_stage.o_norm = {out, 0.0, false};
    if (forms.any_folded()) {
      // The output of folded stages carries their O/l error (the input-dtype textbook subtracts
      // the max first and has none of it) and then its rounding to the dtype: the larger bar.
      const double folded = 2.0 * std::max(naive.o_norm_folded, naive.o_norm_folded_p_rounded) + t.floor_final;
      if (folded > out) t.final_stage.o_norm = {folded, unit_roundoff(dtype), false};
    }
    t.final_stage.o_raw = t.final_stage.o_norm;
  } else {
    // The input-dtype naive attention overflowed (its scores, rounded to the dtype, passed the
    // dtype's largest value) and sets no bar: an infinite one would pass any output. The final
    // stage is judged against the float32 textbook instead, plus the output's rounding to the
    // dtype (half its ulp, relative to the row's largest |O|); the LSE stays float32.
    // The textbook of the stages' formulations (P rounded, exponents folded) where they declare
    // one: the final output carries the same rounding.
    t.final_from_f32 = true;
    const double lse = 2.0 * std::max({naive.m_f32 + naive.l_rel_f32, naive.m_f32 + naive.l_rel_p_rounded,
                                       naive.m_folded + naive.l_rel_folded,
                                       naive.m_folded + naive.l_rel_folded_p_rounded}) +
                       t.floor_final;
    const double out = 2.0 * std::max({naive.o_norm_f32, naive.o_norm_p_rounded, naive.o_norm_folded,
                                       naive.o_norm_folded_p_rounded}) +
                       t.floor_final;
    t.final_stage.m = {lse, 0.0, false};
    t.final_stage.o_norm = {out, unit_roundoff(dtype), false};
    t.final_stage.o_raw = t.final_stage.o_norm;
  }
  return t;
}

Tolerance override_tolerance(const ToleranceOverride& bounds) {
  Tolerance t;
  t.from_rule = false;
  t.override_bounds = bounds;
  const QuantityBar bar{bounds.atol, bounds.rtol, false};
  t.intermediate = {bar, bar, bar, bar};
  t.intermediate_p_rounded = t.intermediate_folded = t.intermediate_folded_p_rounded = t.intermediate;
  t.final_stage = t.intermediate;
  return t;
}

std::string_view comparison_rule() {
  return "a value passes when |trace - reference| <= atol + rtol x s, where s is its row's largest |reference| of "
         "that quantity (m or LSE, l, O/l, raw O); raw unnormalised O uses atol x the row's l; NaN never passes, equal "
         "infinities do; error / allowed > 1 fails";
}

std::string Tolerance::describe() const {
  if (!from_rule)
    return "explicit: |error| <= " + number(override_bounds.atol) + " + " + number(override_bounds.rtol) +
           " x |reference| (per row)";
  return "rule: error <= 2 x naive error + floor; intermediate stages vs float32 naive (O/l " +
         number(intermediate.o_norm.atol) + ", m " + number(intermediate.m.atol) +
         (forms.p_rounded ? "; with P rounded, O/l " + number(intermediate_p_rounded.o_norm.atol) + ", l " +
                                number(intermediate_p_rounded.l.rtol) + " x l"
                          : std::string()) +
         folded_bars("; with exp2 folded", forms.folded, intermediate_folded) +
         folded_bars("; with exp2 folded and P rounded", forms.folded_p_rounded, intermediate_folded_p_rounded) +
         (final_from_f32
              ? "), final vs float32 naive, the input-dtype naive attention having overflowed (O " +
                    number(final_stage.o_norm.atol) + " + " + number(final_stage.o_norm.rtol) + " x |O|, LSE " +
                    number(final_stage.m.atol) + ")"
              : final_stage.o_norm.rtol > 0.0
                    ? "), final vs input-dtype naive, O as the exp2-folded stages' (O " +
                          number(final_stage.o_norm.atol) + " + " + number(final_stage.o_norm.rtol) + " x |O|, LSE " +
                          number(final_stage.m.atol) + ")"
                    : "), final vs input-dtype naive (O " + number(final_stage.o_norm.atol) + ", LSE " +
                          number(final_stage.m.atol) + ")");
}

}  // namespace ts
