// diff and export open their traces and analyse them under one progress bar: re-making the
// inputs a trace records as their seed ("bytes"), then comparing its row blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "app/cli/progress_bar.h"
#include "app/cli_common/integer_options.h"
#include "app/model/analysis/parallel_for.h"
#include "app/model/analysis/analyze_run.h"
#include "app/model/trace_session.h"

namespace ts::cli {

// diff's and export's --workers: 0 (all cores) up to kMaxAnalysisWorkers.
inline void add_analysis_workers_option(CLI::App* cmd, unsigned* workers) {
  cmd->add_option("--workers", *workers,
                  "Threads for the reference: 0 = all cores (the default), at most " + std::to_string(kMaxAnalysisWorkers))
      ->check([](const std::string& text) {
        const std::optional<std::string> n = canonical_unsigned(text);
        if (!n) return std::string();  // not a whole number: the integer check says so
        if (n->size() <= 4 && std::stoul(*n) <= kMaxAnalysisWorkers) return std::string();
        return "--workers must be between 0 (all cores) and " + std::to_string(kMaxAnalysisWorkers) + " (got " + text +
               ")";
      });
}

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
