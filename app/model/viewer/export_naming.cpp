#include "app/model/viewer/export_naming.h"

#include <cctype>

namespace ts {
namespace {

// Letters, digits, '.', '-' and '_' kept; anything else '_' (a name from a file or a stage table
// may hold spaces, slashes or control characters).
std::string file_safe(const std::string& s) {
  std::string out;
  for (const char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_';
  return out.empty() ? std::string("run") : out;
}

}  // namespace

std::string export_folder_name(const std::string& run_name, const RunView* run, std::optional<size_t> event) {
  std::string stem = run_name;
  for (const char* ext : {".trace.safetensors", ".safetensors"})
    if (stem.size() > std::string(ext).size() && stem.ends_with(ext)) {
      stem.resize(stem.size() - std::string(ext).size());
      break;
    }
  std::string name = file_safe(stem);
  if (run && event && *event < run->num_events()) {
    const EventHeader& h = run->headers[*event];
    if (h.stage >= 0 && static_cast<size_t>(h.stage) < run->num_stages())
      name += "_" + file_safe(run->stages[static_cast<size_t>(h.stage)].name);
    name += "_b" + std::to_string(h.batch) + "_h" + std::to_string(h.head) + "_q" + std::to_string(h.q_begin);
    name += h.split >= 0 ? "_s" + std::to_string(h.split) : "_t" + std::to_string(h.step);
  }
  return name;
}

std::filesystem::path unused_path(const std::filesystem::path& wanted) {
  std::error_code ec;
  if (!std::filesystem::exists(wanted, ec)) return wanted;
  for (int k = 2;; ++k) {
    std::filesystem::path p = wanted;
    p += "-" + std::to_string(k);
    if (!std::filesystem::exists(p, ec)) return p;
  }
}

}  // namespace ts
