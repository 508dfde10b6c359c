// `tilescope faults`: the fault variants tilescope can inject, the kernels each applies to,
// and the bug each reproduces.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli_common/report_output.h"
#include "base/attention_config.h"
#include "base/kernel_list.h"

namespace ts::cli {
namespace {

std::vector<std::string> kernel_names(const FaultInfo& f) {
  std::vector<std::string> out;
  for (KernelKind k : built_kernels())
    if (fault_applies(f.fault, k)) out.emplace_back(to_string(k));
  return out;
}

std::string kernels_of(const FaultInfo& f) {
  std::string s;
  for (const std::string& k : kernel_names(f)) s += (s.empty() ? "" : ", ") + k;
  return s;
}

void run(bool json) {
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const FaultInfo& f : all_faults()) {
      nlohmann::json kernels = nlohmann::json::array();
      for (const std::string& k : kernel_names(f)) kernels.push_back(k);
      list.push_back({{"name", f.name}, {"kernels", kernels}, {"description", f.description}});
    }
    print_json(list);
    return;
  }
  char line[512];
  std::string text;
  std::snprintf(line, sizeof line, "%-18s %-17s %s\n", "fault", "kernels", "what it reproduces");
  text += line;
  for (const FaultInfo& f : all_faults()) {
    std::snprintf(line, sizeof line, "%-18s %-17s ", std::string(f.name).c_str(), kernels_of(f).c_str());
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
