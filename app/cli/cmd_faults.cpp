// `tilescope faults`: the fault variants tilescope can inject, the kernels each applies to,
// and the bug each reproduces.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/report_output.h"
#include "base/attention_config.h"

namespace ts::cli {
namespace {

std::string kernels_of(const FaultInfo& f) {
  if (f.fa1 && f.splitk) return "fa1, splitk";
  return f.fa1 ? "fa1" : "splitk";
}

void run(bool json) {
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const FaultInfo& f : all_faults()) {
      nlohmann::json kernels = nlohmann::json::array();
      if (f.fa1) kernels.push_back("fa1");
      if (f.splitk) kernels.push_back("splitk");
      list.push_back({{"name", f.name}, {"kernels", kernels}, {"description", f.description}});
    }
    print_json(list);
    return;
  }
  char line[512];
  std::string text;
  std::snprintf(line, sizeof line, "%-18s %-12s %s\n", "fault", "kernels", "what it reproduces");
  text += line;
  for (const FaultInfo& f : all_faults()) {
    std::snprintf(line, sizeof line, "%-18s %-12s ", std::string(f.name).c_str(), kernels_of(f).c_str());
    text += line + std::string(f.description) + "\n";
  }
  text += "\nUse: tilescope capture --kernel KERNEL --fault NAME ... -o run.trace.safetensors\n";
  print_report(text);
}

}  // namespace

void add_faults_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("faults", "List the fault variants and the kernels they apply to");
  cmd->add_flag("--json", *json, "Print the list as JSON");
  cmd->callback([json] { run(*json); });
}

}  // namespace ts::cli
