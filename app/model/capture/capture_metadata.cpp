#include "app/model/capture/capture_metadata.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "app/model/capture/capture_error.h"

namespace ts {
namespace {

constexpr int32_t kOpenEnd = INT32_MAX;

nlohmann::json range_json(int32_t begin, int32_t end) {
  return nlohmann::json::array({begin, end == kOpenEnd ? nlohmann::json(nullptr) : nlohmann::json(end)});
}

void range_from_json(const nlohmann::json& j, const char* key, int32_t& begin, int32_t& end) {
  const auto bad = [&] {
    return CaptureError(std::string("trace filter field '") + key +
                        "' must be [begin, end or null] with 0 <= begin < end < 2^31");
  };
  if (!j.contains(key)) throw bad();
  const nlohmann::json& r = j.at(key);
  const auto small = [](const nlohmann::json& v) {
    return v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > INT32_MAX) &&
           v.get<int64_t>() >= 0 && v.get<int64_t>() <= INT32_MAX;
  };
  if (!r.is_array() || r.size() != 2 || !small(r[0]) || !(small(r[1]) || r[1].is_null())) throw bad();
  begin = static_cast<int32_t>(r[0].get<int64_t>());
  end = r[1].is_null() ? kOpenEnd : static_cast<int32_t>(r[1].get<int64_t>());
  if (end <= begin) throw bad();
}

std::string table_names(const std::vector<StageInfo>& stages) {
  std::string out;
  for (const StageInfo& s : stages) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

}  // namespace

uint64_t all_stages_mask(const std::vector<StageInfo>& stages) {
  return stages.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << stages.size()) - 1;
}

nlohmann::json trace_filter_to_json(const TraceRequest& request, const std::vector<StageInfo>& stage_table) {
  const TraceFilter& f = request.filter;
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < stage_table.size() && s < 64; ++s)
    if ((f.stage_mask >> s) & 1u) stages.push_back(stage_table[s].name);
  return {{"enabled", request.enabled},
          {"batch", range_json(f.batch_begin, f.batch_end)},
          {"head", range_json(f.head_begin, f.head_end)},
          {"queries", range_json(f.query_begin, f.query_end)},
          {"stages", stages}};
}

TraceRequest trace_request_from_json(const nlohmann::json& j, const std::vector<StageInfo>& stage_table) {
  if (!j.is_object()) throw CaptureError("trace filter must be a JSON object");
  TraceRequest r;
  if (!j.contains("enabled") || !j.at("enabled").is_boolean())
    throw CaptureError("trace filter field 'enabled' must be a boolean");
  r.enabled = j.at("enabled").get<bool>();
  range_from_json(j, "batch", r.filter.batch_begin, r.filter.batch_end);
  range_from_json(j, "head", r.filter.head_begin, r.filter.head_end);
  range_from_json(j, "queries", r.filter.query_begin, r.filter.query_end);
  if (!j.contains("stages") || !j.at("stages").is_array())
    throw CaptureError("trace filter field 'stages' must be a list of stage names");
  std::string names;
  for (const auto& s : j.at("stages")) {
    if (!s.is_string()) throw CaptureError("trace filter field 'stages' must be a list of stage names");
    names += (names.empty() ? "" : ",") + s.get<std::string>();
  }
  r.filter.stage_mask = names.empty() ? 0u : stage_mask_from_names(names, stage_table);
  return r;
}

uint64_t stage_mask_from_names(std::string_view text, const std::vector<StageInfo>& stages) {
  uint64_t mask = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string_view name = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    // Blanks around a name, as around an index range's numbers: "final, splitk.reduce".
    while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (name.empty())
      throw CaptureError(std::string(text.find_first_not_of(" \t,") == std::string_view::npos ? "no stage named"
                                                                                                : "an empty stage name") +
                         " in the stage list '" + std::string(text) + "' (this kernel's stages: " + table_names(stages) +
                         ")");
    bool found = false;
    for (size_t s = 0; s < stages.size() && s < 64; ++s)
      if (name == stages[s].name) {
        mask |= uint64_t{1} << s;
        found = true;
      }
    if (!found)
      throw CaptureError("unknown stage '" + std::string(name) + "' (this kernel's stages: " + table_names(stages) + ")");
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return mask;
}

std::string stage_mask_names(uint64_t mask, const std::vector<StageInfo>& stages) {
  std::string out;
  for (size_t s = 0; s < stages.size() && s < 64; ++s)
    if ((mask >> s) & 1u) out += (out.empty() ? "" : ",") + stages[s].name;
  return out;
}

std::string exact_decimal(double x) { return nlohmann::json(x).dump(); }

}  // namespace ts
