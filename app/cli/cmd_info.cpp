// `tilescope info FILE [--json]`: what a trace holds — the attention it computed, its stage table,
// our kernels' config and tiling when it is a run of them, where and how it was captured, events by
// stage, dropped and never-written events, stored inputs and output, file size.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli_common/report_output.h"
#include "app/cli/run_text.h"
#include "app/model/generated_inputs.h"
#include "app/model/trace_session.h"
#include "base/count_text.h"
#include "instrumentation/trace/display_text.h"

namespace ts::cli {
namespace {

// The inputs' recipe when the trace records them so (checked when the trace was opened).
std::optional<GeneratedInputs> recipe_of(const RunView& run) {
  try {
    return read_generated_inputs(run.metadata);
  } catch (const InputsRecipeError&) {
    return std::nullopt;
  }
}

struct InfoOptions {
  std::string file;
  bool json = false;
};

std::string meta(const RunView& run, std::string_view key) {
  const auto it = run.metadata.find(std::string(key));
  return it == run.metadata.end() ? std::string() : it->second;
}

nlohmann::json pairs_json(const std::vector<std::array<int32_t, 2>>& pairs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : pairs) out.push_back({p[0], p[1]});
  return out;
}

nlohmann::json info_json(const RunView& run, const std::string& file, uint64_t size) {
  nlohmann::json stages = nlohmann::json::array();
  const auto n = events_by_stage(run);
  std::vector<size_t> missing(run.num_stages(), 0);
  for (const EventHeader& m : run.missing) ++missing[static_cast<size_t>(m.stage)];
  for (size_t s = 0; s < run.recorded_stages; ++s)  // not the output's appended stage
      stages.push_back({{"name", run.stages[s].name},
                        {"kind", std::string(to_string(run.stages[s].kind))},
                        {"pass", run.stages[s].pass},
                        {"events", n[s]},
                        {"never_written", missing[s]}});
  nlohmann::json j;
  j["file"] = file;
  j["file_size"] = size;
  j["attention"] = run.attention;
  if (run.config) j["config"] = *run.config;
  if (run.tiling) j["tiling"] = *run.tiling;
  j["metadata"] = run.metadata;
  j["stages"] = stages;
  j["events"] = {{"recorded", run.recorded_events},
                 {"dropped", run.dropped_events},
                 {"requested", run.requested_events},
                 {"never_written", run.missing.size()}};
  // Inputs recorded as their recipe are not re-made for info: their pairs come from the recipe.
  const std::optional<GeneratedInputs> recipe = recipe_of(run);
  const auto& q_pairs = recipe ? recipe->q_pairs : run.inputs.q_pairs;
  const auto& kv_pairs = recipe ? recipe->kv_pairs : run.inputs.kv_pairs;
  j["inputs"] = {{"present", !q_pairs.empty()},
                 {"stored", recipe ? "seed" : run.inputs.q_pairs.empty() ? "none" : "values"},
                 {"query_heads", pairs_json(q_pairs)},
                 {"kv_heads", pairs_json(kv_pairs)},
                 {"dtype", q_pairs.empty() ? nlohmann::json(nullptr) : nlohmann::json(to_string(run.attention.dtype))}};
  j["output"] = {{"present", run.output.has_value()},
                 {"shape", run.output ? nlohmann::json(run.output->shape) : nlohmann::json(nullptr)},
                 {"lse", run.output_lse.has_value()}};
  return j;
}

std::string inputs_text(const RunView& run) {
  const std::string seed = meta(run, trace_meta::inputs_seed);
  if (!seed.empty()) {
    std::string s = "random, seed " + seed;
    const std::string dist = meta(run, "inputs_distribution"), scale = meta(run, "inputs_scale"),
                      preset = meta(run, "inputs_preset");
    if (!dist.empty()) s += " (" + dist + ", scale " + scale + ", preset " + preset + ")";
    if (recipe_of(run))
      s += "; not stored: re-made from the seed and checked against their SHA-256 when the trace is opened";
    return s;
  }
  const std::string files = meta(run, trace_meta::inputs_files);
  if (files.empty()) return "not recorded";
  const bool stored = meta(run, "inputs_stored") != "none";
  const auto names = nlohmann::json::parse(files, nullptr, false);
  const auto hashes = nlohmann::json::parse(meta(run, trace_meta::inputs_sha256), nullptr, false);
  if (!names.is_array()) return files;
  std::string s = "files";
  for (size_t i = 0; i < names.size(); ++i) {
    s += " " + (names[i].is_string() ? names[i].get<std::string>() : names[i].dump());
    if (hashes.is_array() && i < hashes.size() && hashes[i].is_string())
      s += " (sha256 " + hashes[i].get<std::string>().substr(0, 16) + "...)";
  }
  if (!stored) s += "; not stored in the trace";
  return s;
}

// Every field is made printable on its own (display_text.h): a value from the file stays on
// its line, whatever control characters or escape sequences it holds.
void print_text(const RunView& run, const std::string& file, uint64_t size) {
  std::string out;
  auto padded = [](std::string text, size_t width) {
    if (text.size() < width) text.append(width - text.size(), ' ');
    return text;
  };
  auto line = [&](const char* label, const std::string& text) {
    out += padded(label, 10) + " " + printable(text) + "\n";
  };
  line("file", file + " (" + bytes_text(size) + ", format " + meta(run, trace_meta::format) + ")");
  const std::string kernel = meta(run, trace_meta::kernel), name = meta(run, trace_meta::run);
  line("run", run.config ? config_text(*run.config)
                         : (kernel.empty() ? std::string("a kernel") : kernel) + (name.empty() ? "" : ", run " + name));
  line("attention", describe(run.attention));
  if (run.tiling) {
    const Tiling& t = *run.tiling;
    std::string tiling = "block_m " + std::to_string(t.block_m) + ", block_n " + std::to_string(t.block_n) + ": " +
                         count_of(t.num_q_tiles, "query tile") + " x " + count_of(t.num_kv_tiles, "kv tile");
    if (splits_kv(t.kernel))
      tiling += ", " + count_of(t.num_splits, "split") + " of " + count_of(t.kv_tiles_per_split, "kv tile");
    line("tiling", tiling);
  }
  std::string stage_list;
  for (size_t s = 0; s < run.recorded_stages; ++s)
      stage_list += (stage_list.empty() ? "" : ", ") + run.stages[s].name + " (" +
                    std::string(to_string(run.stages[s].kind)) + ", pass " + std::to_string(run.stages[s].pass) + ")";
  line("stages", stage_list);
  line("backend", meta(run, trace_meta::backend) + ": " + meta(run, trace_meta::device));
  line("inputs", inputs_text(run));
  std::string stored = run.inputs.q_pairs.empty()
                           ? std::string("no inputs")
                           : "inputs of " + count_of(static_cast<int64_t>(run.inputs.q_pairs.size()), "query head") + ":";
  for (size_t i = 0; i < run.inputs.q_pairs.size() && i < 8; ++i)
    stored += " (" + std::to_string(run.inputs.q_pairs[i][0]) + "," + std::to_string(run.inputs.q_pairs[i][1]) + ")";
  if (run.inputs.q_pairs.size() > 8) stored += " ...";
  if (!run.inputs.kv_pairs.empty())
    stored += " and of " + count_of(static_cast<int64_t>(run.inputs.kv_pairs.size()), "kv head");
  stored += run.output ? "; output " + shape_string(run.output->shape) + (run.output_lse ? " with its LSE" : "")
                       : "; no output";
  line("stored", stored);
  line("trace", "filter " + meta(run, trace_meta::trace_filter) + ", capacity " +
                    meta(run, "trace_capacity"));
  std::string events = events_by_stage_text(run) + " (" + std::to_string(run.recorded_events) + " recorded";
  if (run.dropped_events > 0)
    events += "; " + std::to_string(run.dropped_events) + " dropped because the trace buffer was full";
  if (!run.missing.empty())
    events += "; " + count_of(static_cast<int64_t>(run.missing.size()), "event") + " never written by the kernel";
  line("events", events + ")");
  // The kernels' time when the trace holds it (a recorder's trace of a user's program does not).
  const std::string elapsed = meta(run, "elapsed_ms");
  line("captured", meta(run, "captured_at") + " by " + meta(run, trace_meta::tool_version) +
                       (elapsed.empty() ? "" : ", kernels " + elapsed + " ms"));
  out += "metadata\n";
  for (const auto& [key, value] : run.metadata) out += "  " + padded(printable(key), 18) + " " + printable(value) + "\n";
  print_report(out);
}

void run(const InfoOptions& o) {
  OpenRunOptions open;
  open.remake_inputs = false;  // info describes the file: no GiB of inputs re-made for it
  const RunView view = open_run(o.file, open);
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(o.file, ec);
  if (o.json) print_json(info_json(view, o.file, size));
  else print_text(view, o.file, size);
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "info", "Show what a trace file holds: the attention, stages, capture, events by stage, inputs");
  cmd->add_option("file", o->file, "A trace file (*.trace.safetensors)")->required();
  cmd->add_flag("--json", o->json, "Print the same as JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace ts::cli
