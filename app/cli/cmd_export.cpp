// `tilescope export RUN -o DIR [--against RUN_B] [--tol atol[,rtol]]`: the evidence of the
// analysis as files a person or a script opens without tilescope: diff heatmaps as PNG, the
// compared arrays as .npy, and summary.json (app/model/export/export_run.h). Every file is
// written atomically, and the folder appears whole or not at all (staged_folder.h: an existing
// folder is replaced only when it is an earlier export). Exit 0 clean, 1 divergence found (the
// files are written either way), 2 bad input (unreadable trace, a folder that may not be
// written, runs that cannot be compared), 130 cancelled (nothing is left behind).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/cli/cancel_signal.h"
#include "app/cli/commands.h"
#include "app/cli/open_with_progress.h"
#include "app/cli/progress_bar.h"
#include "app/cli_common/report_output.h"
#include "app/model/analysis/ab_compare.h"
#include "app/model/analysis/analyze_run.h"
#include "app/model/export/export_run.h"
#include "app/model/export/staged_folder.h"
#include "app/model/trace_session.h"
#include "base/list_text.h"
#include "instrumentation/trace/atomic_file.h"

namespace ts::cli {
namespace {

struct ExportCliOptions {
  std::string run;
  std::string against;
  std::string out;
  std::string tol;
  unsigned workers = 0;
  bool progress = false;
};

[[noreturn]] void bad_input(const std::exception& e) {
  print_error("tilescope export", e.what());
  throw CommandExit{kExitBadInput};
}

void list(const ExportResult& r, const std::string& dir) {
  std::string text = "wrote " + std::to_string(r.files.size()) + " files to " + dir + ":\n";
  for (const ExportedFile& f : r.files) text += "  " + f.path.string() + "  " + f.what + "\n";
  if (r.pairs.size() < r.pairs_total) {
    std::vector<std::string> names;
    for (const auto& [b, h] : r.pairs) names.push_back("batch " + std::to_string(b) + " head " + std::to_string(h));
    text += "files of " + std::to_string(r.pairs.size()) + " of the " + std::to_string(r.pairs_total) +
            " (batch, head) pairs (the first divergence's first, then in order): " + spoken_list(names, "and") +
            "; the others are in the report (summary.json) only\n";
  }
  print_report(text);
}

void run(const ExportCliOptions& o) {
  AnalysisOptions options;
  options.workers = o.workers;
  try {
    if (!o.tol.empty()) options.tolerance = parse_tolerance(o.tol);
  } catch (const ToleranceError& e) {
    bad_input(e);
  }
  // Ctrl-C, SIGTERM or SIGHUP: while the trace is read and analysed (nothing written yet) the
  // program ends at once; once it writes, the export stops and the staging folder and the
  // parent folders it created go. Exit 130 either way.
  CancelOnSignal cancel(OnSignal::exit_now);
  const CancelWrites cancel_writes(cancel.flag());
  // A bar on a terminal (quiet otherwise, and for work under half a second), as diff's.
  ProgressBar bar("export", o.progress || ProgressBar::stderr_is_terminal());
  const OpenWithProgress open_traced(bar, o.workers, options);
  const RunView a = open_traced(o.run);
  bool clean = true;
  try {
    if (o.against.empty()) {
      const AnalysisReport report = analyze_run(a, options);
      bar.finish();
      cancel.cancel_from_now_on();
      list(export_run(a, report, o.out), o.out);
      print_report("verdict: " + std::string(to_string(report.verdict)) + ": " + report.symptom.line + "\n");
      clean = report.clean();
      if (clean && report.dropped_events > 0) {
        print_error("tilescope export", o.run + " is incomplete (" + std::to_string(report.dropped_events) +
                                            " events dropped: the trace buffer was full); the files cover only the "
                                            "recorded events");
        throw CommandExit{kExitBadInput};
      }
    } else {
      const RunView b = open_traced(o.against);
      const ABReport report = compare_runs(a, b, options);
      bar.finish();
      cancel.cancel_from_now_on();
      list(export_ab(a, b, report, o.out), o.out);
      print_report("verdict: " + std::string(to_string(report.verdict)) + ": " + report.symptom.line + "\n");
      if (!report.inputs_identical) {
        print_error("tilescope export", report.inputs_note);
        throw CommandExit{kExitBadInput};
      }
      clean = report.clean();
    }
  } catch (const AnalysisError& e) {
    bar.finish();
    bad_input(e);
  }
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
  cmd->add_option("-o,--output", o->out,
                  "The folder to write: created if missing (with its parents). An existing folder must be "
                  "empty or an earlier export, which is replaced whole; an earlier export is one that "
                  "holds its list of files (" + std::string(kExportListName) + ") and nothing else. "
                  "Any other folder is refused (exit 2) and left as it was")
      ->required();
  cmd->add_option("--against", o->against, "A second trace of the same problem (A/B: dir/a, dir/b, summary.json)");
  cmd->add_option("--tol", o->tol, "Explicit tolerance atol[,rtol] instead of the correctness rule");
  add_analysis_workers_option(cmd, &o->workers);
  cmd->add_flag("--progress", o->progress, "Show the progress bar even when stderr is not a terminal");
  cmd->callback([o] { run(*o); });
}

}  // namespace ts::cli
