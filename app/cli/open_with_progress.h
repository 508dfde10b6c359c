// diff and export open their traces and analyse them under one progress bar: re-making the
// inputs a trace records as their seed ("bytes"), then comparing its row blocks.
#pragma once

#include <cstdint>
#include <string>

#include "app/cli/progress_bar.h"
#include "app/model/analysis/analyze_run.h"
#include "app/model/trace_session.h"

namespace ts::cli {

class OpenWithProgress {
 public:
  // Routes the opening's and `analysis`'s progress to `bar`.
  OpenWithProgress(ProgressBar& bar, unsigned workers, AnalysisOptions& analysis) : bar_(bar) {
    const auto update = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
    open_.workers = workers;
    open_.progress = update;
    analysis.progress = update;
  }

  RunView operator()(const std::string& path) const {
    bar_.set_phase("re-making inputs", "bytes");
    RunView v = open_run(path, open_);
    bar_.set_phase("comparing", "row blocks");
    return v;
  }

 private:
  ProgressBar& bar_;
  OpenRunOptions open_;
};

}  // namespace ts::cli
