#include "app/model/trace_session.h"

#include <set>
#include <string>

#include <nlohmann/json.hpp>

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

nlohmann::json metadata_json(const TraceFile& t, std::string_view key, const Problem& fail) {
  const std::string* text = t.metadata_value(key);
  if (text == nullptr)
    throw fail("metadata has no '" + std::string(key) +
               "': not a capture of tilescope (traces from `tilescope capture` or the viewer "
               "carry the run's config and tiling); re-capture it");
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw fail("metadata '" + std::string(key) + "' is not valid JSON");
  return j;
}

AttentionConfig read_config(const TraceFile& t, const Problem& fail) {
  AttentionConfig c;
  try {
    from_json(metadata_json(t, trace_meta::config, fail), c);
    validate(c);
  } catch (const ConfigError& e) {
    throw fail(std::string("metadata 'config' is invalid: ") + e.what());
  }
  if (c.num_splits < 1)
    throw fail("metadata 'config' has num_splits " + std::to_string(c.num_splits) +
               "; a capture records the split count it ran with (>= 1)");
  if (c.head_dim != t.head_dim())
    throw fail("metadata 'config' has head_dim " + std::to_string(c.head_dim) +
               " but the events hold " + std::to_string(t.head_dim()) + " columns");
  return c;
}

Tiling read_tiling(const TraceFile& t, const AttentionConfig& c, const Problem& fail) {
  Tiling tiling;
  try {
    from_json(metadata_json(t, trace_meta::tiling, fail), tiling);
  } catch (const ConfigError& e) {
    throw fail(std::string("metadata 'tiling' is invalid: ") + e.what());
  }
  const bool agrees = tiling.kernel == c.kernel && tiling.seq_q == c.seq_q &&
                      tiling.seq_kv == c.seq_kv && tiling.causal == c.causal &&
                      tiling.num_splits == c.num_splits;
  if (!agrees)
    throw fail("metadata 'tiling' does not match 'config' (kernel, sequence lengths, causal "
               "or split count differ)");
  if (tiling.block_m != t.block_m() || tiling.block_n != t.block_n())
    throw fail("metadata 'tiling' has blocks " + std::to_string(tiling.block_m) + "x" +
               std::to_string(tiling.block_n) + " but the events were recorded with " +
               std::to_string(t.block_m()) + "x" + std::to_string(t.block_n()));
  return tiling;
}

// Why an event cannot belong to this run, or "" when it can.
std::string event_problem(const EventHeader& h, const AttentionConfig& c, const Tiling& tiling) {
  const auto stage = static_cast<Stage>(h.stage);
  const bool fa1 = c.kernel == KernelKind::fa1;
  if (stage != Stage::final_output && (stage == Stage::fa1_step) != fa1)
    return std::string("stage ") + kStageNames[h.stage] + " is not a stage of the " +
           std::string(to_string(c.kernel)) + " kernel";
  if (h.batch >= c.batch) return "batch " + std::to_string(h.batch) + " >= " + std::to_string(c.batch);
  if (h.head >= c.heads) return "head " + std::to_string(h.head) + " >= " + std::to_string(c.heads);
  if (h.q_tile >= tiling.num_q_tiles)
    return "query tile " + std::to_string(h.q_tile) + " >= " + std::to_string(tiling.num_q_tiles);
  if (h.rows != tiling.rows_in_q_tile(h.q_tile))
    return "rows " + std::to_string(h.rows) + " but query tile " + std::to_string(h.q_tile) +
           " has " + std::to_string(tiling.rows_in_q_tile(h.q_tile));
  if (h.kv_tile_end > tiling.num_kv_tiles)
    return "kv tile end " + std::to_string(h.kv_tile_end) + " > " + std::to_string(tiling.num_kv_tiles);
  if (h.split >= tiling.num_splits)
    return "split " + std::to_string(h.split) + " >= " + std::to_string(tiling.num_splits);
  return {};
}

void check_inputs_fit(const TraceInputs& in, const AttentionConfig& c, const Problem& fail) {
  std::set<std::array<int32_t, 2>> seen;
  for (const auto& p : in.pairs) {
    if (p[0] < 0 || p[0] >= c.batch || p[1] < 0 || p[1] >= c.heads)
      throw fail("inputs.pairs holds (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) +
                 "), outside the run's batch " + std::to_string(c.batch) + " x heads " +
                 std::to_string(c.heads));
    if (!seen.insert(p).second)
      throw fail("inputs.pairs holds (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) +
                 ") twice");
  }
  const int64_t n = static_cast<int64_t>(in.pairs.size());
  if (in.q.dtype != c.dtype)
    throw fail("inputs are " + std::string(to_string(in.q.dtype)) + " but the config's dtype is " +
               std::string(to_string(c.dtype)));
  if (in.q.shape != std::vector<int64_t>{n, c.seq_q, c.head_dim} ||
      in.k.shape != std::vector<int64_t>{n, c.seq_kv, c.head_dim})
    throw fail("inputs have shapes q " + shape_string(in.q.shape) + ", k " +
               shape_string(in.k.shape) + " but the config needs [" + std::to_string(n) + ", " +
               std::to_string(c.seq_q) + " / " + std::to_string(c.seq_kv) + ", " +
               std::to_string(c.head_dim) + "]");
}

}  // namespace

RunView open_run(const std::filesystem::path& path) {
  RunView v = run_view_from_trace(std::make_shared<const TraceFile>(TraceFile::open(path)));
  v.label = path.filename().string();
  return v;
}

RunView run_view_from_trace(std::shared_ptr<const TraceFile> trace) {
  const TraceFile& t = *trace;
  const Problem fail{t};
  RunView v;
  v.config = read_config(t, fail);
  v.tiling = read_tiling(t, v.config, fail);
  v.label = t.display_name();
  v.metadata = t.metadata();
  v.block_m = t.block_m();
  v.head_dim = t.head_dim();
  v.dropped_events = t.dropped_events();

  const size_t n = t.num_events();
  v.headers.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const EventHeader h = t.header(i);
    const std::string problem = event_problem(h, v.config, v.tiling);
    if (!problem.empty()) throw fail("event " + std::to_string(i) + ": " + problem);
    v.headers.push_back(h);
  }
  if (n > 0) {
    // The payload tensors are contiguous [N, ...] arrays; event 0's span starts each.
    const size_t bm = static_cast<size_t>(v.block_m), hd = static_cast<size_t>(v.head_dim);
    v.m = {t.m(0).data(), n * bm};
    v.l = {t.l(0).data(), n * bm};
    v.o = {t.o(0).data(), n * bm * hd};
  }

  if (std::optional<TraceInputs> in = t.read_inputs()) {
    check_inputs_fit(*in, v.config, fail);
    v.inputs = std::move(*in);
  }
  if (std::optional<HostTensor> out = t.read_output()) {
    const std::vector<int64_t> want{v.config.batch, v.config.heads, v.config.seq_q,
                                    v.config.head_dim};
    if (out->shape != want || out->dtype != v.config.dtype)
      throw fail("output.o is " + std::string(to_string(out->dtype)) + " " +
                 shape_string(out->shape) + " but the config needs " +
                 std::string(to_string(v.config.dtype)) + " " + shape_string(want));
    v.output = std::move(*out);
  }
  v.payload_owner = std::move(trace);
  return v;
}

}  // namespace ts
