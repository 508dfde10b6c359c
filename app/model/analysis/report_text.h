// The analysis as a short readable report (`tilescope diff`): the run, the verdict, the symptom,
// the first divergence, a per-stage table, and the tolerance used.
#pragma once

#include <string>

#include "app/model/analysis/ab_compare.h"
#include "app/model/analysis/analysis_report.h"

namespace ts {

std::string report_text(const AnalysisReport& report);
std::string ab_report_text(const ABReport& report);

// The A/B verdict as the text report, the CLI and the viewer's header give it: "clean",
// "DIVERGENCE", or "NOT COMPARED: the runs' inputs differ" (a comparison not made is no divergence).
std::string ab_verdict_text(const ABReport& report);

// "splitk fp32 B=1 H=2 Sq=40 Skv=700 D=64 splits=4 causal": the config in one line.
std::string config_line(const AttentionConfig& config);
// What a report's run is: its config (our kernels) or its attention description.
std::string run_line(const AnalysisReport& report);

}  // namespace ts
