// `tilescope export RUN -o DIR [--against RUN_B] [--tol atol[,rtol]]`: the evidence of the
// analysis as files a person or a script opens without tilescope: diff heatmaps as PNG, the
// compared arrays as .npy, and summary.json (app/model/export/export_run.h). Every file is
// written atomically. Exit 0 clean, 1 divergence found (the files are written either way),
// 2 bad input (unreadable trace, unwritable folder, runs that cannot be compared).
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "app/cli/commands.h"
#include "app/model/analysis/ab_compare.h"
#include "app/model/analysis/analyze_run.h"
#include "app/model/export/export_run.h"
#include "app/model/trace_session.h"

namespace ts::cli {
namespace {

struct ExportCliOptions {
  std::string run;
  std::string against;
  std::string out;
  std::string tol;
  unsigned workers = 0;
};

[[noreturn]] void bad_input(const std::exception& e) {
  std::cerr << "tilescope export: " << e.what() << "\n";
  throw CommandExit{kExitBadInput};
}

void list(const ExportResult& r, const std::string& dir) {
  std::cout << "wrote " << r.files.size() << " files to " << dir << ":\n";
  for (const ExportedFile& f : r.files) std::cout << "  " << f.path.string() << "  " << f.what << "\n";
}

void run(const ExportCliOptions& o) {
  AnalysisOptions options;
  options.workers = o.workers;
  try {
    if (!o.tol.empty()) options.tolerance = parse_tolerance(o.tol);
  } catch (const ToleranceError& e) {
    bad_input(e);
  }
  const RunView a = open_run(o.run);
  bool clean = true;
  try {
    if (o.against.empty()) {
      const AnalysisReport report = analyze_run(a, options);
      list(export_run(a, report, o.out), o.out);
      std::cout << "verdict: " << to_string(report.verdict) << ": " << report.symptom.line << "\n";
      clean = report.clean();
      if (clean && report.dropped_events > 0) {
        std::cerr << "tilescope export: " << o.run << " is incomplete (" << report.dropped_events
                  << " events dropped: the trace buffer was full); the files cover only the recorded events\n";
        throw CommandExit{kExitBadInput};
      }
    } else {
      const RunView b = open_run(o.against);
      const ABReport report = compare_runs(a, b, options);
      list(export_ab(a, b, report, o.out), o.out);
      std::cout << "verdict: " << to_string(report.verdict) << ": " << report.symptom.line << "\n";
      if (!report.inputs_identical) {
        std::cerr << "tilescope export: " << report.inputs_note << "\n";
        throw CommandExit{kExitBadInput};
      }
      clean = report.clean();
    }
  } catch (const AnalysisError& e) {
    bad_input(e);
  }
  std::cout << std::flush;
  throw CommandExit{clean ? kExitOk : kExitDivergence};
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write the analysis of a trace to a folder: diff heatmaps (PNG), the compared arrays (.npy), "
      "summary.json. Exit 0 clean, 1 divergence, 2 bad input");
  cmd->add_option("run", o->run, "A trace file (*.trace.safetensors)")->required();
  cmd->add_option("-o,--output", o->out, "The folder to write (created if missing)")->required();
  cmd->add_option("--against", o->against, "A second trace of the same problem (A/B: dir/a, dir/b, summary.json)");
  cmd->add_option("--tol", o->tol, "Explicit tolerance atol[,rtol] instead of the correctness rule");
  cmd->add_option("--workers", o->workers, "Threads for the reference (default: all cores)");
  cmd->callback([o] { run(*o); });
}

}  // namespace ts::cli
