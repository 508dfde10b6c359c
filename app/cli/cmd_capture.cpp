// `tilescope capture`: run a kernel (with a fault variant) on a backend with tracing and write
// a self-contained trace file; a progress bar on stderr, Ctrl-C cancels cleanly, a summary.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/cli/cancel_signal.h"
#include "app/cli/run_text.h"
#include "app/cli/commands.h"
#include "app/cli/progress_bar.h"
#include "app/cli_common/capture_flags.h"
#include "app/cli_common/report_output.h"
#include "app/model/capture/capture_check.h"
#include "app/model/capture/capture_error.h"
#include "app/model/capture/capture_metadata.h"
#include "app/model/capture/run_capture.h"
#include "base/kernel_list.h"
#include "base/list_text.h"
#include "instrumentation/trace/atomic_file.h"
#include "kernels/kernel_stages.h"
#include "kernels/launch_plan.h"
#include "kernels/launch_error.h"

namespace ts::cli {
namespace {

struct CaptureOptions {
  std::string kernel = "fa1", fault = "none", backend = "auto", dtype = "fp32";
  AttentionConfig config;
  std::optional<uint64_t> seed;
  std::vector<std::string> input_files;
  std::string distribution = "normal", preset = "none";
  double input_scale = 1.0;
  std::string trace_batch, trace_head, trace_queries;
  std::optional<std::string> stages;  // given empty: an error, not every stage
  std::string tile_events = "auto";
  std::string window;  // "L,R"; empty: no window
  int64_t capacity = TraceRequest{}.capacity_events;
  bool no_trace = false;
  bool store_inputs = false, no_store_inputs = false;
  int workers = 0;
  std::optional<uint64_t> perturb_seed;
  bool progress = false;
  std::string output;
};

std::vector<std::string> fault_names() {
  std::vector<std::string> names;
  for (const FaultInfo& f : all_faults()) names.emplace_back(f.name);
  return names;
}

// The choices of --kernel, --dtype and --head-dim and their help, from base/kernel_list.h (the
// kernels' one list of instantiations).
std::vector<std::string> names_of(const std::vector<KernelKind>& kernels) {
  std::vector<std::string> names;
  for (KernelKind k : kernels) names.emplace_back(to_string(k));
  return names;
}
std::vector<std::string> names_of(const std::vector<DType>& dtypes) {
  std::vector<std::string> names;
  for (DType d : dtypes) names.emplace_back(to_string(d));
  return names;
}
std::vector<std::string> names_of(const std::vector<int>& head_dims) {
  std::vector<std::string> names;
  for (int d : head_dims) names.push_back(std::to_string(d));
  return names;
}

std::string kernel_help() {
  std::vector<std::string> labels;
  for (KernelKind k : built_kernels()) labels.push_back(kernel_choice_label(k));
  return "Kernel: " + spoken_list(labels, "or");
}

// "Head dim: 32, 64, 128 or 256 (fa2: 64 or 128)", "Input/output dtype: fp32, fp16 or bf16 (fa2:
// fp16 or bf16)": the values some kernel is built for (`any`), then those of each kernel built for
// fewer (`of_kernel`).
template <typename T, typename OfKernel>
std::string built_choices_help(const std::string& what, const std::vector<T>& any, OfKernel of_kernel) {
  std::string out = what + ": " + spoken_list(names_of(any), "or");
  for (KernelKind k : built_kernels()) {
    const std::vector<T> own = of_kernel(k);
    if (own.size() != any.size()) out += " (" + std::string(to_string(k)) + ": " + spoken_list(names_of(own), "or") + ")";
  }
  return out;
}

// "Trace only these stages, comma-separated; fa1: fa1.step, final; ...": each kernel's stage table.
std::string stages_help() {
  std::string out = "Trace only these stages, comma-separated";
  for (KernelKind k : built_kernels()) {
    std::string names;
    for (const StageInfo& s : kernel_stage_table(k)) names += (names.empty() ? "" : ", ") + s.name;
    out += "; " + std::string(to_string(k)) + ": " + names;
  }
  return out;
}

CaptureSpec spec_from(const CaptureOptions& o) {
  CaptureSpec spec;
  spec.config = o.config;
  spec.config.kernel = *kernel_from_name(o.kernel);  // IsMember checked the names
  spec.config.fault = *fault_from_name(o.fault);
  spec.config.dtype = *dtype_from_name(o.dtype);
  if (!o.window.empty()) std::tie(spec.config.window_left, spec.config.window_right) = *window_from_text(o.window);
  spec.backend = *backend_from_name(o.backend);
  if (!o.input_files.empty()) {
    InputFiles files;
    for (const auto& f : o.input_files) files.paths.emplace_back(f);
    spec.inputs = files;
  } else {
    RandomInputSpec r;
    r.seed = o.seed.value_or(0);
    r.distribution = *distribution_from_name(o.distribution);
    r.preset = *preset_from_name(o.preset);
    r.scale = o.input_scale;
    spec.inputs = r;
  }
  if (o.store_inputs || o.no_store_inputs) spec.store_inputs = o.store_inputs;
  spec.trace.enabled = !o.no_trace;
  spec.trace.capacity_events = o.capacity;
  TraceFilter& f = spec.trace.filter;
  std::tie(f.batch_begin, f.batch_end) = parse_index_range(o.trace_batch, CaptureField::trace_batch);
  std::tie(f.head_begin, f.head_end) = parse_index_range(o.trace_head, CaptureField::trace_heads);
  std::tie(f.query_begin, f.query_end) = parse_index_range(o.trace_queries, CaptureField::trace_queries);
  if (o.stages) {
    try {
      f.stage_mask = stage_mask_from_names(*o.stages, kernel_stage_table(spec.config.kernel));
    } catch (const CaptureError& e) {
      throw CaptureError(CaptureField::trace_stages, e.what());
    }
  }
  if (o.tile_events != "auto") spec.tile_events = o.tile_events == "on";
  spec.cpu_workers = o.workers;
  spec.perturb_seed = o.perturb_seed;
  return spec;
}

void run(const CaptureOptions& o) {
  const CaptureSpec spec = spec_from(o);
  const std::filesystem::path output(o.output);
  check_capture_output(spec, output);

  const auto start = std::chrono::steady_clock::now();
  CancelOnSignal cancel;
  ProgressBar bar("capturing", o.progress || ProgressBar::stderr_is_terminal());
  const auto update = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
  const auto phase = [&bar](CapturePhase p) { bar.set_phase(to_string(p), progress_unit(p)); };
  CaptureResult result = run_capture(spec, update, cancel.flag(), phase);
  // A request that came in after the last block: still nothing is written.
  if (cancel.requested()) throw LaunchError(LaunchFailure::cancelled, "the run was cancelled");
  {
    // One during the write: the temporary file goes, whatever was at the path stays.
    const CancelWrites cancel_writes(cancel.flag());
    phase(CapturePhase::writing);
    save_trace(result, output, update);
  }
  bar.finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_report(capture_summary(result, output, seconds));
  if (result.events->dropped > 0) {
    // The file is kept (its first events are real and open anywhere), but the capture did not
    // record what was asked: a script must not take it for a complete trace.
    print_error("tilescope capture", "the trace buffer was full: " + std::to_string(result.events->dropped) +
                                         " events were dropped; " + output.string() +
                                         " holds only the first ones; " + capacity_hint() + ".");
    throw CommandExit{kExitBadInput};
  }
}

}  // namespace

void add_capture_command(CLI::App& app) {
  auto o = std::make_shared<CaptureOptions>();
  CLI::App* cmd = app.add_subcommand(
      "capture",
      "Run an attention kernel (optionally with a fault) with tracing, and write a trace file");
  cmd->footer(
      "Example: tilescope capture --kernel splitk --fault double_count_l --backend cpu \\\n"
      "           --heads 2 --seq-q 64 --seq-kv 1024 --splits 8 -o run.trace.safetensors\n"
      "Ranges A:B are half-open (A up to, not including, B); A: and :B leave an end open.\n"
      "What the trace stores: the attention, the config, every recorded event (the rows it holds),\n"
      "missing events, the output and its LSE; and the inputs of the traced heads (--trace-batch,\n"
      "--trace-head; K and V once per kv head): their values for --inputs files or --store-inputs,\n"
      "else the random inputs' seed and spec with the SHA-256 of each tensor, re-made bit for bit\n"
      "when the trace is opened (docs/trace-format.md says how, also in numpy).");
  // An option given twice: the last one wins (scripts append overrides).
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  cmd->add_option("--kernel", o->kernel, kernel_help())
      ->check(CLI::IsMember(names_of(built_kernels())))
      ->capture_default_str();
  cmd->add_option("--fault", o->fault, "Fault variant (see `tilescope faults`); none = correct")
      ->check(CLI::IsMember(fault_names()))
      ->capture_default_str();
  cmd->add_option("--backend", o->backend, "cpu (SIMT runtime), gpu, or auto (gpu when present)")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}))
      ->capture_default_str();
  cmd->add_option("--batch", o->config.batch, "Batch size")->capture_default_str();
  cmd->add_option("--heads", o->config.heads, "Query heads")->capture_default_str();
  cmd->add_option("--heads-kv", o->config.heads_kv,
                  "Key/value heads (GQA/MQA: 1 = MQA); must divide --heads; 0 = as many as --heads")
      ->capture_default_str();
  cmd->add_option("--seq-q", o->config.seq_q, "Query length")->capture_default_str();
  cmd->add_option("--seq-kv", o->config.seq_kv, "Key/value length")->capture_default_str();
  cmd->add_option("--head-dim", o->config.head_dim,
                  built_choices_help("Head dim", built_head_dims(), [](KernelKind k) { return built_head_dims(k); }))
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype,
                  built_choices_help("Input/output dtype", built_dtypes(), [](KernelKind k) { return built_dtypes(k); }))
      ->check(CLI::IsMember(names_of(built_dtypes())))
      ->capture_default_str();
  cmd->add_flag("--causal", o->config.causal, "Causal mask (aligned bottom-right)");
  cmd->add_option("--window", o->window,
                  "Sliding window L,R: query i sees keys j with d - L <= j <= d + R, d = i + seq_kv - seq_q "
                  "(bottom-right diagonal); -1 = unbounded on that side (e.g. 256,0 with --causal)")
      ->check([](const std::string& text) {
        return window_from_text(text) ? std::string() : "--window takes L,R: two integers >= -1 (-1 = unbounded)";
      });
  cmd->add_option("--softcap", o->config.softcap,
                  "Logit softcap: scaled scores s become softcap * tanh(s / softcap); 0 = off")
      ->capture_default_str();
  cmd->add_option("--splits", o->config.num_splits,
                  "Split-K splits; 0 = the heuristic's choice for the backend")
      ->capture_default_str();
  cmd->add_option("--scale", o->config.softmax_scale, "Softmax scale; 0 = 1/sqrt(head_dim)")
      ->capture_default_str();

  CLI::Option* seed = cmd->add_option("--seed", o->seed, "Seed of the random inputs (default 0)");
  CLI::Option* inputs =
      cmd->add_option("--inputs", o->input_files,
                      "Q K V from files: three .npy/.safetensors in q k v order, or one "
                      ".safetensors holding q, k and v; q [batch, heads, seq_q, head_dim], k and v "
                      "[batch, heads_kv, seq_kv, head_dim], in --dtype")
          ->expected(1, 3)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  seed->excludes(inputs);
  CLI::Option* dist = cmd->add_option("--distribution", o->distribution, "Random inputs: normal or uniform")
                          ->check(CLI::IsMember({"normal", "uniform"}))
                          ->capture_default_str();
  CLI::Option* iscale = cmd->add_option("--input-scale", o->input_scale, "Random inputs' scale")
                            ->capture_default_str();
  CLI::Option* preset =
      cmd->add_option("--preset", o->preset,
                      "Random inputs' preset: none, large_logits, all_equal_scores")
          ->check(CLI::IsMember({"none", "large_logits", "all_equal_scores"}))
          ->capture_default_str();
  inputs->excludes(dist)->excludes(iscale)->excludes(preset);

  cmd->add_option("--trace-batch", o->trace_batch, "Trace only these batch entries, A:B");
  cmd->add_option("--trace-head", o->trace_head, "Trace only these heads, A:B");
  cmd->add_option("--trace-queries", o->trace_queries,
                  "Trace only events holding these query rows, A:B");
  cmd->add_option("--stages", o->stages, stages_help());
  cmd->add_option("--tile-events", o->tile_events,
                  "Split-K (splitk, splitk2): record each split's state after every kv tile (splitk.tile, splitk2.tile): "
                  "on, off, or auto "
                  "(on when the trace filters keep at most " + std::to_string(kTileEventsByDefaultLimit) +
                      " tile states of the run)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_option("--capacity", o->capacity,
                  "Trace buffer capacity in events (>= 1); events beyond it are counted as dropped")
      ->check([](const std::string& text) {
        // 0 would record nothing and call every event dropped: --no-trace says that.
        long long n = 0;
        return CLI::detail::lexical_cast(text, n) && n >= 1
                   ? std::string()
                   : "--capacity takes a number of events >= 1 (got " + text + "); --no-trace records none";
      })
      ->capture_default_str();
  cmd->add_flag("--no-trace", o->no_trace,
                "Record no events (the file holds the inputs and the output only)");
  CLI::Option* store = cmd->add_flag(
      "--store-inputs", o->store_inputs,
      "Store the traced heads' Q, K, V in the trace. Default: yes for --inputs files; for random inputs no: the "
      "trace records their seed, spec and SHA-256, and they are re-made (and checked) when it is opened");
  cmd->add_flag("--no-store-inputs", o->no_store_inputs,
                "Store no input values: random inputs as their seed and SHA-256 (the default), --inputs files "
                "as their names and SHA-256 only (the trace then cannot be analysed: diff, export and the viewer "
                "need the values, and do not read the files back)")
      ->excludes(store);
  cmd->add_option("--workers", o->workers, "CPU backend: worker threads; 0 = all cores")
      ->capture_default_str();
  cmd->add_option("--perturb-seed", o->perturb_seed,
                  "CPU backend: the perturbation seed; threads resume in a seeded random order "
                  "between barriers, so that races show");
  cmd->add_flag("--progress", o->progress, "Show the progress bar even when stderr is not a terminal");
  cmd->add_option("-o,--output", o->output, "The trace file to write (*.trace.safetensors)")
      ->required();
  cmd->callback([o] { run(*o); });
}

}  // namespace ts::cli
