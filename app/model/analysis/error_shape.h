// What the errors of a stage look like, measured on the rows that go wrong by themselves
// (local_replay.h) against what their step should have made — facts true whether or not a
// mechanism is named (Finding):
//   quantities       which of m (or LSE), l and O are wrong;
//   equivalent_state m, l and O are off together while LSE and O / l are right (the same
//                    softmax held with another running max);
//   constant_value   a quantity holds one value in every wrong row (m = 0: a max never updated);
//   constant_ratio   a quantity is one constant times the reference in every wrong row, and which
//                    constant that is (the softmax scale, 1/scale, log2 e, ln 2, 2, 1/2, the
//                    split count and its inverse);
//   constant_offset  a quantity is the reference plus one constant;
//   row_factor       O is a factor times the reference in each row, and the factor is the row's
//                    l, 1/l, or varies (its range);
//   row_offset       m is the reference plus +-log l in each row;
// (ratios, offsets and factors are to the reference, over every row of the stage over tolerance;
// the rest on the rows that go wrong by themselves, against what their step should have made)
//   rows_max_rose    the wrong rows are among the rows whose running max rose at the step (a
//                    rescale by exp(m_old - m_new) is where they differ from the right ones);
//   diagonal_rows    the wrong rows are among the rows whose causal diagonal falls in the step's
//                    keys (their visible keys change inside the step);
//   end_of_keys      every wrong event reaches the end of the keys (the tail);
//   step_positions   which steps of their sequences the wrong events are (the first, the last,
//                    from the second on...);
//   non_finite       which rows are NaN, +Inf or -Inf, and whether a row holds the no-key state
//                    (m = -inf, l = 0) where the reference sees keys, with how many and which.
// Plus `carried`: the stages wrong only through what they read from an earlier one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/local_replay.h"

namespace ts {

// Findings on `stage`'s rows that go wrong by themselves (empty when it has none).
std::vector<Finding> measure_error_shape(const LocalReplay& replay, int32_t stage);

// Rows and events of a stage that go wrong by themselves.
struct OriginCounts {
  uint64_t events = 0, rows = 0;
  uint64_t failing_events = 0;  // events over tolerance (carried errors included)
};
OriginCounts origin_counts(const LocalReplay& replay, int32_t stage);

// Those rows in words: "the one row of fa1.step that goes wrong by itself" when there is one, else
// "<count> rows of fa1.step that go wrong by themselves" (`count`: "all 20", "the 20"...); without
// "of ..." when `stage` is empty.
std::string wrong_rows_text(uint64_t rows, const std::string& count, const std::string& stage);

// The `checked` rows of the `total` that go wrong by themselves which a pass looked at: all of them
// ("all 20 rows of fa1.step that go wrong by themselves", "the 20 ..." unless `every`) or, when the
// pass took evenly spaced events only (`sampled`), "every one of the 2048 checked (evenly spaced
// events) of the 65536 rows of splitk.reduce that go wrong by themselves" ("the 2048 checked ..."
// unless `every`). The mechanisms' evidence and the measurements say it in these words.
std::string checked_wrong_rows_text(uint64_t checked, uint64_t total, bool sampled, bool every, const std::string& stage);

}  // namespace ts
