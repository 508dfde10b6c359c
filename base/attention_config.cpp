#include "base/attention_config.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/kernel_list.h"

namespace ts {
namespace {

constexpr std::array<FaultInfo, 9> kFaults{{
    {Fault::none, "none", "the correct kernel", true, true, true, true},
    {Fault::double_count_l, "double_count_l",
     "the Split-K reduce weights each split by its local sum l again (sums double-counted)",
     false, true, false, true},
    {Fault::masked_nan, "masked_nan",
     "no guard for a fully masked tile or split under causal masking: exp(-inf - -inf) gives NaN",
     true, true, true, true},
    {Fault::empty_split, "empty_split",
     "more splits than kv tiles; an empty split exits without writing its state, and the reduce "
     "reads the unset (NaN) partials",
     false, true, false, true},
    {Fault::partial_layout, "partial_layout",
     "the reducer's query stride in the partial buffers forgets the split count: query 0 is right, "
     "later queries read other queries' partials",
     false, true, false, true},
    {Fault::per_tile_softmax, "per_tile_softmax",
     "FA-1 or FA-2 (and splitk2's partial) without online rescaling: each kv tile's softmax is used "
     "as is, right for one tile, wrong after",
     true, false, true, true},
    {Fault::stale_accumulator, "stale_accumulator",
     "the P.V accumulator is not cleared between kv tiles: O is right after one tile, wrong after "
     "(m and l stay right)",
     true, true, true, true},
    {Fault::missing_barrier, "missing_barrier",
     "a barrier missing between threads' shared-memory stores and other threads' reads (a race): "
     "FA-1's before a K/V tile is overwritten by the next (slower threads read the next tile's "
     "values), Split-K's between the softmax's stores of P and the P V step's reads (lanes read "
     "scores, not P)",
     true, true, false, false},
    {Fault::fragment_rows, "fragment_rows",
     "FA-2's store of its accumulators (the final output; splitk2's partial state) exchanges the mma "
     "accumulator's row halves (c0,c1 and c2,c3): row r of each 16-row mma block gets row r xor 8's",
     false, false, true, true},
}};
template <typename Enum, size_t N>
std::optional<Enum> lookup(std::string_view name,
                           const std::array<std::pair<std::string_view, Enum>, N>& table) {
  for (const auto& [n, e] : table)
    if (n == name) return e;
  return std::nullopt;
}

constexpr std::array<std::pair<std::string_view, KernelKind>, 4> kKernelNames{{{"fa1", KernelKind::fa1},
                                                                            {"splitk", KernelKind::splitk},
                                                                            {"fa2", KernelKind::fa2},
                                                                            {"splitk2", KernelKind::splitk2}}};
constexpr std::array<std::pair<std::string_view, KernelKind>, 4> kKernelDescriptions{
    {{"one pass, online softmax", KernelKind::fa1},
     {"partial pass over kv splits + log-sum-exp reduce", KernelKind::splitk},
     {"fa1's pass on tensor cores", KernelKind::fa2},
     {"Split-K with FA-2's partial on tensor cores", KernelKind::splitk2}}};
constexpr std::array<std::pair<std::string_view, Backend>, 3> kBackendNames{
    {{"cpu", Backend::cpu}, {"gpu", Backend::gpu}, {"auto", Backend::auto_}}};

template <typename Enum, size_t N>
std::string_view name_of(Enum e, const std::array<std::pair<std::string_view, Enum>, N>& table) {
  for (const auto& [n, v] : table)
    if (v == e) return n;
  return "?";
}

void check_positive(const char* field, int64_t value, int64_t limit) {
  if (value < 1)
    throw ConfigError(field, std::string(field) + " must be at least 1 (got " +
                                 std::to_string(value) + ")");
  if (value > limit)
    throw ConfigError(field, std::string(field) + " must be at most " + std::to_string(limit) +
                                 " (got " + std::to_string(value) + ")");
}

}  // namespace

std::span<const FaultInfo> all_faults() { return kFaults; }

const FaultInfo& fault_info(Fault fault) {
  for (const auto& f : kFaults)
    if (f.fault == fault) return f;
  return kFaults[0];
}

std::optional<Fault> fault_from_name(std::string_view name) {
  for (const auto& f : kFaults)
    if (f.name == name) return f.fault;
  return std::nullopt;
}

bool fault_applies(Fault fault, KernelKind kernel) {
  const FaultInfo& f = fault_info(fault);
  switch (kernel) {
    case KernelKind::fa1: return f.fa1;
    case KernelKind::splitk: return f.splitk;
    case KernelKind::fa2: return f.fa2;
    case KernelKind::splitk2: return f.splitk2;
  }
  return false;
}

std::string fault_refusal(Fault fault, KernelKind kernel) {
  if (fault_applies(fault, kernel)) return {};
  const std::string head = "fault '" + std::string(to_string(fault)) + "' does not apply to the " +
                           std::string(to_string(kernel)) + " kernel";
  if (fault == Fault::missing_barrier && (kernel == KernelKind::fa2 || kernel == KernelKind::splitk2))
    return head + ": FA-2's pass (splitk2's partial is FA-2's too) fills its K/V tiles by cp.async, which the "
                  "CPU runtime lands only at the wait, after the next barrier, so the race could not show "
                  "there (kernels/fa2_forward.cuh)";
  return head;
}

std::string_view to_string(KernelKind kind) { return name_of(kind, kKernelNames); }
bool splits_kv(KernelKind kind) { return kind == KernelKind::splitk || kind == KernelKind::splitk2; }
std::string_view kernel_description(KernelKind kind) { return name_of(kind, kKernelDescriptions); }
std::string_view to_string(Backend backend) { return name_of(backend, kBackendNames); }
std::string_view to_string(Fault fault) { return fault_info(fault).name; }
std::optional<KernelKind> kernel_from_name(std::string_view n) { return lookup(n, kKernelNames); }
std::optional<Backend> backend_from_name(std::string_view n) { return lookup(n, kBackendNames); }


double AttentionConfig::effective_scale() const {
  return softmax_scale > 0.0 ? softmax_scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

namespace {
constexpr int64_t kMaxDim = int64_t{1} << 30;
}  // namespace

void validate_heads_kv(int64_t heads, int64_t heads_kv) {
  if (heads_kv < 0 || heads_kv > heads || (heads_kv > 0 && heads % heads_kv != 0))
    throw ConfigError("heads_kv", "heads_kv must divide heads (" + std::to_string(heads) +
                                      "), or be 0 for as many kv heads as heads (got " +
                                      std::to_string(heads_kv) + ")");
}

void validate_window(int64_t window_left, int64_t window_right) {
  for (const auto& [field, value] : {std::pair{"window_left", window_left}, std::pair{"window_right", window_right}})
    if (value < -1 || value > kMaxDim)
      throw ConfigError(field, std::string(field) + " must be -1 (unbounded) or in [0, 2^30] (got " +
                                   std::to_string(value) + ")");
}

// The kernels compute in float32: a softcap or scale they are handed must be 0 (its default) or
// a normal float32 there, not one that the conversion turns into inf, 0 or a subnormal.
bool zero_or_normal_float32(double value) {
  return value == 0.0 || (value >= std::numeric_limits<float>::min() && value <= std::numeric_limits<float>::max());
}

// The value as given: JSON would write a non-finite one as null.
std::string given_number(double value) {
  return std::isnan(value)   ? "nan"
         : std::isinf(value) ? (value > 0 ? "inf" : "-inf")
                             : nlohmann::json(value).dump();
}

void validate_softcap(double softcap) {
  if (!zero_or_normal_float32(softcap))
    throw ConfigError("softcap", "softcap must be 0 (off) or a finite positive float32 (got " + given_number(softcap) + ")");
}

void validate(const AttentionConfig& c) {
  check_positive("batch", c.batch, 65535);
  check_positive("heads", c.heads, 65535);
  validate_heads_kv(c.heads, c.heads_kv);
  validate_window(c.window_left, c.window_right);
  validate_softcap(c.softcap);
  check_positive("seq_q", c.seq_q, kMaxDim);
  check_positive("seq_kv", c.seq_kv, kMaxDim);
  if (c.num_splits < 0)
    throw ConfigError("num_splits", "num_splits must be at least 1, or 0 for the heuristic (got " +
                                        std::to_string(c.num_splits) + ")");
  if (c.num_splits > 1024)
    throw ConfigError("num_splits",
                      "num_splits must be at most 1024 (got " + std::to_string(c.num_splits) + ")");
  if (!splits_kv(c.kernel) && c.num_splits > 1)
    throw ConfigError("num_splits", "num_splits applies to the splitk and splitk2 kernels only (" +
                                        std::string(to_string(c.kernel)) + " got " +
                                        std::to_string(c.num_splits) + ")");
  if (!fault_applies(c.fault, c.kernel)) throw ConfigError("fault", fault_refusal(c.fault, c.kernel));
  validate_kernel_build(c.kernel, c.dtype, c.head_dim);
  if (!zero_or_normal_float32(c.softmax_scale))
    throw ConfigError("softmax_scale", "softmax_scale must be 0 (1/sqrt(head_dim)) or a finite positive float32 (got " +
                                           given_number(c.softmax_scale) + ")");

  // Element counts of the largest tensor must fit the kernels' 32-bit in-tensor offsets.
  constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max();
  auto checked_product = [&](const char* what, std::initializer_list<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims) {
      if (p > kMaxElements / d)
        throw ConfigError(what, std::string("the ") + what +
                                    " tensor would hold more than 2^31-1 elements; reduce batch, "
                                    "heads, sequence length or head_dim");
      p *= d;
    }
    return p;
  };
  checked_product("q", {c.batch, c.heads, c.seq_q, c.head_dim});
  checked_product("kv", {c.batch, c.kv_heads(), c.seq_kv, c.head_dim});
}

AttentionSpec attention_spec(const AttentionConfig& c) {
  AttentionSpec s;
  s.batch = c.batch;
  s.heads_q = c.heads;
  s.heads_kv = c.kv_heads();
  s.seq_q = c.seq_q;
  s.seq_kv = c.seq_kv;
  s.head_dim = c.head_dim;
  s.dtype = c.dtype;
  s.scale = c.softmax_scale;
  s.causal = c.causal ? CausalAlign::bottom_right : CausalAlign::none;
  s.window_left = c.window_left;
  s.window_right = c.window_right;
  s.softcap = c.softcap;
  return s;
}

std::optional<std::pair<int64_t, int64_t>> window_from_text(std::string_view text) {
  const size_t comma = text.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  auto bound = [](std::string_view t) -> std::optional<int64_t> {
    int64_t v = 0;
    const auto [end, err] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || err != std::errc() || end != t.data() + t.size() || v < -1) return std::nullopt;
    return v;
  };
  const auto left = bound(text.substr(0, comma)), right = bound(text.substr(comma + 1));
  if (!left || !right) return std::nullopt;
  return std::pair{*left, *right};
}

std::string window_text(int64_t window_left, int64_t window_right) {
  return std::to_string(window_left) + "," + std::to_string(window_right);
}

void to_json(nlohmann::json& j, const AttentionConfig& c) {
  j = nlohmann::json{{"kernel", to_string(c.kernel)},
                     {"fault", to_string(c.fault)},
                     {"batch", c.batch},
                     {"heads", c.heads},
                     {"heads_kv", c.heads_kv},
                     {"seq_q", c.seq_q},
                     {"seq_kv", c.seq_kv},
                     {"head_dim", c.head_dim},
                     {"dtype", to_string(c.dtype)},
                     {"causal", c.causal},
                     {"window_left", c.window_left},
                     {"window_right", c.window_right},
                     {"softcap", c.softcap},
                     {"num_splits", c.num_splits},
                     {"softmax_scale", c.softmax_scale}};
}

void from_json(const nlohmann::json& j, AttentionConfig& c) {
  if (!j.is_object()) throw ConfigError("config", "config must be a JSON object");
  auto str = [&](const char* key) -> std::string {
    if (!j.contains(key) || !j.at(key).is_string())
      throw ConfigError(key, std::string("config field '") + key + "' must be a string");
    return j.at(key).get<std::string>();
  };
  auto integer = [&](const char* key) -> int64_t {
    if (!j.contains(key) || !j.at(key).is_number_integer())
      throw ConfigError(key, std::string("config field '") + key + "' must be an integer");
    return j.at(key).get<int64_t>();
  };
  AttentionConfig out;
  auto kernel = kernel_from_name(str("kernel"));
  if (!kernel) throw ConfigError("kernel", "unknown kernel '" + str("kernel") + "' (fa1, splitk, fa2, splitk2)");
  out.kernel = *kernel;
  auto fault = fault_from_name(str("fault"));
  if (!fault) throw ConfigError("fault", "unknown fault '" + str("fault") + "'");
  out.fault = *fault;
  auto dtype = dtype_from_name(str("dtype"));
  if (!dtype) throw ConfigError("dtype", "unknown dtype '" + str("dtype") + "' (fp32, fp16, bf16)");
  out.dtype = *dtype;
  out.batch = integer("batch");
  out.heads = integer("heads");
  out.seq_q = integer("seq_q");
  out.seq_kv = integer("seq_kv");
  out.head_dim = integer("head_dim");
  out.num_splits = integer("num_splits");
  if (!j.contains("causal") || !j.at("causal").is_boolean())
    throw ConfigError("causal", "config field 'causal' must be a boolean");
  out.causal = j.at("causal").get<bool>();
  if (!j.contains("softmax_scale") || !j.at("softmax_scale").is_number())
    throw ConfigError("softmax_scale", "config field 'softmax_scale' must be a number");
  out.softmax_scale = j.at("softmax_scale").get<double>();
  // Fields added after format 2's first traces: absent in older files, which ran without them.
  auto optional_integer = [&](const char* key, int64_t fallback) {
    return j.contains(key) ? integer(key) : fallback;
  };
  out.heads_kv = optional_integer("heads_kv", 0);
  out.window_left = optional_integer("window_left", -1);
  out.window_right = optional_integer("window_right", -1);
  if (j.contains("softcap")) {
    if (!j.at("softcap").is_number()) throw ConfigError("softcap", "config field 'softcap' must be a number");
    out.softcap = j.at("softcap").get<double>();
  }
  c = out;
}

}  // namespace ts
