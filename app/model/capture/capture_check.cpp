#include "app/model/capture/capture_check.h"

#include <charconv>
#include <filesystem>
#include <system_error>
#include <variant>

#include "app/model/capture/capture_error.h"
#include "app/model/capture/capture_metadata.h"
#include "base/config_error.h"
#include "kernels/kernel_stages.h"
#include "kernels/launch_plan.h"

namespace ts {
namespace {

std::string_view trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string_view::npos) return {};
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

bool parse_int(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// A whole number past int64's range ("99999999999999999999"): too large, not malformed.
bool is_huge_int(std::string_view text) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc::result_out_of_range && ptr == text.data() + text.size();
}

std::string interval_text(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + (end == kOpenRangeEnd ? std::string("end") : std::to_string(end)) + ")";
}

// One of the trace filter's ranges: well-formed, and (when the run's size is known, i.e. the
// config is valid) keeping at least one index of [0, size).
void check_trace_range(CaptureField field, const char* what, int32_t begin, int32_t end, std::optional<int64_t> size,
                       const char* one, const char* many, std::vector<CaptureProblem>& out) {
  const std::string range = "the traced " + std::string(what) + " range " + interval_text(begin, end);
  if (begin < 0 || end <= begin)
    out.push_back({field, range + " is empty or negative (it needs 0 <= A < B for indices A up to B)"});
  else if (size && begin >= *size)
    out.push_back({field, range + " keeps nothing: the run has " + std::to_string(*size) + " " + (*size == 1 ? one : many) + " (0.." +
                              std::to_string(*size - 1) + ")"});
}

void check_inputs(const InputSource& inputs, std::vector<CaptureProblem>& out) {
  if (const auto* random = std::get_if<RandomInputSpec>(&inputs)) {
    try {
      check_random_spec(*random);
    } catch (const ConfigError& e) {
      out.push_back({CaptureField::input_scale, e.what()});
    }
    return;
  }
  const std::vector<std::filesystem::path>& paths = std::get<InputFiles>(inputs).paths;
  if (paths.size() != 1 && paths.size() != 3) {
    out.push_back({CaptureField::input_files,
                   "inputs: got " + std::to_string(paths.size()) +
                       " files; give three files in q k v order (.npy or single-tensor .safetensors), or one "
                       ".safetensors holding tensors named q, k and v"});
    return;
  }
  for (const std::filesystem::path& p : paths) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec)) {
      out.push_back({CaptureField::input_files, "input file '" + p.string() + "' does not exist or is not a file"});
      return;
    }
  }
}

// Filters each in range can still keep no event of the run: stages whose events the kept query
// rows do not have (rows that see no key have no steps), or Split-K's tile stage with its events
// off. The plan's count says (its split count does not decide whether any event is kept: every
// split of a query tile that sees a key has events); what the plan itself refuses, the run reports.
void check_trace_keeps_an_event(const CaptureSpec& spec, std::vector<CaptureProblem>& out) {
  const TraceRequest& t = spec.trace;
  LaunchPlan plan;
  try {
    plan = plan_launch(spec.config, kCpuNominalSmCount, t, spec.tile_events);
  } catch (const std::exception&) {
    return;
  }
  if (plan.trace_requested > 0) return;
  const uint64_t kept_mask = t.filter.stage_mask & all_stages_mask(plan.stages);
  const uint64_t tile_bit = splits_kv(spec.config.kernel) ? uint64_t{1} << kSplitkTileStage : 0;
  std::vector<std::string> why;
  if ((kept_mask & tile_bit) != 0 && !plan.tile_events)
    why.push_back(spec.tile_events ? "tile events are off"
                                   : "tile events are off: the filters keep more than " +
                                         std::to_string(kTileEventsByDefaultLimit) + " tile states of the run");
  if ((kept_mask & ~tile_bit) != 0) why.push_back("query rows that see no key under the mask have no steps");
  std::string because;
  for (const std::string& w : why) because += (because.empty() ? "" : "; ") + w;
  out.push_back({CaptureField::trace_stages, "the trace filters keep no event of this run: the stages traced (" +
                                                 stage_mask_names(kept_mask, plan.stages) +
                                                 ") record none for the batch entries, heads and query rows traced (" +
                                                 because + "); trace other stages or rows, or capture without a trace"});
}

}  // namespace

std::optional<CaptureField> capture_field_of_config(std::string_view name) {
  static constexpr std::pair<std::string_view, CaptureField> kNames[] = {
      {"kernel", CaptureField::kernel},
      {"fault", CaptureField::fault},
      {"batch", CaptureField::batch},
      {"heads", CaptureField::heads},
      {"heads_kv", CaptureField::heads_kv},
      {"seq_q", CaptureField::seq_q},
      {"seq_kv", CaptureField::seq_kv},
      {"head_dim", CaptureField::head_dim},
      {"dtype", CaptureField::dtype},
      {"window_left", CaptureField::window},
      {"window_right", CaptureField::window},
      {"softcap", CaptureField::softcap},
      {"num_splits", CaptureField::splits},
      {"softmax_scale", CaptureField::softmax_scale},
      {"q", CaptureField::q_size},
      {"kv", CaptureField::kv_size},
  };
  for (const auto& [n, field] : kNames)
    if (n == name) return field;
  return std::nullopt;
}

std::vector<CaptureProblem> capture_problems(const CaptureSpec& spec) {
  std::vector<CaptureProblem> out;
  const AttentionConfig& c = spec.config;
  bool config_valid = true;
  try {
    validate(c);
  } catch (const ConfigError& e) {
    // validate names only the config's own fields; the kernel stands for any other.
    out.push_back({capture_field_of_config(e.field()).value_or(CaptureField::kernel), e.what()});
    config_valid = false;
  }
  check_inputs(spec.inputs, out);

  const TraceRequest& t = spec.trace;
  const auto size = [&](int64_t n) { return config_valid ? std::optional<int64_t>(n) : std::nullopt; };
  check_trace_range(CaptureField::trace_batch, "batch", t.filter.batch_begin, t.filter.batch_end, size(c.batch),
                    "batch entry", "batch entries", out);
  check_trace_range(CaptureField::trace_heads, "head", t.filter.head_begin, t.filter.head_end, size(c.heads), "head",
                    "heads", out);
  check_trace_range(CaptureField::trace_queries, "query", t.filter.query_begin, t.filter.query_end, size(c.seq_q),
                    "query", "queries", out);
  const std::vector<StageInfo> stages = kernel_stage_table(c.kernel);
  if (t.enabled && (t.filter.stage_mask & all_stages_mask(stages)) == 0)
    out.push_back({CaptureField::trace_stages, "no stage is traced; the " + std::string(to_string(c.kernel)) +
                                                   " kernel has " + stage_mask_names(all_stages_mask(stages), stages)});
  if (t.capacity_events < 0)
    out.push_back({CaptureField::capacity,
                   "the trace capacity must be >= 0 events (got " + std::to_string(t.capacity_events) + ")"});

  if (spec.cpu_workers < 0 || spec.cpu_workers > kMaxCpuWorkers)
    out.push_back({CaptureField::cpu_workers, "the CPU workers must be between 0 (all cores) and " +
                                                  std::to_string(kMaxCpuWorkers) + " (got " +
                                                  std::to_string(spec.cpu_workers) + ")"});
  if (spec.perturb_seed && spec.backend == Backend::gpu)
    out.push_back({CaptureField::perturb_seed,
                   "a perturbation seed reorders the CPU runtime's threads; it does not apply to the gpu backend "
                   "(run on the cpu backend, or give none)"});
  return out;
}

void check_capture(const CaptureSpec& spec) {
  validate(spec.config);
  std::vector<CaptureProblem> problems = capture_problems(spec);
  // Once a capture is asked for, not at every check of a form: the plan lays out every block.
  if (problems.empty() && spec.trace.enabled) check_trace_keeps_an_event(spec, problems);
  if (!problems.empty()) throw CaptureError(problems.front().field, problems.front().message);
}

std::pair<int32_t, int32_t> parse_index_range(std::string_view text, CaptureField field) {
  const std::string_view t = trim(text);
  if (t.empty()) return {0, kOpenRangeEnd};
  const auto bad = [&](const char* why) {
    return CaptureError(field, "'" + std::string(t) + "' " + why +
                                   " (give A:B for indices A up to, not including, B; A: or :B to leave an end "
                                   "open; or one index)");
  };
  const size_t colon = t.find(':');
  int64_t begin = 0, end = kOpenRangeEnd;
  const char* const too_large = "is too large (indices go up to 2^31 - 2)";
  if (colon == std::string_view::npos) {
    if (is_huge_int(t)) throw bad(t.front() == '-' ? "is negative" : too_large);
    if (!parse_int(t, begin)) throw bad("is not an index range");
    if (begin < 0) throw bad("is negative");
    // An end of kOpenRangeEnd means "open": one index ends one short of it.
    if (begin >= kOpenRangeEnd - 1) throw bad(too_large);
    return {static_cast<int32_t>(begin), static_cast<int32_t>(begin + 1)};
  }
  const std::string_view a = trim(t.substr(0, colon)), b = trim(t.substr(colon + 1));
  for (const std::string_view n : {a, b})
    if (is_huge_int(n)) throw bad(n.front() == '-' ? "is negative" : too_large);
  if (!a.empty() && !parse_int(a, begin)) throw bad("is not an index range");
  if (!b.empty() && !parse_int(b, end)) throw bad("is not an index range");
  if (begin < 0 || end < 0) throw bad("is negative");
  // Too large before empty: "99999999999:" has no index of the range, but the number is the fault.
  if (begin >= kOpenRangeEnd || end > kOpenRangeEnd) throw bad(too_large);
  if (end <= begin) throw bad("is empty");
  return {static_cast<int32_t>(begin), static_cast<int32_t>(end)};
}

std::string index_range_text(int32_t begin, int32_t end) {
  if (begin <= 0 && end == kOpenRangeEnd) return {};
  if (end == kOpenRangeEnd) return std::to_string(begin) + ":";
  if (end == begin + 1) return std::to_string(begin);
  return std::to_string(begin) + ":" + std::to_string(end);
}

}  // namespace ts
