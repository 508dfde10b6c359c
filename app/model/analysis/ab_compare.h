// A/B: two runs of the same problem compared with each other (GPU vs CPU, a fault vs the fixed
// kernel, 4 vs 8 splits, two schedules of the CPU runtime), beside each one's own analysis
// against the float64 reference.
//
// Where the runs' events are the same points of the kernel (one tiling of our kernels, or the
// same stage table and event identities), event by event; otherwise where they meet: the final
// output, row by row. Two runs agree where their difference
// is within the sum of their tolerances (each may be that far from the reference). The inputs
// must be identical (checked on the pairs both hold); when they are not, the comparison says so
// instead of comparing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/model/analysis/analysis_report.h"
#include "app/model/analysis/analyze_run.h"
#include "app/model/run_view.h"

namespace ts {

struct ABDifference {
  EventHeader where{};       // where A and B first disagree (A's event; the output when compared there)
  int64_t event_a = -1, event_b = -1;  // the events (at the output: those holding the first differing row)
  std::vector<int64_t> query_rows;  // rows that differ (query index within the pair)
  double max_o_norm = 0;     // max |O/l A - O/l B| over those rows
  double max_m = 0;          // max |m A - m B| (LSE at the final output)
};

struct ABReport {
  AnalysisReport a, b;               // each run against the reference
  bool inputs_identical = true;
  std::string inputs_note;           // which tensor of which pair differs first (or why unchecked)
  bool same_kernel = false;          // config identical (kernel, fault, splits, dtype, sizes)
  bool tilings_match = false;
  std::string compared_at;           // "every event" or "the final output"
  uint64_t compared = 0;             // events (tilings match) or output rows (they do not)
  uint64_t differing = 0;
  uint64_t only_in_one = 0;          // events one run has and the other lacks
  double max_o_norm_diff = 0, max_m_diff = 0;
  std::optional<ABDifference> first_difference;
  // A's events where A and B differ, in the kernel's order: the compared events that differ, or
  // (compared at the final output) A's output events holding rows that differ.
  std::vector<int64_t> differing_events_a;
  // divergence: A or B departs from the reference, or A != B; not_compared: the inputs differ.
  Verdict verdict = Verdict::clean;
  Symptom symptom;
  bool clean() const { return verdict == Verdict::clean; }
};

// Throws AnalysisError when the two runs are not the same problem (their attention descriptions
// differ) or cannot be analysed.
ABReport compare_runs(const RunView& a, const RunView& b, const AnalysisOptions& options = {});

}  // namespace ts
