#include "instrumentation/trace/trace_event.h"

#include <algorithm>
#include <array>
#include <set>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

namespace ts {
namespace {

constexpr std::array<std::pair<std::string_view, StageKind>, 3> kKindNames{
    {{"state", StageKind::state}, {"merge", StageKind::merge}, {"final", StageKind::final}}};
// The largest pass a stage may declare; the Python package states it again
// (tilescope.trace.MAX_STAGE_PASS), and both languages' tests check the boundary.
constexpr int32_t kMaxStagePass = 1000;

}  // namespace

std::string_view to_string(StageKind kind) {
  for (const auto& [name, k] : kKindNames)
    if (k == kind) return name;
  return "?";
}

std::optional<StageKind> stage_kind_from_name(std::string_view name) {
  for (const auto& [n, k] : kKindNames)
    if (n == name) return k;
  return std::nullopt;
}

int32_t default_pass(StageKind kind, const std::vector<StageInfo>& others) {
  switch (kind) {
    case StageKind::state: return 0;
    case StageKind::merge: return 1;
    case StageKind::final: {
      int32_t pass = 0;
      for (const StageInfo& s : others)
        if (s.kind != StageKind::final) pass = std::max(pass, s.pass);
      return pass;
    }
  }
  return 0;
}

std::string stage_table_json(const std::vector<StageInfo>& stages) {
  nlohmann::json j = nlohmann::json::array();
  for (const StageInfo& s : stages) {
    j.push_back({{"name", s.name}, {"kind", std::string(to_string(s.kind))}, {"pass", s.pass}});
    if (s.p_rounded) j.back()["p_rounded"] = true;
    if (s.exp2_folded) j.back()["exp2_folded"] = true;
  }
  return j.dump();
}

std::vector<StageInfo> parse_stage_table(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array())
    throw std::invalid_argument("the stage table is not a JSON list");
  if (j.empty()) throw std::invalid_argument("the stage table is empty");
  if (j.size() > kMaxStages)
    throw std::invalid_argument("the stage table declares " + std::to_string(j.size()) +
                                " stages; at most " + std::to_string(kMaxStages) + " are allowed");
  std::vector<StageInfo> out;
  std::vector<bool> pass_given;
  std::set<std::string> names;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& e = j[i];
    const std::string where = "stage " + std::to_string(i);
    if (!e.is_object()) throw std::invalid_argument(where + " is not a JSON object");
    if (!e.contains("name") || !e["name"].is_string())
      throw std::invalid_argument(where + " has no name (a string)");
    StageInfo s;
    s.name = e["name"].get<std::string>();
    if (s.name.empty() || s.name.size() > kMaxStageNameBytes)
      throw std::invalid_argument(where + "'s name must be 1 to " +
                                  std::to_string(kMaxStageNameBytes) + " bytes");
    for (unsigned char c : s.name)
      if (c < 0x20 || c == 0x7f)
        throw std::invalid_argument(where + "'s name holds a control character");
    if (!names.insert(s.name).second)
      throw std::invalid_argument("stage name '" + s.name + "' is declared twice");
    if (!e.contains("kind") || !e["kind"].is_string())
      throw std::invalid_argument(where + " ('" + s.name + "') has no kind (state, merge, final)");
    const auto kind = stage_kind_from_name(e["kind"].get<std::string>());
    if (!kind)
      throw std::invalid_argument(where + " ('" + s.name + "') has an unknown kind '" +
                                  e["kind"].get<std::string>() + "' (state, merge, final)");
    s.kind = *kind;
    const bool has_pass = e.contains("pass");
    if (has_pass) {
      const auto& p = e["pass"];
      const bool in_range = p.is_number_unsigned() ? p.get<uint64_t>() <= kMaxStagePass
                            : p.is_number_integer() ? p.get<int64_t>() >= 0 && p.get<int64_t>() <= kMaxStagePass
                                                    : false;
      if (!in_range)
        throw std::invalid_argument(where + " ('" + s.name + "') has a pass that is not an integer in [0, " +
                                    std::to_string(kMaxStagePass) + "]");
      s.pass = static_cast<int32_t>(e["pass"].get<int64_t>());
    }
    for (const auto& [key, flag] : {std::pair{"p_rounded", &s.p_rounded}, std::pair{"exp2_folded", &s.exp2_folded}})
      if (e.contains(key)) {
        if (!e[key].is_boolean())
          throw std::invalid_argument(where + " ('" + s.name + "') has a " + key + " that is not true or false");
        *flag = e[key].get<bool>();
      }
    out.push_back(std::move(s));
    pass_given.push_back(has_pass);
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (!pass_given[i] && out[i].kind != StageKind::final) out[i].pass = default_pass(out[i].kind, out);
  for (size_t i = 0; i < out.size(); ++i)
    if (!pass_given[i] && out[i].kind == StageKind::final) out[i].pass = default_pass(out[i].kind, out);
  return out;
}

std::string convention_name(int32_t bits) {
  const bool normalized = (bits & kNormalized) != 0;
  std::string s = normalized ? "normalized" : "unnormalized";
  if (bits & kLogBase2) s += normalized ? ", base-2 LSE" : ", base-2 max";
  if (bits & kUnscaledMax) s += ", max of unscaled scores";
  if (bits & kNoMax) s += normalized ? ", no LSE" : ", no max";
  if (bits & ~kConventionMask) s += ", unknown bits " + std::to_string(bits & ~kConventionMask);
  return s;
}

}  // namespace ts
