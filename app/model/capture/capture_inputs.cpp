#include "app/model/capture/capture_inputs.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "app/model/capture/capture_metadata.h"
#include "app/model/generated_inputs.h"
#include "instrumentation/trace/file_error.h"
#include "instrumentation/trace/tensor_files.h"

namespace ts {
namespace {

LoadedInputs generate(const AttentionConfig& config, const RandomInputSpec& spec, const GenerationProgress& progress) {
  LoadedInputs out;
  out.tensors = make_random_inputs(config, spec, 0, progress);
  out.provenance = random_spec_metadata(spec);
  return out;
}

LoadedInputs load_files(const AttentionConfig& config, const InputFiles& files) {
  const auto& paths = files.paths;
  // How many files a capture takes is check_capture's to say (the person sees it there).
  if (paths.size() != 1 && paths.size() != 3)
    throw std::invalid_argument("load_capture_inputs: " + std::to_string(paths.size()) + " input files (1 or 3)");
  const std::string names[3] = {"q", "k", "v"};
  const auto file_of = [&](int tensor) { return paths.size() == 3 ? static_cast<size_t>(tensor) : size_t{0}; };
  const auto with_file = [&](int tensor, const InputError& e) {
    std::string hint;
    if (std::string(e.what()).find("dtype") != std::string::npos)
      hint = " (pass --dtype to match the file, or convert the file; .npy holds fp32 or fp16, "
             "bf16 needs a .safetensors)";
    return InputError(e.tensor(), paths[file_of(tensor)].string() + ": " + e.what() + hint);
  };

  // The headers first: every tensor's dtype and shape are checked against the config before
  // any data are read, so a wrong file is refused at once however large it is.
  std::vector<std::unique_ptr<TensorFile>> opened;
  for (const auto& p : paths) opened.push_back(std::make_unique<TensorFile>(p));
  const TensorInfo* chosen[3] = {};
  for (int i = 0; i < 3; ++i) {
    const TensorFile& file = *opened[file_of(i)];
    DType dtype{};
    // Three files are taken whole: the command line names no tensor inside one.
    if (paths.size() == 3 && file.tensors().size() != 1) {
      std::string held;
      for (const TensorInfo& t : file.tensors()) held += (held.empty() ? "" : ", ") + t.name;
      throw TensorFileError(file.path(), file.path().string() + ": holds " + std::to_string(file.tensors().size()) +
                                             " tensors (" + held +
                                             "); each of three input files must hold one (a .npy, or a "
                                             ".safetensors of one tensor); or give one .safetensors holding "
                                             "tensors named q, k and v");
    }
    try {
      chosen[i] = &file.select(paths.size() == 3 ? std::string() : names[i]);
      dtype = file.kernel_dtype(*chosen[i]);
    } catch (const TensorFileError& e) {
      if (paths.size() == 1)
        throw TensorFileError(file.path(), std::string(e.what()) +
                                               " (one input file must be a .safetensors holding tensors "
                                               "named q, k and v; or give three files in q k v order)");
      throw;
    }
    try {
      check_input_layout(config, names[i], chosen[i]->shape, dtype);
    } catch (const InputError& e) {
      throw with_file(i, e);
    }
  }

  // Then the data, one pass per file, hashed as they are read.
  LoadedInputs out;
  HostTensor* targets[3] = {&out.tensors.q, &out.tensors.k, &out.tensors.v};
  nlohmann::json file_list = nlohmann::json::array(), hashes = nlohmann::json::array();
  for (size_t f = 0; f < paths.size(); ++f) {
    std::vector<const TensorInfo*> wanted;
    std::vector<int> tensor_of;
    for (int i = 0; i < 3; ++i)
      if (file_of(i) == f) {
        wanted.push_back(chosen[i]);
        tensor_of.push_back(i);
      }
    TensorFile::Contents contents = opened[f]->read(wanted);
    for (size_t w = 0; w < wanted.size(); ++w) *targets[tensor_of[w]] = std::move(contents.tensors[w]);
    file_list.push_back(paths[f].string());
    hashes.push_back(contents.sha256);
  }
  try {
    check_inputs(config, out.tensors);
  } catch (const InputError& e) {
    throw with_file(e.tensor() == "k" ? 1 : e.tensor() == "v" ? 2 : 0, e);
  }
  out.provenance[std::string(trace_meta::inputs_files)] = file_list.dump();
  out.provenance[std::string(trace_meta::inputs_sha256)] = hashes.dump();
  return out;
}

}  // namespace

LoadedInputs load_capture_inputs(const AttentionConfig& config, const InputSource& source,
                                 const GenerationProgress& progress) {
  validate(config);
  if (const auto* random = std::get_if<RandomInputSpec>(&source)) return generate(config, *random, progress);
  return load_files(config, std::get<InputFiles>(source));
}

std::vector<std::array<int32_t, 2>> traced_pairs(const AttentionConfig& config,
                                                 const TraceFilter& filter) {
  std::vector<std::array<int32_t, 2>> pairs;
  const int64_t b0 = std::max<int64_t>(0, filter.batch_begin);
  const int64_t b1 = std::min<int64_t>(config.batch, filter.batch_end);
  const int64_t h0 = std::max<int64_t>(0, filter.head_begin);
  const int64_t h1 = std::min<int64_t>(config.heads, filter.head_end);
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t h = h0; h < h1; ++h)
      pairs.push_back({static_cast<int32_t>(b), static_cast<int32_t>(h)});
  return pairs;
}

HeadInputs traced_head_pairs(const AttentionConfig& config, const TraceFilter& filter) {
  HeadInputs out;
  out.q_pairs = traced_pairs(config, filter);
  const AttentionSpec spec = attention_spec(config);
  std::set<std::array<int32_t, 2>> seen;
  for (const auto& [b, h] : out.q_pairs) {
    const std::array<int32_t, 2> kv = {b, static_cast<int32_t>(spec.kv_head_of(h))};
    if (seen.insert(kv).second) out.kv_pairs.push_back(kv);
  }
  return out;
}

HeadInputs traced_head_inputs(const AttentionConfig& config, const AttentionInputs& inputs,
                              const TraceFilter& filter) {
  HeadInputs out = traced_head_pairs(config, filter);
  const AttentionSpec spec = attention_spec(config);
  // [pairs, seq, head_dim] slices of a [batch, heads, seq, head_dim] tensor.
  auto slice = [&](const HostTensor& full, const std::vector<std::array<int32_t, 2>>& pairs, int64_t heads,
                   int64_t seq) {
    const int64_t p = static_cast<int64_t>(pairs.size());
    HostTensor t = HostTensor::zeros(full.dtype, {p, seq, config.head_dim});
    const size_t pair_bytes = static_cast<size_t>(seq * config.head_dim) * full.element_size();
    for (size_t i = 0; i < pairs.size(); ++i) {
      const int64_t bh = pairs[i][0] * heads + pairs[i][1];
      std::memcpy(t.bytes.data() + i * pair_bytes, full.bytes.data() + static_cast<size_t>(bh) * pair_bytes,
                  pair_bytes);
    }
    return t;
  };
  out.q = slice(inputs.q, out.q_pairs, spec.heads_q, config.seq_q);
  out.k = slice(inputs.k, out.kv_pairs, spec.heads_kv, config.seq_kv);
  out.v = slice(inputs.v, out.kv_pairs, spec.heads_kv, config.seq_kv);
  return out;
}

HeadInputs traced_head_inputs(const AttentionConfig& config, AttentionInputs&& inputs, const TraceFilter& filter) {
  const std::vector<std::array<int32_t, 2>> pairs = traced_pairs(config, filter);
  // Only with every pair traced and as many kv heads as query heads are the tensors already
  // [pairs, seq, head_dim] with the kv pairs the query pairs; otherwise (a filter, GQA) sliced.
  if (static_cast<int64_t>(pairs.size()) != config.batch * config.heads || config.kv_heads() != config.heads)
    return traced_head_inputs(config, static_cast<const AttentionInputs&>(inputs), filter);
  // Every pair, batch-major, multi-head.
  HeadInputs out;
  out.q_pairs = pairs;
  out.kv_pairs = pairs;
  out.q = std::move(inputs.q);
  out.k = std::move(inputs.k);
  out.v = std::move(inputs.v);
  out.q.shape = {config.batch * config.heads, config.seq_q, config.head_dim};
  out.k.shape = out.v.shape = {config.batch * config.heads, config.seq_kv, config.head_dim};
  return out;
}

}  // namespace ts
