// `tilescope diff RUN [--against RUN_B] [--tol atol[,rtol]] [--json]`: where did the kernel leave
// the float64 reference? A short report (verdict, symptom, first divergence, per-stage table), or
// JSON; with --against, two runs of the same problem compared with each other as well.
// Exit 0 clean, 1 divergence found, 2 bad input (unreadable trace, runs that are not the same
// problem or not on the same inputs, a bad --tol, a trace with dropped events and no divergence
// in what it recorded), 130 cancelled by SIGINT, SIGTERM or SIGHUP (it says so on stderr).
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "app/cli/cancel_signal.h"
#include "app/cli/commands.h"
#include "app/cli/open_with_progress.h"
#include "app/cli/progress_bar.h"
#include "app/cli_common/capture_flags.h"
#include "app/cli_common/report_output.h"
#include "app/model/analysis/ab_compare.h"
#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/report_json.h"
#include "app/model/analysis/report_text.h"
#include "app/model/trace_session.h"

namespace ts::cli {
namespace {

struct DiffOptions {
  std::string run;
  std::string against;
  std::string tol;
  bool json = false;
  unsigned workers = 0;
  bool progress = false;
};

// Analysis errors are bad input (the runs cannot be compared as given), not internal errors.
[[noreturn]] void bad_input(const std::exception& e) {
  print_error("tilescope diff", e.what());
  throw CommandExit{kExitBadInput};
}

void run(const DiffOptions& o) {
  AnalysisOptions options;
  options.workers = o.workers;
  try {
    if (!o.tol.empty()) options.tolerance = parse_tolerance(o.tol);
  } catch (const ToleranceError& e) {
    bad_input(e);
  }
  // Ctrl-C, SIGTERM or SIGHUP: diff writes no file, so the program ends at once, saying so, with
  // exit 130 (as a cancelled capture or export).
  const CancelOnSignal cancel(OnSignal::exit_now);
  // A bar on a terminal (quiet otherwise, and for work under half a second): re-making the
  // inputs a trace records as their seed, then comparing its row blocks.
  ProgressBar bar("diff", o.progress || ProgressBar::stderr_is_terminal());
  const OpenWithProgress open_traced(bar, o.workers, options);
  const RunView a = open_traced(o.run);
  // A trace of tilescope's own kernels holds its capture's config; one a user's kernel recorded does not.
  const std::string more_events = a.config ? capacity_hint() : recording_capacity_hint();
  if (o.against.empty()) {
    AnalysisReport report;
    try {
      report = analyze_run(a, options);
    } catch (const AnalysisError& e) {
      bar.finish();
      bad_input(e);
    }
    bar.finish();
    if (o.json) print_json(report_json(report));
    else print_report(report_text(report));
    if (report.clean() && report.dropped_events > 0) {
      // Not a pass: the dropped events were never compared.
      print_error("tilescope diff",
                  o.run + " is incomplete: " + std::to_string(report.dropped_events) +
                      " events were dropped when it was captured (the trace buffer was full), so \"clean\" covers "
                      "only the recorded events; " + more_events);
      throw CommandExit{kExitBadInput};
    }
    // The report says so in words of no front end; here, with the options that fix it.
    if (report.dropped_events > 0)
      print_error("tilescope diff", "note: " + std::to_string(report.dropped_events) +
                                        " events were dropped when " + o.run + " was captured and were not checked; " +
                                        more_events);
    throw CommandExit{report.clean() ? kExitOk : kExitDivergence};
  }
  const RunView b = open_traced(o.against);
  ABReport report;
  try {
    report = compare_runs(a, b, options);
  } catch (const AnalysisError& e) {
    bar.finish();
    bad_input(e);
  }
  bar.finish();
  if (o.json) print_json(ab_report_json(report));
  else print_report(ab_report_text(report));
  if (!report.inputs_identical) {
    print_error("tilescope diff", ab_verdict_text(report) + ": " + report.inputs_note);
    throw CommandExit{kExitBadInput};
  }
  throw CommandExit{report.clean() ? kExitOk : kExitDivergence};
}

}  // namespace

void add_diff_command(CLI::App& app) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare a trace with the float64 reference (and with another run): verdict, first divergence, "
      "symptom, per-stage errors. Exit 0 clean, 1 divergence, 2 bad input");
  cmd->add_option("run", o->run, "A trace file (*.trace.safetensors)")->required();
  cmd->add_option("--against", o->against,
                  "A second trace of the same problem (other backend, fixed kernel, other split count): "
                  "compared event by event where the tilings match, else at the final output");
  cmd->add_option("--tol", o->tol,
                  "Explicit tolerance atol[,rtol] per row (|error| <= atol + rtol x |reference|) instead of "
                  "the correctness rule (2 x a naive same-precision implementation's error + a floor)");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  add_analysis_workers_option(cmd, &o->workers);
  cmd->add_flag("--progress", o->progress, "Show the progress bar even when stderr is not a terminal");
  cmd->callback([o] { run(*o); });
}

}  // namespace ts::cli
