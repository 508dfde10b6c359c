#include "app/model/capture/capture_metadata.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "app/model/capture/capture_error.h"

namespace ts {
namespace {

constexpr int64_t kOpenEnd = std::numeric_limits<int64_t>::max();

nlohmann::json range_json(int64_t begin, int64_t end) {
  return nlohmann::json::array({begin, end == kOpenEnd ? nlohmann::json(nullptr) : nlohmann::json(end)});
}

void range_from_json(const nlohmann::json& j, const char* key, int64_t& begin, int64_t& end) {
  const auto bad = [&] {
    return CaptureError(std::string("trace filter field '") + key +
                                 "' must be [begin, end or null] with 0 <= begin < end");
  };
  if (!j.contains(key)) throw bad();
  const nlohmann::json& r = j.at(key);
  if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() ||
      !(r[1].is_number_integer() || r[1].is_null()))
    throw bad();
  begin = r[0].get<int64_t>();
  end = r[1].is_null() ? kOpenEnd : r[1].get<int64_t>();
  if (begin < 0 || end <= begin) throw bad();
}

}  // namespace

nlohmann::json trace_filter_to_json(const TraceRequest& request) {
  const TraceFilter& f = request.filter;
  nlohmann::json stages = nlohmann::json::array();
  for (int s = 0; s < kNumStages; ++s)
    if (f.stage_mask & stage_bit(static_cast<Stage>(s))) stages.push_back(kStageNames[s]);
  return {{"enabled", request.enabled},
          {"batch", range_json(f.batch_begin, f.batch_end)},
          {"head", range_json(f.head_begin, f.head_end)},
          {"q_tile", range_json(f.q_tile_begin, f.q_tile_end)},
          {"stages", stages}};
}

TraceRequest trace_request_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw CaptureError("trace filter must be a JSON object");
  TraceRequest r;
  if (!j.contains("enabled") || !j.at("enabled").is_boolean())
    throw CaptureError("trace filter field 'enabled' must be a boolean");
  r.enabled = j.at("enabled").get<bool>();
  range_from_json(j, "batch", r.filter.batch_begin, r.filter.batch_end);
  range_from_json(j, "head", r.filter.head_begin, r.filter.head_end);
  range_from_json(j, "q_tile", r.filter.q_tile_begin, r.filter.q_tile_end);
  if (!j.contains("stages") || !j.at("stages").is_array())
    throw CaptureError("trace filter field 'stages' must be a list of stage names");
  std::string names;
  for (const auto& s : j.at("stages")) {
    if (!s.is_string())
      throw CaptureError("trace filter field 'stages' must be a list of stage names");
    names += (names.empty() ? "" : ",") + s.get<std::string>();
  }
  r.filter.stage_mask = names.empty() ? 0u : stage_mask_from_names(names);
  return r;
}

uint32_t stage_mask_from_names(std::string_view text) {
  uint32_t mask = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string_view name =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    bool found = false;
    for (int s = 0; s < kNumStages; ++s) {
      if (name == kStageNames[s]) {
        mask |= stage_bit(static_cast<Stage>(s));
        found = true;
      }
    }
    if (!found)
      throw CaptureError("unknown stage '" + std::string(name) +
                                  "' (stages: fa1.step, splitk.partial, splitk.reduce, final)");
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return mask;
}

std::string stage_mask_names(uint32_t mask) {
  std::string out;
  for (int s = 0; s < kNumStages; ++s)
    if (mask & stage_bit(static_cast<Stage>(s))) out += (out.empty() ? "" : ",") + std::string(kStageNames[s]);
  return out;
}

std::string exact_decimal(double x) { return nlohmann::json(x).dump(); }

}  // namespace ts
