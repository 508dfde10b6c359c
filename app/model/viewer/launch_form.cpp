#include "app/model/viewer/launch_form.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <tuple>
#include <variant>

#include <nlohmann/json.hpp>

#include "app/model/capture/capture_metadata.h"
#include "base/kernel_list.h"
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

std::optional<uint64_t> parse_seed(const std::string& text, CaptureField field, bool required) {
  const std::string t = trim(text);
  if (t.empty()) {
    if (required) throw CaptureError(field, "the seed is empty; give a whole number >= 0");
    return std::nullopt;
  }
  uint64_t v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size())
    throw CaptureError(field, "the seed '" + t + "' is not a whole number in 0.." +
                                  std::to_string(std::numeric_limits<uint64_t>::max()));
  return v;
}

}  // namespace

bool FormLabel::operator==(const FormLabel& other) const {
  return std::string_view(section) == other.section && std::string_view(label) == other.label;
}

// The panel's labels, one per field; the sections are the panel's headings.
FormLabel form_label(CaptureField field) {
  switch (field) {
    case CaptureField::kernel: return {"Kernel", "kernel"};
    case CaptureField::fault: return {"Kernel", "fault"};
    case CaptureField::backend: return {"Kernel", "backend"};
    case CaptureField::batch: return {"Kernel", "batch"};
    case CaptureField::heads: return {"Kernel", "heads"};
    case CaptureField::heads_kv: return {"Kernel", "heads_kv"};
    case CaptureField::seq_q: return {"Kernel", "seq_q"};
    case CaptureField::seq_kv: return {"Kernel", "seq_kv"};
    case CaptureField::head_dim: return {"Kernel", "head_dim"};
    case CaptureField::dtype: return {"Kernel", "dtype"};
    case CaptureField::window: return {"Kernel", "window"};
    case CaptureField::softcap: return {"Kernel", "softcap"};
    case CaptureField::splits: return {"Kernel", "splits"};
    case CaptureField::softmax_scale: return {"Kernel", "scale"};
    // The tensors' sizes: the panel marks the sequence length beside them.
    case CaptureField::q_size: return {"Kernel", "seq_q"};
    case CaptureField::kv_size: return {"Kernel", "seq_kv"};
    case CaptureField::input_seed: return {"Inputs", "seed"};
    case CaptureField::input_scale: return {"Inputs", "input scale"};
    case CaptureField::input_files: return {"Inputs", "Q / K / V files"};
    case CaptureField::trace_batch: return {"Trace", "batch entries"};
    case CaptureField::trace_heads: return {"Trace", "heads"};
    case CaptureField::trace_queries: return {"Trace", "queries"};
    case CaptureField::trace_stages: return {"Trace", "stages"};
    case CaptureField::capacity: return {"Trace", "capacity"};
    case CaptureField::cpu_workers: return {"CPU backend", "workers"};
    case CaptureField::perturb_seed: return {"CPU backend", "perturbation seed"};
  }
  return {"", "?"};
}

std::string problem_text(const CaptureProblem& problem) {
  const FormLabel l = form_label(problem.field);
  return std::string(l.label) + " (" + l.section + "): " + problem.message;
}

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

CaptureSpec to_capture_spec(const LaunchForm& f) {
  CaptureSpec spec;
  spec.config = f.config;
  spec.backend = f.backend;
  // The form's text first (which of the three file fields is which, seeds, ranges); then the
  // capture's own check of what it asks for.
  if (f.inputs_from_files) {
    InputFiles files;
    const std::string q = trim(f.q_file), k = trim(f.k_file), v = trim(f.v_file);
    if (q.empty())
      throw CaptureError(CaptureField::input_files,
                         "no Q file: give the Q, K and V files (.npy or .safetensors), or one .safetensors holding "
                         "tensors q, k and v as the Q file");
    for (const std::string& p : {q, k, v})
      if (!p.empty()) files.paths.emplace_back(p);
    spec.inputs = files;
  } else {
    RandomInputSpec r;
    r.seed = *parse_seed(f.input_seed, CaptureField::input_seed, true);
    r.distribution = f.distribution;
    r.preset = f.preset;
    r.scale = f.input_scale;
    spec.inputs = r;
  }
  spec.trace.enabled = f.trace_enabled;
  TraceFilter& filt = spec.trace.filter;
  std::tie(filt.batch_begin, filt.batch_end) = parse_index_range(f.trace_batch, CaptureField::trace_batch);
  std::tie(filt.head_begin, filt.head_end) = parse_index_range(f.trace_heads, CaptureField::trace_heads);
  std::tie(filt.query_begin, filt.query_end) = parse_index_range(f.trace_queries, CaptureField::trace_queries);
  filt.stage_mask = f.stage_mask & all_stages_mask(kernel_stage_table(f.config.kernel));
  spec.tile_events = splits_kv(f.config.kernel) ? f.tile_events : std::nullopt;
  spec.trace.capacity_events = f.capacity;
  spec.cpu_workers = f.cpu_workers;
  spec.perturb_seed = parse_seed(f.perturb_seed, CaptureField::perturb_seed, false);

  const std::vector<CaptureProblem> problems = capture_problems(spec);
  if (!problems.empty()) throw CaptureError(problems.front().field, problems.front().message);
  return spec;
}

std::optional<CaptureProblem> check_launch_form(const LaunchForm& form) {
  try {
    (void)to_capture_spec(form);
  } catch (const CaptureError& e) {
    return CaptureProblem{e.field().value_or(CaptureField::kernel), e.what()};
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
    throw CaptureError(CaptureField::kernel,
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
  if (splits_kv(f.config.kernel) && f.trace_enabled && ((f.stage_mask >> kSplitkTileStage) & 1u)) {
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

void choose_kernel(LaunchForm& form, KernelKind kernel) {
  AttentionConfig& c = form.config;
  c.kernel = kernel;
  if (!fault_applies(c.fault, kernel)) c.fault = Fault::none;
  if (!splits_kv(kernel)) c.num_splits = 0;
  // Another kernel, another stage table: trace all of its stages.
  form.stage_mask = all_stages_mask(kernel_stage_table(kernel));
  const std::vector<DType> dtypes = built_dtypes(kernel);
  if (!dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), c.dtype) == dtypes.end()) c.dtype = dtypes.front();
  const std::vector<int> dims = built_head_dims(kernel);
  if (!dims.empty() && std::find(dims.begin(), dims.end(), c.head_dim) == dims.end())
    c.head_dim = *std::min_element(dims.begin(), dims.end(), [&](int a, int b) {
      return std::pair{std::abs(a - c.head_dim), a} < std::pair{std::abs(b - c.head_dim), b};
    });
}

}  // namespace ts
