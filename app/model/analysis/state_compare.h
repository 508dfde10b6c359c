// One event's payload against its float64 reference state, row by row: the error figures of
// the four compared quantities (m, l, O/l, raw O), independent of any tolerance, so that
// verdicts can be made afterwards with whatever tolerance applies (and remade when it changes).
//
// Conventions (tilescope/event.h) never fool the comparison. The trace's m channel is first
// brought to the reference's units (natural log, scaled scores: a base-2 value is divided by
// log2 e, an unscaled max multiplied by the scale). Then, when the trace and the reference store
// the state the same way (both unnormalised, or both normalised), m, l and raw O are compared as
// stored; when they differ, both sides are put in the normalised convention (LSE, 1, O/l) first.
// O/l is compared in every case; l is not compared for a normalised trace (its l channel is not
// read), nor m when the trace says it did not record it (kNoMax).
// Special values: equal infinities are no error (a row that sees no key has m = -inf, l = 0,
// O = 0 and the trace must hold exactly that); NaN, or an infinity on one side only, is an
// infinite error.
#pragma once

#include <cstdint>
#include <span>

#include "app/model/analysis/tolerance.h"
#include "instrumentation/trace/trace_event.h"
#include "kernels/reference.h"

namespace ts {

// What a trace holds for one event (the first `rows` rows are compared).
struct TraceState {
  int32_t convention = 0;  // ConventionBits
  double scale = 1.0;      // the attention's softmax scale (for kUnscaledMax)
  int32_t rows = 0;
  int32_t head_dim = 0;
  std::span<const float> m, l;  // [>= rows]
  std::span<const float> o;     // [>= rows * head_dim]
};

// The trace's m channel in the reference's units (see the top of this file).
double canonical_m(double stored, int32_t convention, double scale);

// Errors of one query row of one event. Magnitudes are kept as float (they are figures, not
// values); an error is +inf where a NaN or a one-sided infinity was met.
struct RowError {
  float m_err = 0, m_ref = 0;            // |m - m_ref| (LSE when normalised), |m_ref| (0 if -inf)
  float l_err = 0, l_ref = 0;            // |l - l_ref|, |l_ref|
  float o_norm_err = 0, o_norm_ref = 0;  // max over columns |O/l - ref|, max |ref O/l|
  float o_raw_err = 0, o_raw_ref = 0;    // max over columns |O - ref|, max |ref O|
  uint16_t nan = 0;      // NaN values of the row in the trace (m, l, O)
  uint16_t pos_inf = 0;  // +Inf values where the reference is finite
  uint16_t neg_inf = 0;  // -Inf values where the reference is finite
  bool no_key = false;   // the reference row sees no key in the event's kv range
};

// Which quantities fail, as bits.
enum QuantityBit : uint8_t { kFailM = 1, kFailL = 2, kFailONorm = 4, kFailORaw = 8, kFailNaN = 16 };

struct RowVerdict {
  float ratio = 0;     // worst error / bar over the quantities (+inf for NaN; <= 1 passes)
  uint8_t failed = 0;  // QuantityBit
  bool passes() const { return failed == 0; }
};

// The verdict of a row under a stage's bars. NaN never passes.
RowVerdict judge_row(const RowError& e, const StageBars& bars);
// One quantity's error / bar (0 for no error; +inf when the bar is 0 and the error is not).
float bar_ratio(double err, double bar);

// Whether both sides are compared normalised: when either is.
inline bool compared_normalized(int32_t trace_convention, bool reference_normalized) {
  return (trace_convention & kNormalized) != 0 || reference_normalized;
}

// Compares rows [0, got.rows) into out[0, got.rows). Throws std::invalid_argument when the
// shapes disagree (rows or head_dim of trace and reference).
void compare_state(const TraceState& got, const RefState& want, std::span<RowError> out);

// The per-row values of a state in a convention: the m and l channels (m already canonical),
// and whether stored O is divided by the stored l to give raw O (unnormalised stored,
// normalised compared) and O/l. Shared with the per-cell comparison.
struct RowValues {
  double m = 0, l = 0;
  double stored_l = 0;
  bool raw_div_l = false;
  bool norm_div_l = false;
};
RowValues row_values(double m, double l, bool stored_normalized, bool compare_normalized);

// |got - want| with the special values of attention states (see above).
double value_error(double got, double want);
// O times a scale, with the "no key seen" rule: O = 0 at l = 0 stays 0.
double scaled_o(double o, const RowValues& v, bool normalised);

}  // namespace ts
