// Why a cell of the analysis's error grids holds no value. A grid cell (query rows x a key
// position) no compared event covered is one of three different facts, and is marked with its
// AbsentCell code (float_grid.h) so that every picture and array says which:
//   - never written: a planned event of the kernel covers it, and the kernel never wrote it
//     (AnalysisReport::missing: a bug, often the first divergence itself);
//   - not traced: the capture's filters left its query rows out (metadata trace_filter:
//     "queries", or format 1's "q_tile" in query tiles);
//   - masked: anything else: no event was planned there because its rows see no key at that
//     position (a causal or window mask, rows past the batch's length).
// Never-written events whose key position no written event reached get a column of their own,
// so that they show. Part of the analysis; the viewer's navigator uses the same words.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "app/model/analysis/analysis_report.h"

namespace ts {

// The query rows [first, second) the capture traced, from the trace's metadata; [0, seq_q) when
// it says nothing readable.
std::pair<int64_t, int64_t> traced_query_rows(const std::map<std::string, std::string>& metadata,
                                              const std::optional<Tiling>& tiling, int64_t seq_q);

// Marks every uncovered cell of report.grids and report.overview with why it has no value (see
// above). Needs report.missing, metadata, tiling, attention and stage_table filled in.
void mark_absent_cells(AnalysisReport& report);

}  // namespace ts
