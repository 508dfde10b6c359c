#include "app/model/viewer/launch_form.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <system_error>
#include <tuple>
#include <variant>

#include <nlohmann/json.hpp>

#include "app/model/capture/capture_metadata.h"
#include "instrumentation/trace/trace_file.h"
#include "kernels/kernel_stages.h"

namespace ts {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return {};
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

bool parse_int(const std::string& text, int64_t& out) {
  const char* b = text.data();
  const char* e = b + text.size();
  const auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e;
}

std::optional<uint64_t> parse_seed(const std::string& text, const char* field, bool required) {
  const std::string t = trim(text);
  if (t.empty()) {
    if (required) throw LaunchFormError(field, std::string(field) + " is empty; give a whole number >= 0");
    return std::nullopt;
  }
  uint64_t v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size())
    throw LaunchFormError(field, std::string(field) + " '" + t + "' is not a whole number in 0.." +
                                     std::to_string(std::numeric_limits<uint64_t>::max()));
  return v;
}

// ConfigError's field names (base/attention_config.cpp) -> the panel's.
std::string panel_field(const std::string& config_field) {
  if (config_field == "num_splits") return launch_field::splits;
  if (config_field == "softmax_scale") return launch_field::scale;
  if (config_field == "q") return launch_field::seq_q;
  if (config_field == "kv") return launch_field::seq_kv;
  return config_field;
}

void check_range_keeps(const char* field, int32_t begin, int32_t end, int64_t size, const char* what) {
  if (begin >= size)
    throw LaunchFormError(field, std::string(field) + " " + index_range_text(begin, end) +
                                     " keeps nothing: the run has " + std::to_string(size) + " " + what +
                                     " (0.." + std::to_string(size - 1) + ")");
}

}  // namespace

LaunchForm default_launch_form() {
  LaunchForm f;
  f.config.kernel = KernelKind::splitk;
  f.config.fault = Fault::double_count_l;
  f.config.batch = 1;
  f.config.heads = 2;
  f.config.seq_q = 16;
  f.config.seq_kv = 1024;
  f.config.head_dim = 64;
  f.config.dtype = DType::f16;
  f.config.num_splits = 8;
  f.backend = Backend::auto_;
  f.input_seed = "1";
  return f;
}

std::pair<int32_t, int32_t> parse_index_range_text(const std::string& text, const std::string& field) {
  const std::string t = trim(text);
  if (t.empty()) return {0, kOpenRangeEnd};
  auto bad = [&](const std::string& why) {
    return LaunchFormError(field, field + " '" + t + "' " + why +
                                      " (give A:B for indices A up to B, A: or :B to leave an end open, or one index)");
  };
  const size_t colon = t.find(':');
  int64_t begin = 0, end = kOpenRangeEnd;
  // An end of kOpenRangeEnd is "open": a range of one index ends one short of it.
  if (colon == std::string::npos) {
    if (!parse_int(t, begin)) throw bad("is not an index range");
    if (begin < 0) throw bad("is negative");
    if (begin >= kOpenRangeEnd - 1) throw bad("is too large");
    return {static_cast<int32_t>(begin), static_cast<int32_t>(begin + 1)};
  }
  const std::string a = trim(t.substr(0, colon)), b = trim(t.substr(colon + 1));
  if (!a.empty() && !parse_int(a, begin)) throw bad("is not an index range");
  if (!b.empty() && !parse_int(b, end)) throw bad("is not an index range");
  if (begin < 0 || end < 0) throw bad("is negative");
  if (end <= begin) throw bad("is empty");
  if (begin >= kOpenRangeEnd || end > kOpenRangeEnd) throw bad("is too large");
  return {static_cast<int32_t>(begin), static_cast<int32_t>(end)};
}

std::string index_range_text(int32_t begin, int32_t end) {
  if (begin <= 0 && end == kOpenRangeEnd) return {};
  if (end == kOpenRangeEnd) return std::to_string(begin) + ":";
  if (end == begin + 1) return std::to_string(begin);
  return std::to_string(begin) + ":" + std::to_string(end);
}

CaptureSpec to_capture_spec(const LaunchForm& f) {
  CaptureSpec spec;
  spec.config = f.config;
  spec.backend = f.backend;
  try {
    validate(spec.config);
  } catch (const ConfigError& e) {
    throw LaunchFormError(panel_field(e.field()), e.what());
  }

  if (f.inputs_from_files) {
    InputFiles files;
    const std::string q = trim(f.q_file), k = trim(f.k_file), v = trim(f.v_file);
    if (q.empty())
      throw LaunchFormError(launch_field::input_files,
                            "input files: give the Q, K and V files (.npy or .safetensors), or one "
                            ".safetensors holding tensors q, k and v in the Q field");
    if (k.empty() != v.empty())
      throw LaunchFormError(launch_field::input_files,
                            "input files: give both K and V, or neither (Q then names one .safetensors "
                            "holding q, k and v)");
    for (const std::string& p : {q, k, v}) {
      if (p.empty()) continue;
      std::error_code ec;
      if (!std::filesystem::is_regular_file(p, ec))
        throw LaunchFormError(launch_field::input_files, "input file '" + p + "' does not exist or is not a file");
      files.paths.emplace_back(p);
    }
    spec.inputs = files;
  } else {
    RandomInputSpec r;
    r.seed = *parse_seed(f.input_seed, launch_field::input_seed, true);
    r.distribution = f.distribution;
    r.preset = f.preset;
    if (!std::isfinite(f.input_scale) || f.input_scale <= 0)
      throw LaunchFormError(launch_field::input_scale,
                            "input scale must be a finite number > 0 (got " + std::to_string(f.input_scale) + ")");
    r.scale = f.input_scale;
    spec.inputs = r;
  }

  spec.trace.enabled = f.trace_enabled;
  TraceFilter& filt = spec.trace.filter;
  std::tie(filt.batch_begin, filt.batch_end) = parse_index_range_text(f.trace_batch, launch_field::trace_batch);
  std::tie(filt.head_begin, filt.head_end) = parse_index_range_text(f.trace_heads, launch_field::trace_heads);
  std::tie(filt.query_begin, filt.query_end) = parse_index_range_text(f.trace_queries, launch_field::trace_queries);
  check_range_keeps(launch_field::trace_batch, filt.batch_begin, filt.batch_end, f.config.batch, "batch entries");
  check_range_keeps(launch_field::trace_heads, filt.head_begin, filt.head_end, f.config.heads, "heads");
  check_range_keeps(launch_field::trace_queries, filt.query_begin, filt.query_end, f.config.seq_q, "queries");
  const std::vector<StageInfo> stages = kernel_stage_table(f.config.kernel);
  filt.stage_mask = f.stage_mask & all_stages_mask(stages);
  if (f.trace_enabled && filt.stage_mask == 0)
    throw LaunchFormError(launch_field::trace_stages,
                          "trace stages: none of the " + std::string(to_string(f.config.kernel)) +
                              " kernel's stages is ticked (it has " +
                              stage_mask_names(all_stages_mask(stages), stages) + ")");
  spec.tile_events = f.config.kernel == KernelKind::splitk ? f.tile_events : std::nullopt;
  if (f.capacity < 0)
    throw LaunchFormError(launch_field::capacity,
                          "capacity must be >= 0 events (got " + std::to_string(f.capacity) + ")");
  spec.trace.capacity_events = f.capacity;

  if (f.cpu_workers < 0 || f.cpu_workers > 1024)
    throw LaunchFormError(launch_field::cpu_workers, "CPU workers must be between 0 (all cores) and 1024 (got " +
                                                         std::to_string(f.cpu_workers) + ")");
  spec.cpu_workers = f.cpu_workers;
  spec.perturb_seed = parse_seed(f.perturb_seed, launch_field::perturb_seed, false);
  if (spec.perturb_seed && f.backend == Backend::gpu)
    throw LaunchFormError(launch_field::perturb_seed,
                          "perturbation seed reorders the CPU runtime's threads; it does not apply to the "
                          "gpu backend (clear it, or choose cpu)");
  return spec;
}

std::optional<LaunchFormError> check_launch_form(const LaunchForm& form) {
  try {
    (void)to_capture_spec(form);
  } catch (const LaunchFormError& e) {
    return e;
  }
  return std::nullopt;
}

LaunchForm form_from_spec(const CaptureSpec& spec) {
  LaunchForm f;
  f.config = spec.config;
  f.backend = spec.backend;
  if (const auto* files = std::get_if<InputFiles>(&spec.inputs)) {
    f.inputs_from_files = true;
    std::string* slots[] = {&f.q_file, &f.k_file, &f.v_file};
    for (size_t i = 0; i < files->paths.size() && i < 3; ++i) *slots[i] = files->paths[i].string();
  } else {
    const auto& r = std::get<RandomInputSpec>(spec.inputs);
    f.input_seed = std::to_string(r.seed);
    f.distribution = r.distribution;
    f.input_scale = r.scale;
    f.preset = r.preset;
  }
  const TraceFilter& t = spec.trace.filter;
  f.trace_enabled = spec.trace.enabled;
  f.trace_batch = index_range_text(t.batch_begin, t.batch_end);
  f.trace_heads = index_range_text(t.head_begin, t.head_end);
  f.trace_queries = index_range_text(t.query_begin, t.query_end);
  f.stage_mask = t.stage_mask;
  f.tile_events = spec.tile_events;
  f.capacity = spec.trace.capacity_events;
  f.cpu_workers = spec.cpu_workers;
  f.perturb_seed = spec.perturb_seed ? std::to_string(*spec.perturb_seed) : std::string();
  return f;
}

LaunchForm form_from_run(const RunView& run) {
  if (!run.config)
    throw LaunchFormError(launch_field::kernel,
                          run.label + " was not recorded by tilescope's kernels (its trace holds no kernel config): "
                                      "it cannot be launched again here");
  LaunchForm f;
  f.config = *run.config;  // splits as it ran: the re-run's tiling matches
  const std::vector<StageInfo> stages = kernel_stage_table(f.config.kernel);
  const auto meta = [&](std::string_view key) -> const std::string* {
    const auto it = run.metadata.find(std::string(key));
    return it == run.metadata.end() ? nullptr : &it->second;
  };
  if (const std::string* b = meta(trace_meta::backend)) f.backend = backend_from_name(*b).value_or(Backend::auto_);
  if (const std::string* s = meta(trace_meta::inputs_seed)) f.input_seed = *s;
  else f.input_seed = "0";
  if (const std::string* d = meta(capture_meta::inputs_distribution))
    f.distribution = distribution_from_name(*d).value_or(InputDistribution::normal);
  if (const std::string* p = meta(capture_meta::inputs_preset)) f.preset = preset_from_name(*p).value_or(InputPreset::none);
  if (const std::string* s = meta(capture_meta::inputs_scale)) {
    char* end = nullptr;
    const double v = std::strtod(s->c_str(), &end);
    if (end && *end == '\0' && std::isfinite(v) && v > 0) f.input_scale = v;
  }
  if (const std::string* t = meta(trace_meta::trace_filter)) {
    const nlohmann::json j = nlohmann::json::parse(*t, nullptr, false);
    if (!j.is_discarded()) {
      try {
        const TraceRequest r = trace_request_from_json(j, stages);
        f.trace_enabled = r.enabled;
        f.trace_batch = index_range_text(r.filter.batch_begin, r.filter.batch_end);
        f.trace_heads = index_range_text(r.filter.head_begin, r.filter.head_end);
        f.trace_queries = index_range_text(r.filter.query_begin, r.filter.query_end);
        f.stage_mask = r.filter.stage_mask;
      } catch (const std::exception&) {
        // An unreadable filter in someone's trace: re-run with everything traced.
      }
    }
  }
  if (const std::string* c = meta(capture_meta::trace_capacity)) {
    int64_t v = 0;
    if (parse_int(*c, v) && v >= 0) f.capacity = v;
  }
  if (const std::string* p = meta(capture_meta::perturb_seed)) f.perturb_seed = *p;
  // Split-K's per-tile events: as the run had them when its filter kept their stage (the
  // automatic choice depends on the size, which a re-run keeps anyway, but say what it was).
  if (f.config.kernel == KernelKind::splitk && f.trace_enabled && ((f.stage_mask >> kSplitkTileStage) & 1u)) {
    const int32_t tile_stage = run.stage_index(stages[kSplitkTileStage].name);
    bool any = false;
    for (const EventHeader& h : run.headers) any |= h.stage == tile_stage;
    f.tile_events = any;
  }
  return f;
}

CaptureSpec on_other_backend(CaptureSpec spec, Backend ran_on) {
  const Backend was = spec.backend == Backend::auto_ ? ran_on : spec.backend;
  spec.backend = was == Backend::gpu ? Backend::cpu : Backend::gpu;
  if (spec.backend == Backend::gpu) spec.perturb_seed.reset();
  return spec;
}

std::vector<FaultInfo> faults_for(KernelKind kernel) {
  std::vector<FaultInfo> out;
  for (const FaultInfo& f : all_faults())
    if (f.fault == Fault::none || fault_applies(f.fault, kernel)) out.push_back(f);
  return out;
}

}  // namespace ts
