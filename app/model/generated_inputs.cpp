#include "app/model/generated_inputs.h"

#include <algorithm>
#include <charconv>
#include <span>
#include <cmath>
#include <thread>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/tensor_files.h"

namespace ts {
namespace {

constexpr const char* kTensorNames[3] = {"q", "k", "v"};

std::string decimal(double x) { return nlohmann::json(x).dump(); }  // reads back to the same value

[[noreturn]] void damaged(const std::string& what) {
  throw InputsRecipeError("the trace's inputs are recorded as their generator's spec, but " + what +
                          "; re-capture with --store-inputs to keep the inputs themselves");
}

const std::string& required(const std::map<std::string, std::string>& m, std::string_view key) {
  const auto it = m.find(std::string(key));
  if (it == m.end()) damaged("metadata key '" + std::string(key) + "' is missing");
  return it->second;
}

std::vector<std::array<int32_t, 2>> pairs_from(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_array()) damaged(std::string("inputs_generated has no list '") + key + "'");
  std::vector<std::array<int32_t, 2>> out;
  for (const nlohmann::json& p : j.at(key)) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer() ||
        p[0].get<int64_t>() < 0 || p[1].get<int64_t>() < 0 || p[0].get<int64_t>() > INT32_MAX ||
        p[1].get<int64_t>() > INT32_MAX)
      damaged(std::string("inputs_generated's '") + key + "' holds " + p.dump() +
              ", not a [batch, head] pair of indices");
    out.push_back({static_cast<int32_t>(p[0].get<int64_t>()), static_cast<int32_t>(p[1].get<int64_t>())});
  }
  return out;
}

nlohmann::json pairs_json(const std::vector<std::array<int32_t, 2>>& pairs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [b, h] : pairs) out.push_back({b, h});
  return out;
}

bool is_hex_digest(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

namespace {

// SHA-256 of the slices [i * slice, (i + 1) * slice) of `bytes` for i in `slices`, in order.
std::string hash_slices(std::span<const std::byte> bytes, size_t slice, const std::vector<int64_t>& slices,
                        const HashProgress& progress, const std::atomic<bool>* stop) {
  constexpr size_t kChunk = size_t{4} << 20;
  Sha256 sha;
  for (int64_t i : slices)
    for (size_t at = 0; at < slice; at += kChunk) {
      if (stop != nullptr && stop->load(std::memory_order_relaxed)) return {};
      const size_t n = std::min(kChunk, slice - at);
      sha.update(bytes.data() + static_cast<size_t>(i) * slice + at, n);
      if (progress) progress(n);
    }
  return sha.hex();
}

// One SHA-256 stream per tensor: k and v (the bulk) on threads of their own, q on this one.
std::array<std::string, 3> hash_three(const HostTensor* tensors[3], const size_t slice_bytes[3],
                                      const std::vector<int64_t>* slices[3], const HashProgress& progress,
                                      const std::atomic<bool>* stop) {
  std::array<std::string, 3> out;
  std::exception_ptr errors[3];
  auto hash = [&](int i) {
    try {
      out[static_cast<size_t>(i)] = hash_slices(tensors[i]->bytes, slice_bytes[i], *slices[i], progress, stop);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::thread k(hash, 1), v(hash, 2);
  hash(0);
  k.join();
  v.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

std::vector<int64_t> first_n(size_t n) {
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(i);
  return out;
}

}  // namespace

std::array<std::string, 3> input_hashes(const HeadInputs& inputs, const HashProgress& progress) {
  const HostTensor* tensors[3] = {&inputs.q, &inputs.k, &inputs.v};
  const std::vector<int64_t> q = first_n(inputs.q_pairs.size()), kv = first_n(inputs.kv_pairs.size());
  const std::vector<int64_t>* slices[3] = {&q, &kv, &kv};
  size_t slice_bytes[3];
  for (int i = 0; i < 3; ++i)
    slice_bytes[i] = slices[i]->empty() ? 0 : tensors[i]->bytes.size() / slices[i]->size();
  return hash_three(tensors, slice_bytes, slices, progress, nullptr);
}

std::array<std::string, 3> input_hashes(const AttentionSpec& a, const HostTensor& q, const HostTensor& k,
                                        const HostTensor& v, const std::vector<std::array<int32_t, 2>>& q_pairs,
                                        const std::vector<std::array<int32_t, 2>>& kv_pairs,
                                        const HashProgress& progress, const std::atomic<bool>* stop) {
  const HostTensor* tensors[3] = {&q, &k, &v};
  std::vector<int64_t> qs, kvs;
  for (const auto& [b, h] : q_pairs) qs.push_back(int64_t{b} * a.heads_q + h);
  for (const auto& [b, h] : kv_pairs) kvs.push_back(int64_t{b} * a.heads_kv + h);
  const std::vector<int64_t>* slices[3] = {&qs, &kvs, &kvs};
  const size_t element = dtype_size(a.dtype);
  const size_t slice_bytes[3] = {static_cast<size_t>(a.seq_q * a.head_dim) * element,
                                 static_cast<size_t>(a.seq_kv * a.head_dim) * element,
                                 static_cast<size_t>(a.seq_kv * a.head_dim) * element};
  for (int i = 0; i < 3; ++i)
    for (int64_t slice : *slices[i])
      if ((static_cast<size_t>(slice) + 1) * slice_bytes[i] > tensors[i]->bytes.size())
        throw std::invalid_argument("input_hashes: a pair lies outside its tensor");
  return hash_three(tensors, slice_bytes, slices, progress, stop);
}

std::map<std::string, std::string> random_spec_metadata(const RandomInputSpec& spec) {
  return {{std::string(input_meta::seed), std::to_string(spec.seed)},
          {std::string(input_meta::distribution), std::string(to_string(spec.distribution))},
          {std::string(input_meta::scale), decimal(spec.scale)},
          {std::string(input_meta::preset), std::string(to_string(spec.preset))}};
}

std::map<std::string, std::string> generated_inputs_metadata(const RandomInputSpec& spec, const HeadInputs& inputs,
                                                             const std::array<std::string, 3>& sha256) {
  std::map<std::string, std::string> m = random_spec_metadata(spec);
  const nlohmann::json recipe = {{"generator", std::string(kRandomInputsGenerator)},
                                 {"q_pairs", pairs_json(inputs.q_pairs)},
                                 {"kv_pairs", pairs_json(inputs.kv_pairs)},
                                 {"sha256", {{"q", sha256[0]}, {"k", sha256[1]}, {"v", sha256[2]}}}};
  m[std::string(input_meta::generated)] = recipe.dump();
  return m;
}

std::optional<GeneratedInputs> read_generated_inputs(const std::map<std::string, std::string>& metadata) {
  const auto it = metadata.find(std::string(input_meta::generated));
  if (it == metadata.end()) return std::nullopt;
  GeneratedInputs r;
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) damaged("metadata 'inputs_generated' is not a JSON object");
  if (!j.contains("generator") || !j.at("generator").is_string())
    damaged("inputs_generated does not name its generator");
  r.generator = j.at("generator").get<std::string>();
  r.q_pairs = pairs_from(j, "q_pairs");
  r.kv_pairs = pairs_from(j, "kv_pairs");
  if (!j.contains("sha256") || !j.at("sha256").is_object()) damaged("inputs_generated has no 'sha256' object");
  for (size_t i = 0; i < 3; ++i) {
    const nlohmann::json& h = j.at("sha256");
    if (!h.contains(kTensorNames[i]) || !h.at(kTensorNames[i]).is_string() ||
        !is_hex_digest(h.at(kTensorNames[i]).get<std::string>()))
      damaged(std::string("inputs_generated's sha256 of ") + kTensorNames[i] + " is not 64 lowercase hex digits");
    r.sha256[i] = h.at(kTensorNames[i]).get<std::string>();
  }
  const std::string& seed = required(metadata, input_meta::seed);
  const auto [end, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), r.spec.seed);
  if (ec != std::errc{} || end != seed.data() + seed.size() || seed.empty())
    damaged("metadata 'inputs_seed' = '" + seed + "' is not a whole number below 2^64");
  const std::string& dist = required(metadata, input_meta::distribution);
  const std::optional<InputDistribution> d = distribution_from_name(dist);
  if (!d) damaged("metadata 'inputs_distribution' = '" + dist + "' is not normal or uniform");
  r.spec.distribution = *d;
  const std::string& preset = required(metadata, input_meta::preset);
  const std::optional<InputPreset> p = preset_from_name(preset);
  if (!p) damaged("metadata 'inputs_preset' = '" + preset + "' is not none, large_logits or all_equal_scores");
  r.spec.preset = *p;
  const std::string& scale = required(metadata, input_meta::scale);
  const nlohmann::json s = nlohmann::json::parse(scale, nullptr, false);
  if (!s.is_number() || !std::isfinite(s.get<double>()) || s.get<double>() <= 0.0)
    damaged("metadata 'inputs_scale' = '" + scale + "' is not a finite number > 0");
  r.spec.scale = s.get<double>();
  return r;
}

uint64_t remade_input_bytes(const AttentionSpec& a, const GeneratedInputs& r) {
  const double elements = static_cast<double>(r.q_pairs.size()) * static_cast<double>(a.seq_q * a.head_dim) +
                          2.0 * static_cast<double>(r.kv_pairs.size()) * static_cast<double>(a.seq_kv * a.head_dim);
  const double bytes = elements * static_cast<double>(dtype_size(a.dtype));
  return bytes >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

HeadInputs remake_inputs(const AttentionSpec& a, const GeneratedInputs& r, unsigned workers,
                         const RemakeProgress& progress) {
  if (r.generator != kRandomInputsGenerator)
    throw InputsRecipeError("the trace's inputs were made by generator '" + r.generator +
                            "', which this build of tilescope does not have (it has '" +
                            std::string(kRandomInputsGenerator) +
                            "'): open it with the tilescope that captured it (tool_version in its metadata), or "
                            "re-capture with --store-inputs");
  // Each tensor hashed as it is made (make_random_head_inputs hands its pieces over in order
  // while they are in cache): no second pass over a GiB.
  std::array<Sha256, 3> sha;
  const InputBytesSink sink = [&](InputTensor which, std::span<const std::byte> bytes) {
    sha[static_cast<size_t>(which)].update(bytes.data(), bytes.size());
    if (progress.hashed) progress.hashed(bytes.size());
  };
  HeadInputs in;
  try {
    in = make_random_head_inputs(a, r.spec, r.q_pairs, r.kv_pairs, workers, progress.generated, sink);
  } catch (const std::exception& e) {
    damaged(std::string("they cannot be re-made: ") + e.what());
  }
  std::array<std::string, 3> got;
  for (size_t i = 0; i < 3; ++i) got[i] = sha[i].hex();
  for (size_t i = 0; i < 3; ++i)
    if (got[i] != r.sha256[i])
      throw InputsRecipeError(
          std::string("inputs.") + kTensorNames[i] + " re-made from seed " + std::to_string(r.spec.seed) + " (" +
          std::string(to_string(r.spec.distribution)) + ", scale " + decimal(r.spec.scale) + ", preset " +
          std::string(to_string(r.spec.preset)) + ", generator " + r.generator + ") has SHA-256 " + got[i] +
          ", but the trace recorded " + r.sha256[i] +
          ": its inputs' metadata was changed after the capture, so the events cannot be checked against "
          "these inputs; re-capture (with --store-inputs to keep the inputs themselves)");
  return in;
}

}  // namespace ts
