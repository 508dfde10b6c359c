#include "app/model/capture/run_capture.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <future>
#include <memory>
#include <mutex>
#include <limits>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/model/capture/capture_check.h"
#include "app/model/capture/capture_inputs.h"
#include "app/model/capture/capture_metadata.h"
#include "app/model/capture/tool_version.h"
#include "app/model/generated_inputs.h"
#include "instrumentation/trace/trace_file.h"
#include "kernels/kernel_stages.h"
#include "instrumentation/trace/write_target.h"

namespace ts {
namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::map<std::string, std::string> capture_metadata(const CaptureSpec& spec,
                                                    const LaunchOutcome& outcome,
                                                    const LoadedInputs& inputs) {
  std::map<std::string, std::string> m = inputs.provenance;
  auto set = [&m](std::string_view key, std::string value) { m[std::string(key)] = std::move(value); };
  set(trace_meta::config, nlohmann::json(outcome.config).dump());
  set(trace_meta::tiling, nlohmann::json(outcome.tiling).dump());
  set(trace_meta::kernel, std::string(to_string(outcome.config.kernel)));
  set(trace_meta::fault, std::string(to_string(outcome.config.fault)));
  set(trace_meta::backend, std::string(to_string(outcome.backend)));
  set(trace_meta::device, outcome.device);
  set(trace_meta::trace_filter, trace_filter_to_json(spec.trace, kernel_stage_table(outcome.config.kernel)).dump());
  set(trace_meta::tool_version, tool_version());
  set(capture_meta::trace_capacity, std::to_string(spec.trace.capacity_events));
  set(capture_meta::elapsed_ms, exact_decimal(outcome.elapsed_ms));
  set(capture_meta::captured_at, utc_now());
  if (outcome.backend == Backend::cpu) {
    const int workers = spec.cpu_workers > 0
                            ? spec.cpu_workers
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    set(capture_meta::cpu_workers, std::to_string(workers));
    if (spec.perturb_seed) set(capture_meta::perturb_seed, std::to_string(*spec.perturb_seed));
  }
  return m;
}

// One phase's progress counted by several threads: each adds its work and reports the sum it
// got, so a smaller sum can arrive after a larger one another thread reported. Only sums at or
// above the last reported pass, so the counts a user sees never go back.
class OrderedProgress {
 public:
  OrderedProgress(const CaptureProgress& progress, uint64_t total) : progress_(progress), total_(total) {}
  uint64_t add(uint64_t n) { return done_.fetch_add(n) + n; }
  uint64_t done() const { return done_.load(); }
  void report(uint64_t done) {
    if (!progress_) return;
    const std::lock_guard lock(mutex_);
    if (done < reported_) return;
    reported_ = done;
    progress_(done, total_);
  }

 private:
  const CaptureProgress& progress_;
  const uint64_t total_;
  std::atomic<uint64_t> done_{0};
  std::mutex mutex_;
  uint64_t reported_ = 0;
};

}  // namespace

const char* to_string(CapturePhase phase) {
  switch (phase) {
    case CapturePhase::inputs: return "generating inputs";
    case CapturePhase::kernels: return "running kernels";
    case CapturePhase::hashing: return "hashing inputs";
    case CapturePhase::writing: return "writing trace";
  }
  return "?";
}

const char* progress_unit(CapturePhase phase) {
  switch (phase) {
    case CapturePhase::inputs: return "values";
    case CapturePhase::kernels: return "blocks";
    case CapturePhase::hashing:
    case CapturePhase::writing: return "bytes";
  }
  return "";
}

CaptureResult run_capture(const CaptureSpec& spec, const CaptureProgress& progress,
                          const std::atomic<bool>* cancel, const CapturePhaseChange& phase) {
  check_capture(spec);
  const auto enter = [&](CapturePhase p) {
    if (phase) phase(p);
  };
  enter(CapturePhase::inputs);
  GenerationProgress generated;
  std::unique_ptr<OrderedProgress> generation;
  if (progress && std::holds_alternative<RandomInputSpec>(spec.inputs)) {
    const AttentionConfig& c = spec.config;
    // Q has a row per query head, K and V one per kv head (GQA).
    const uint64_t total =
        static_cast<uint64_t>(c.batch * (c.heads * c.seq_q + 2 * c.kv_heads() * c.seq_kv) * c.head_dim);
    generation = std::make_unique<OrderedProgress>(progress, total);
    generated = [g = generation.get()](int64_t n) { g->report(g->add(static_cast<uint64_t>(n))); };
  }
  LoadedInputs inputs = load_capture_inputs(spec.config, spec.inputs, generated);
  if (cancel != nullptr && cancel->load()) throw LaunchError(LaunchFailure::cancelled, "the run was cancelled");

  // Random inputs are recorded as their recipe unless asked otherwise: the generator's spec and
  // the SHA-256 of what the trace would have stored, which its reader checks the re-made inputs
  // against. The hashes (about half a second of CPU per GiB) are taken while the kernels run:
  // both only read the inputs.
  const auto* random = std::get_if<RandomInputSpec>(&spec.inputs);
  const bool recipe = random != nullptr && !spec.store_inputs.value_or(false);
  const HeadInputs pairs = traced_head_pairs(spec.config, spec.trace.filter);
  std::atomic<bool> stop_hashing{false}, hashing_shown{false};
  const uint64_t hash_total = static_cast<uint64_t>(
      (static_cast<int64_t>(pairs.q_pairs.size()) * spec.config.seq_q +
       2 * static_cast<int64_t>(pairs.kv_pairs.size()) * spec.config.seq_kv) *
      spec.config.head_dim * static_cast<int64_t>(dtype_size(spec.config.dtype)));
  OrderedProgress hashed(progress, hash_total);
  std::future<std::array<std::string, 3>> hashes;
  if (recipe) {
    const AttentionSpec attention = attention_spec(spec.config);
    hashes = std::async(std::launch::async, [&, attention] {
      return input_hashes(attention, inputs.tensors.q, inputs.tensors.k, inputs.tensors.v, pairs.q_pairs,
                          pairs.kv_pairs, [&](size_t n) {
                            const uint64_t done = hashed.add(n);
                            if (hashing_shown.load()) hashed.report(done);
                          }, &stop_hashing);
    });
  }
  // On any way out, the hashing thread ends before the inputs it reads go.
  struct StopHashing {
    std::atomic<bool>& stop;
    std::future<std::array<std::string, 3>>& hashes;
    ~StopHashing() {
      if (hashes.valid()) {
        stop = true;
        hashes.wait();
      }
    }
  } stop_on_exit{stop_hashing, hashes};

  enter(CapturePhase::kernels);
  LaunchRequest request;
  request.config = spec.config;
  request.backend = spec.backend;
  request.trace = spec.trace;
  request.tile_events = spec.tile_events;
  request.cpu_workers = spec.cpu_workers;
  request.perturb_seed = spec.perturb_seed;
  request.progress = progress;
  request.cancel = cancel;

  CaptureResult result;
  result.outcome = launch_attention(request, inputs.tensors);
  auto events = std::make_shared<CapturedEvents>(std::move(result.outcome.events));
  result.outcome.events = CapturedEvents{};
  // With tracing off the launcher leaves the sizes unset; a trace file still needs them.
  if (events->stages.empty()) {
    events->stages = kernel_stage_table(result.outcome.config);
    events->max_rows = result.outcome.tiling.block_m;
    events->head_dim = static_cast<int32_t>(result.outcome.config.head_dim);
  }
  result.events = events;
  std::map<std::string, std::string> metadata = capture_metadata(spec, result.outcome, inputs);
  if (recipe) {
    enter(CapturePhase::hashing);
    hashing_shown = true;
    hashed.report(hashed.done());
    const std::array<std::string, 3> sha256 = hashes.get();
    for (auto& [key, value] : generated_inputs_metadata(*random, pairs, sha256)) metadata[key] = value;
  } else if (random == nullptr && !spec.store_inputs.value_or(true)) {
    metadata[std::string(capture_meta::inputs_stored)] = "none";
  }
  // The inputs are no longer needed whole: the traced heads' slices take them over.
  HeadInputs traced = traced_head_inputs(result.outcome.config, std::move(inputs.tensors), spec.trace.filter);
  result.view = run_view_from_capture(events, result.outcome, std::move(traced), std::move(metadata));
  return result;
}

bool stores_inputs(const CaptureResult& result) {
  const auto& m = result.view.metadata;
  return m.count(std::string(input_meta::generated)) == 0 && m.count(std::string(capture_meta::inputs_stored)) == 0;
}

namespace {

constexpr std::string_view kInputsRole = "an input file of this capture";

// The input files a capture's metadata names (trace_meta::inputs_files), for the check that
// the trace does not overwrite one of them.
std::vector<std::filesystem::path> input_files_of(const std::map<std::string, std::string>& metadata) {
  std::vector<std::filesystem::path> paths;
  const auto it = metadata.find(std::string(trace_meta::inputs_files));
  if (it == metadata.end()) return paths;
  const nlohmann::json list = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) return paths;
  for (const nlohmann::json& p : list)
    if (p.is_string()) paths.emplace_back(p.get<std::string>());
  return paths;
}

}  // namespace

void check_capture_output(const CaptureSpec& spec, const std::filesystem::path& path) {
  check_output_file(path, "run.trace.safetensors");
  if (const auto* files = std::get_if<InputFiles>(&spec.inputs)) check_not_an_input(path, files->paths, kInputsRole);
  check_replaces_only_a_trace(path);
}

void save_trace(const CaptureResult& result, const std::filesystem::path& path, const CaptureProgress& progress) {
  check_not_an_input(path, input_files_of(result.view.metadata), kInputsRole);
  TraceContents contents;
  contents.events = result.events.get();
  contents.attention = result.view.attention;
  contents.metadata = result.view.metadata;
  contents.inputs = stores_inputs(result) ? &result.view.inputs : nullptr;
  contents.progress = progress;
  contents.output = result.view.output ? &*result.view.output : nullptr;
  contents.output_lse = result.view.output_lse ? &*result.view.output_lse : nullptr;
  write_trace(path, contents);
}

RunView run_view_from_capture(std::shared_ptr<const CapturedEvents> events, const LaunchOutcome& outcome,
                              HeadInputs inputs, std::map<std::string, std::string> metadata, std::string label) {
  RunView v;
  v.attention = attention_spec(outcome.config);
  v.stages = events->stages;
  v.config = outcome.config;
  v.tiling = outcome.tiling;
  v.label = std::move(label);
  v.metadata = std::move(metadata);
  v.max_rows = events->max_rows;
  v.head_dim = events->head_dim;
  v.dropped_events = events->dropped;
  v.requested_events = events->requested;
  v.headers = events->headers;
  v.recorded_events = v.headers.size();
  v.recorded_stages = v.stages.size();
  v.missing = events->missing;
  v.m = events->m;
  v.l = events->l;
  v.o = events->o;
  v.inputs = std::move(inputs);
  v.output = outcome.o;
  v.output_lse = outcome.lse;
  v.payload_owner = std::move(events);
  add_output_events(v);
  return v;
}

}  // namespace ts
