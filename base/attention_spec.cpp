#include "base/attention_spec.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/config_error.h"

namespace ts {
namespace {

constexpr std::array<std::pair<std::string_view, CausalAlign>, 3> kCausalNames{
    {{"none", CausalAlign::none},
     {"bottom_right", CausalAlign::bottom_right},
     {"top_left", CausalAlign::top_left}}};

// Sizes beyond these are refused: a description read from a file must not make the reference
// allocate without bound (the analysis also bounds its work: app/model/analysis).
constexpr int64_t kMaxBatch = 1 << 20;
constexpr int64_t kMaxHeads = 1 << 16;
constexpr int64_t kMaxSeq = INT32_MAX;  // key and query indices are int32 in events
constexpr int64_t kMaxHeadDim = 1024;

void check_range(const char* field, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi)
    throw ConfigError(field, std::string(field) + " must be in [" + std::to_string(lo) + ", " +
                                 std::to_string(hi) + "] (got " + std::to_string(value) + ")");
}

}  // namespace

std::string_view to_string(CausalAlign a) {
  for (const auto& [name, v] : kCausalNames)
    if (v == a) return name;
  return "?";
}

std::optional<CausalAlign> causal_from_name(std::string_view name) {
  for (const auto& [n, v] : kCausalNames)
    if (n == name) return v;
  return std::nullopt;
}

double AttentionSpec::effective_scale() const {
  return scale > 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

AttentionSpec::KeySpan AttentionSpec::visible_keys(int64_t b, int64_t i) const {
  if (i < 0 || i >= q_len(b)) return {0, 0};
  return mask_keys(b, i);
}

AttentionSpec::KeySpan AttentionSpec::mask_keys(int64_t b, int64_t i) const {
  return visible_key_span(i + offset(b), kv_len(b), causal != CausalAlign::none, window_left, window_right);
}

void validate(const AttentionSpec& s) {
  check_range("batch", s.batch, 1, kMaxBatch);
  check_range("heads_q", s.heads_q, 1, kMaxHeads);
  check_range("heads_kv", s.heads_kv, 1, s.heads_q);
  if (s.heads_q % s.heads_kv != 0)
    throw ConfigError("heads_kv", "heads_q (" + std::to_string(s.heads_q) +
                                      ") must be a multiple of heads_kv (" +
                                      std::to_string(s.heads_kv) + ")");
  check_range("seq_q", s.seq_q, 1, kMaxSeq);
  check_range("seq_kv", s.seq_kv, 1, kMaxSeq);
  check_range("head_dim", s.head_dim, 1, kMaxHeadDim);
  if (!std::isfinite(s.scale) || s.scale < 0.0)
    throw ConfigError("scale", "the softmax scale must be finite and >= 0 (0: 1/sqrt(head_dim))");
  if (!std::isfinite(s.softcap) || s.softcap < 0.0)
    throw ConfigError("softcap", "the softcap must be finite and >= 0 (0: off)");
  check_range("window_left", s.window_left, -1, kMaxSeq);
  check_range("window_right", s.window_right, -1, kMaxSeq);
  auto check_lens = [&](const char* field, const std::vector<int64_t>& lens, int64_t seq) {
    if (lens.empty()) return;
    if (static_cast<int64_t>(lens.size()) != s.batch)
      throw ConfigError(field, std::string(field) + " holds " + std::to_string(lens.size()) +
                                   " lengths; the batch has " + std::to_string(s.batch));
    for (size_t b = 0; b < lens.size(); ++b)
      if (lens[b] < 0 || lens[b] > seq)
        throw ConfigError(field, std::string(field) + "[" + std::to_string(b) + "] = " +
                                     std::to_string(lens[b]) + " is outside [0, " +
                                     std::to_string(seq) + "]");
  };
  check_lens("q_lens", s.q_lens, s.seq_q);
  check_lens("kv_lens", s.kv_lens, s.seq_kv);
  if (!s.alibi_slopes.empty()) {
    if (static_cast<int64_t>(s.alibi_slopes.size()) != s.heads_q)
      throw ConfigError("alibi_slopes", "alibi_slopes holds " +
                                            std::to_string(s.alibi_slopes.size()) +
                                            " slopes; there are " + std::to_string(s.heads_q) +
                                            " query heads");
    for (double slope : s.alibi_slopes)
      if (!std::isfinite(slope))
        throw ConfigError("alibi_slopes", "alibi_slopes must be finite");
  }
  // The largest tensor's element count must fit int64 with room to spare.
  constexpr int64_t kMaxElements = int64_t{1} << 50;
  auto checked = [&](const char* what, std::initializer_list<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims) {
      if (p > kMaxElements / d)
        throw ConfigError(what, std::string("the ") + what + " tensor would hold more than 2^50 elements");
      p *= d;
    }
  };
  checked("q", {s.batch, s.heads_q, s.seq_q, s.head_dim});
  checked("kv", {s.batch, s.heads_kv, s.seq_kv, s.head_dim});
}

std::string describe(const AttentionSpec& s) {
  std::string out = "batch " + std::to_string(s.batch) + ", ";
  if (s.heads_kv == s.heads_q)
    out += std::to_string(s.heads_q) + (s.heads_q == 1 ? " head" : " heads");
  else
    out += std::to_string(s.heads_q) + " query heads on " + std::to_string(s.heads_kv) + " kv " +
           (s.heads_kv == 1 ? "head" : "heads");
  out += ", " + std::to_string(s.seq_q) + " x " + std::to_string(s.seq_kv) + " keys, head dim " +
         std::to_string(s.head_dim) + ", " + std::string(to_string(s.dtype));
  if (s.causal == CausalAlign::bottom_right) out += ", causal (bottom-right)";
  if (s.causal == CausalAlign::top_left) out += ", causal (top-left)";
  if (s.has_window())
    out += ", window (" + std::to_string(s.window_left) + ", " + std::to_string(s.window_right) + ")";
  if (s.softcap > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s.softcap);
    out += std::string(", softcap ") + buf;
  }
  if (!s.q_lens.empty() || !s.kv_lens.empty()) out += ", per-batch lengths";
  if (!s.alibi_slopes.empty()) out += ", ALiBi";
  if (s.scale > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s.scale);
    out += std::string(", scale ") + buf;
  }
  return out;
}

void to_json(nlohmann::json& j, const AttentionSpec& s) {
  j = nlohmann::json{{"batch", s.batch},
                     {"heads_q", s.heads_q},
                     {"heads_kv", s.heads_kv},
                     {"seq_q", s.seq_q},
                     {"seq_kv", s.seq_kv},
                     {"head_dim", s.head_dim},
                     {"dtype", to_string(s.dtype)},
                     {"scale", s.scale},
                     {"causal", to_string(s.causal)},
                     {"window_left", s.window_left},
                     {"window_right", s.window_right},
                     {"softcap", s.softcap},
                     {"q_lens", s.q_lens},
                     {"kv_lens", s.kv_lens},
                     {"alibi_slopes", s.alibi_slopes}};
}

void from_json(const nlohmann::json& j, AttentionSpec& out) {
  if (!j.is_object()) throw ConfigError("attention", "the attention description must be a JSON object");
  AttentionSpec s;
  auto integer = [&](const char* key, int64_t& field, bool required) {
    if (!j.contains(key)) {
      if (required) throw ConfigError(key, std::string("attention field '") + key + "' is missing");
      return;
    }
    const auto& v = j.at(key);
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
      throw ConfigError(key, std::string("attention field '") + key + "' must be an integer");
    field = v.get<int64_t>();
  };
  auto number = [&](const char* key, double& field) {
    if (!j.contains(key)) return;
    if (!j.at(key).is_number())
      throw ConfigError(key, std::string("attention field '") + key + "' must be a number");
    field = j.at(key).get<double>();
  };
  integer("batch", s.batch, true);
  integer("heads_q", s.heads_q, true);
  s.heads_kv = s.heads_q;
  integer("heads_kv", s.heads_kv, false);
  integer("seq_q", s.seq_q, true);
  integer("seq_kv", s.seq_kv, true);
  integer("head_dim", s.head_dim, true);
  if (!j.contains("dtype") || !j.at("dtype").is_string())
    throw ConfigError("dtype", "attention field 'dtype' must be a string (fp32, fp16, bf16)");
  const auto dtype = dtype_from_name(j.at("dtype").get<std::string>());
  if (!dtype) throw ConfigError("dtype", "unknown dtype in the attention description (fp32, fp16, bf16)");
  s.dtype = *dtype;
  number("scale", s.scale);
  if (j.contains("causal")) {
    const auto& c = j.at("causal");
    if (c.is_boolean()) {
      s.causal = c.get<bool>() ? CausalAlign::bottom_right : CausalAlign::none;
    } else if (c.is_string()) {
      const auto a = causal_from_name(c.get<std::string>());
      if (!a) throw ConfigError("causal", "attention field 'causal' must be none, bottom_right or top_left");
      s.causal = *a;
    } else {
      throw ConfigError("causal", "attention field 'causal' must be a string or a boolean");
    }
  }
  integer("window_left", s.window_left, false);
  integer("window_right", s.window_right, false);
  number("softcap", s.softcap);
  auto int_list = [&](const char* key, std::vector<int64_t>& field) {
    if (!j.contains(key) || j.at(key).is_null()) return;
    const auto& a = j.at(key);
    if (!a.is_array() || a.size() > static_cast<size_t>(kMaxBatch))
      throw ConfigError(key, std::string("attention field '") + key + "' must be a list of integers");
    for (const auto& v : a) {
      if (!v.is_number_integer() ||
          (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
        throw ConfigError(key, std::string("attention field '") + key + "' must be a list of integers");
      field.push_back(v.get<int64_t>());
    }
  };
  int_list("q_lens", s.q_lens);
  int_list("kv_lens", s.kv_lens);
  if (j.contains("alibi_slopes") && !j.at("alibi_slopes").is_null()) {
    const auto& a = j.at("alibi_slopes");
    if (!a.is_array() || a.size() > static_cast<size_t>(kMaxHeads))
      throw ConfigError("alibi_slopes", "attention field 'alibi_slopes' must be a list of numbers");
    for (const auto& v : a) {
      if (!v.is_number())
        throw ConfigError("alibi_slopes", "attention field 'alibi_slopes' must be a list of numbers");
      s.alibi_slopes.push_back(v.get<double>());
    }
  }
  validate(s);
  out = std::move(s);
}

}  // namespace ts
