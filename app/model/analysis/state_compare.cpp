#include "app/model/analysis/state_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace ts {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

float as_figure(double x) { return static_cast<float>(std::min(x, kInf)); }

// Counts a trace value that is NaN, or infinite where the reference value is finite.
void count_special(float got, double want, RowError& e) {
  if (std::isnan(got)) {
    ++e.nan;
  } else if (std::isinf(got) && std::isfinite(want)) {
    if (got > 0) ++e.pos_inf;
    else ++e.neg_inf;
  }
}

}  // namespace

float bar_ratio(double err, double bar) {
  if (err == 0.0) return 0.0f;
  if (!(bar > 0.0)) return std::numeric_limits<float>::infinity();
  return as_figure(err / bar);
}

double value_error(double got, double want) {
  if (std::isnan(got) || std::isnan(want)) return kInf;
  if (got == want) return 0.0;  // also -inf == -inf
  return std::fabs(got - want);
}

double canonical_m(double stored, int32_t convention, double scale) {
  double x = stored;
  if (convention & kLogBase2) x /= std::numbers::log2e;
  if ((convention & kUnscaledMax) && !(convention & kNormalized)) x *= scale;
  return x;
}

RowValues row_values(double m, double l, bool stored_normalized, bool compare_normalized) {
  RowValues v;
  v.stored_l = l;
  if (stored_normalized) {
    v.m = m;  // LSE
    v.l = 1;
    v.raw_div_l = v.norm_div_l = false;
    return v;
  }
  v.norm_div_l = true;
  if (!compare_normalized) {
    v.m = m;
    v.l = l;
    v.raw_div_l = false;
  } else {
    // The unnormalised state in the normalised convention: LSE = m + log l (-inf for l = 0).
    v.m = l == 0.0 ? -kInf : m + std::log(l);
    v.l = 1.0;
    v.raw_div_l = true;
  }
  return v;
}

double scaled_o(double o, const RowValues& v, bool normalised) {
  const bool divide = normalised ? v.norm_div_l : v.raw_div_l;
  if (!divide) return o;
  if (v.stored_l == 0.0 && o == 0.0) return 0.0;  // no key seen: O = 0 is O/l = 0
  return o / v.stored_l;
}

RowVerdict judge_row(const RowError& e, const StageBars& bars) {
  RowVerdict v;
  auto check = [&](float err, float ref_scale, const QuantityBar& bar, uint8_t bit) {
    const float r = bar_ratio(err, bar.bar(ref_scale, e.l_ref));
    v.ratio = std::max(v.ratio, r);
    if (r > 1.0f) v.failed |= bit;
  };
  check(e.m_err, e.m_ref, bars.m, kFailM);
  check(e.l_err, e.l_ref, bars.l, kFailL);
  check(e.o_norm_err, e.o_norm_ref, bars.o_norm, kFailONorm);
  check(e.o_raw_err, e.o_raw_ref, bars.o_raw, kFailORaw);
  if (e.nan > 0) {
    v.failed |= kFailNaN;
    v.ratio = std::numeric_limits<float>::infinity();
  }
  return v;
}

void compare_state(const TraceState& got, const RefState& want, std::span<RowError> out) {
  if (got.rows != want.rows || got.head_dim != want.head_dim)
    throw std::invalid_argument("event of " + std::to_string(got.rows) + " rows x " +
                                std::to_string(got.head_dim) + " columns compared with a reference of " +
                                std::to_string(want.rows) + " x " + std::to_string(want.head_dim));
  if (out.size() < static_cast<size_t>(got.rows) || got.m.size() < out.size() || got.l.size() < out.size() ||
      got.o.size() < static_cast<size_t>(got.rows) * static_cast<size_t>(got.head_dim))
    throw std::invalid_argument("event payload shorter than its rows");
  const bool got_normalized = (got.convention & kNormalized) != 0;
  const bool has_m = (got.convention & kNoMax) == 0;
  const bool cmp = compared_normalized(got.convention, want.normalized);
  const size_t d = static_cast<size_t>(got.head_dim);
  for (int32_t r = 0; r < got.rows; ++r) {
    RowError e;
    const double got_m = has_m ? canonical_m(got.m[r], got.convention, got.scale) : want.m[r];
    // A normalised trace's l channel is not read: its l is the reference's.
    const double got_l = got_normalized ? want.l[r] : got.l[r];
    const RowValues g = row_values(got_m, got_l, got_normalized, cmp);
    const RowValues w = row_values(want.m[r], want.l[r], want.normalized, cmp);
    e.no_key = want.normalized ? want.m[r] == -kInf : want.l[r] == 0.0;
    if (has_m) count_special(got.m[r], want.m[r], e);
    if (!got_normalized) count_special(got.l[r], want.l[r], e);
    e.m_err = has_m ? as_figure(value_error(g.m, w.m)) : 0.0f;
    e.m_ref = std::isfinite(w.m) ? as_figure(std::fabs(w.m)) : 0.0f;
    e.l_err = as_figure(value_error(g.l, w.l));
    e.l_ref = as_figure(std::fabs(w.l));
    const float* go = got.o.data() + r * d;
    const double* wo = want.o.data() + r * d;
    double norm_err = 0, norm_ref = 0, raw_err = 0, raw_ref = 0;
    for (size_t c = 0; c < d; ++c) {
      count_special(go[c], wo[c], e);
      const double gn = scaled_o(go[c], g, true), wn = scaled_o(wo[c], w, true);
      const double gr = scaled_o(go[c], g, false), wr = scaled_o(wo[c], w, false);
      norm_err = std::max(norm_err, value_error(gn, wn));
      raw_err = std::max(raw_err, value_error(gr, wr));
      norm_ref = std::max(norm_ref, std::fabs(wn));
      raw_ref = std::max(raw_ref, std::fabs(wr));
    }
    e.o_norm_err = as_figure(norm_err);
    e.o_norm_ref = as_figure(norm_ref);
    e.o_raw_err = as_figure(raw_err);
    e.o_raw_ref = as_figure(raw_ref);
    out[r] = e;
  }
}

}  // namespace ts
