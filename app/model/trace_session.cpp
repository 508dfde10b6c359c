#include "app/model/trace_session.h"

#include <atomic>
#include <string>

#include <nlohmann/json.hpp>

#include "app/model/generated_inputs.h"
#include "instrumentation/trace/file_bytes.h"
#include "instrumentation/trace/file_error.h"

namespace ts {
namespace {

// Errors name the file first, like the trace layer's.
struct Problem {
  const TraceFile& trace;
  TraceFormatError operator()(const std::string& what) const {
    return TraceFormatError(trace.display_name(), trace.display_name() + ": " + what);
  }
};

// Our kernels' config and tiling, when the trace carries them: optional (a user's kernel has
// none), but a trace that carries them must carry ones that fit its attention.
void read_kernel_description(const TraceFile& t, RunView& v, const Problem& fail) {
  const std::string* config_text = t.metadata_value(trace_meta::config);
  const std::string* tiling_text = t.metadata_value(trace_meta::tiling);
  if (config_text == nullptr) return;
  AttentionConfig c;
  try {
    from_json(nlohmann::json::parse(*config_text), c);
    validate(c);
  } catch (const std::exception& e) {
    throw fail(std::string("metadata 'config' is invalid: ") + e.what());
  }
  const AttentionSpec& a = t.attention();
  const AttentionSpec from_config = attention_spec(c);
  if (from_config.batch != a.batch || from_config.heads_q != a.heads_q || from_config.heads_kv != a.heads_kv ||
      from_config.seq_q != a.seq_q || from_config.seq_kv != a.seq_kv || from_config.head_dim != a.head_dim ||
      from_config.dtype != a.dtype || from_config.causal != a.causal || from_config.window_left != a.window_left ||
      from_config.window_right != a.window_right || from_config.softcap != a.softcap)
    throw fail("metadata 'config' (" + describe(from_config) + ") does not fit the attention description (" +
               describe(a) + ")");
  if (c.num_splits < 1)
    throw fail("metadata 'config' has num_splits " + std::to_string(c.num_splits) +
               "; a capture records the split count it ran with (>= 1)");
  v.config = c;
  if (tiling_text == nullptr) return;
  Tiling tiling;
  try {
    from_json(nlohmann::json::parse(*tiling_text), tiling);
  } catch (const std::exception& e) {
    throw fail(std::string("metadata 'tiling' is invalid: ") + e.what());
  }
  if (tiling.kernel != c.kernel || tiling.seq_q != c.seq_q || tiling.seq_kv != c.seq_kv || tiling.causal != c.causal ||
      tiling.window_left != c.window_left || tiling.window_right != c.window_right || tiling.num_splits != c.num_splits)
    throw fail("metadata 'tiling' does not match 'config' (kernel, sequence lengths, causal, window or split count "
               "differ)");
  v.tiling = tiling;
}

// Inputs recorded as their generator's spec: re-made and checked against their hashes.
void remake_recorded_inputs(const TraceFile& t, RunView& v, const Problem& fail, const OpenRunOptions& options) {
  std::optional<GeneratedInputs> recipe;
  try {
    recipe = read_generated_inputs(t.metadata());
  } catch (const InputsRecipeError& e) {
    throw fail(e.what());
  }
  if (!recipe) return;
  if (t.has_inputs())
    throw fail("it holds inputs.* tensors and an inputs_generated recipe; a trace holds one or the other");
  if (!options.remake_inputs) return;
  const uint64_t bytes = remade_input_bytes(t.attention(), *recipe);
  check_fits_in_memory(t.display_name(), bytes);
  RemakeProgress progress;
  if (options.progress) {
    // Bytes generated, then bytes hashed: twice the inputs' size in all.
    auto done = std::make_shared<std::atomic<uint64_t>>(0);
    const size_t element = dtype_size(t.attention().dtype);
    const auto report = options.progress;
    progress.generated = [done, element, bytes, report](int64_t n) {
      report(done->fetch_add(static_cast<uint64_t>(n) * element) + static_cast<uint64_t>(n) * element, 2 * bytes);
    };
    progress.hashed = [done, bytes, report](size_t n) { report(done->fetch_add(n) + n, 2 * bytes); };
  }
  try {
    v.inputs = remake_inputs(t.attention(), *recipe, options.workers, progress);
  } catch (const InputsRecipeError& e) {
    throw fail(e.what());
  }
}

}  // namespace

bool inputs_are_remade(const RunView& run) { return run.metadata.count(std::string(input_meta::generated)) != 0; }

RunView open_run(const std::filesystem::path& path, const OpenRunOptions& options) {
  RunView v = run_view_from_trace(std::make_shared<const TraceFile>(TraceFile::open(path)), options);
  v.label = path.filename().string();
  return v;
}

RunView run_view_from_trace(std::shared_ptr<const TraceFile> trace, const OpenRunOptions& options) {
  const TraceFile& t = *trace;
  const Problem fail{t};
  RunView v;
  v.attention = t.attention();
  v.stages = t.stages();
  v.label = t.display_name();
  v.metadata = t.metadata();
  read_kernel_description(t, v, fail);
  v.max_rows = t.max_rows();
  v.head_dim = t.head_dim();
  v.dropped_events = t.dropped_events();
  v.requested_events = t.requested_events();
  v.headers = t.headers();
  v.recorded_events = v.headers.size();
  v.recorded_stages = v.stages.size();
  v.missing = t.missing();
  v.m = t.m_all();
  v.l = t.l_all();
  v.o = t.o_all();
  if (std::optional<HeadInputs> in = t.read_inputs()) v.inputs = std::move(*in);
  else remake_recorded_inputs(t, v, fail, options);
  v.output = t.read_output();
  v.output_lse = t.read_output_lse();
  v.payload_owner = std::move(trace);
  add_output_events(v);
  return v;
}

}  // namespace ts
