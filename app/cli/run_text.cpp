#include "app/cli/run_text.h"

#include <cstdio>

#include "app/cli_common/capture_flags.h"
#include "app/model/capture/capture_metadata.h"
#include "app/model/trace_session.h"
#include "base/count_text.h"
#include "instrumentation/trace/display_text.h"

namespace ts::cli {

std::vector<size_t> events_by_stage(const RunView& run) {
  std::vector<size_t> n(run.num_stages(), 0);
  for (size_t i = 0; i < run.recorded_events; ++i) ++n[static_cast<size_t>(run.headers[i].stage)];
  return n;
}

std::string events_by_stage_text(const RunView& run) {
  const auto n = events_by_stage(run);
  std::string out;
  for (size_t s = 0; s < n.size(); ++s)
    if (n[s] > 0) out += (out.empty() ? "" : ", ") + std::to_string(n[s]) + " " + printable(run.stages[s].name);
  return out.empty() ? "none" : out;
}

std::string bytes_text(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else if (bytes < (1u << 20)) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else if (bytes < (1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024.0));
  else std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string config_text(const AttentionConfig& c) {
  std::string s = std::string(to_string(c.kernel)) + "/" + std::string(to_string(c.fault)) +
                  ", batch " + std::to_string(c.batch) + " x heads " + std::to_string(c.heads) +
                  (c.kv_heads() != c.heads ? " on " + count_of(c.kv_heads(), "kv head") : std::string()) +
                  ", seq_q " + std::to_string(c.seq_q) + ", seq_kv " + std::to_string(c.seq_kv) +
                  ", head_dim " + std::to_string(c.head_dim) + ", " + std::string(to_string(c.dtype));
  if (c.causal) s += ", causal";
  if (c.has_window()) s += ", window " + window_text(c.window_left, c.window_right);
  if (c.softcap > 0.0) s += ", softcap " + exact_decimal(c.softcap);
  if (splits_kv(c.kernel))
    s += ", " + count_of(c.num_splits, "split");
  if (c.softmax_scale > 0.0) s += ", scale " + exact_decimal(c.softmax_scale);
  return s;
}

std::string capture_summary(const CaptureResult& result, const std::filesystem::path& written,
                            double total_seconds) {
  const RunView& run = result.view;
  const CapturedEvents& ev = *result.events;
  char times[96];
  std::snprintf(times, sizeof times, "kernels %.1f ms, %.2f s in all", result.outcome.elapsed_ms,
                total_seconds);
  std::string s = "Captured " + config_text(*run.config) + " on " +
                  std::string(to_string(result.outcome.backend)) + " (" + result.outcome.device +
                  "); " + times + ".\n";
  s += "Events: " + events_by_stage_text(run) + " (" + std::to_string(ev.size()) + " recorded, " +
       std::to_string(ev.dropped) + " dropped).";
  if (ev.dropped > 0)
    s += " " + std::to_string(ev.dropped) + " events did not fit the trace capacity of " + std::to_string(ev.size()) +
         " and were dropped (the trace keeps the first ones): " + capacity_hint() + ".";
  s += "\n";
  std::error_code ec;
  const auto size = std::filesystem::file_size(written, ec);
  const std::string heads = count_of(static_cast<int64_t>(run.inputs.q_pairs.size()), "query head") + " (" +
                            count_of(static_cast<int64_t>(run.inputs.kv_pairs.size()), "kv head") + ")";
  std::string inputs;
  if (stores_inputs(result))
    inputs = "the inputs of " + heads;
  else if (inputs_are_remade(run))
    inputs = "the inputs of " + heads + " as their seed and SHA-256 (re-made when it is opened; " +
             "--store-inputs keeps the values)";
  else
    inputs = "the input files' names and SHA-256, not their values (it cannot be analysed: diff, export and the viewer do not read the files back)";
  s += "Wrote " + written.string() + " (" + (ec ? std::string("size unknown") : bytes_text(size)) + "): " +
       inputs + ", the events and the output.\n";
  return s;
}

}  // namespace ts::cli
