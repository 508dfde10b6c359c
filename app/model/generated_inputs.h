// Inputs a trace records as a recipe instead of values: the random generator's spec (its seed,
// distribution, scale and preset, and the generator's name), the (batch, head) pairs a stored
// copy would have held, and the SHA-256 of each tensor such a copy would have held. A decode
// capture's inputs are a GiB where its events are a few MiB, and the generator re-makes them bit
// for bit in about the time a read of them would take (base/random_inputs.h).
//
// The keys (docs/trace-format.md, "Inputs re-made from their seed", states them for readers):
//   inputs_seed, inputs_distribution, inputs_scale, inputs_preset   the generator's spec
//   inputs_generated  JSON {"generator": name, "q_pairs": [[b, h], ...], "kv_pairs": [[b, kvh], ...],
//                           "sha256": {"q": hex, "k": hex, "v": hex}}
// present only when the file holds no inputs.* tensors. The hashes are of the bytes inputs.q,
// inputs.k and inputs.v would hold ([pairs, seq, head_dim] in the attention's dtype, C order,
// little-endian), so numpy's hashlib checks a re-made tensor the same way.
//
//   metadata[...] = generated_inputs_json(spec, inputs);             // capture: the recipe
//   HeadInputs in = remake_inputs(attention, read_generated_inputs(meta));  // open: re-made, checked
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/attention_spec.h"
#include "base/head_inputs.h"
#include "base/random_inputs.h"

namespace ts {

namespace input_meta {
inline constexpr std::string_view seed = "inputs_seed";                  // decimal
inline constexpr std::string_view distribution = "inputs_distribution";  // normal | uniform
inline constexpr std::string_view scale = "inputs_scale";                // decimal
inline constexpr std::string_view preset = "inputs_preset";              // none | large_logits | ...
inline constexpr std::string_view generated = "inputs_generated";        // JSON, above
}  // namespace input_meta

// A recipe as a trace holds it.
struct GeneratedInputs {
  std::string generator;  // kRandomInputsGenerator when made by this build
  RandomInputSpec spec;
  std::vector<std::array<int32_t, 2>> q_pairs, kv_pairs;
  std::array<std::string, 3> sha256;  // q, k, v: 64 lowercase hex digits each
};

// A recipe whose re-made inputs cannot be had: an unknown generator, a damaged recipe, or
// re-made inputs whose hash differs from the recorded one. The message names the tensor and
// both hashes and says what to do.
class InputsRecipeError : public std::runtime_error {
 public:
  explicit InputsRecipeError(const std::string& message) : std::runtime_error(message) {}
};

// Bytes hashed (called from worker threads with the count just hashed).
using HashProgress = std::function<void(size_t bytes)>;

// SHA-256 of q, k and v of `inputs` (each over its bytes), on up to three threads.
std::array<std::string, 3> input_hashes(const HeadInputs& inputs, const HashProgress& progress = {});

// The same hashes taken from whole [batch, heads, seq, head_dim] tensors, without copying the
// pairs out: for each of q, k, v the SHA-256 of its (batch, head) slices in the pairs' order,
// i.e. of what inputs.q/k/v of these pairs hold. `stop`, when set, ends the hashing early (the
// result is then meaningless).
std::array<std::string, 3> input_hashes(const AttentionSpec& attention, const HostTensor& q, const HostTensor& k,
                                        const HostTensor& v, const std::vector<std::array<int32_t, 2>>& q_pairs,
                                        const std::vector<std::array<int32_t, 2>>& kv_pairs,
                                        const HashProgress& progress = {}, const std::atomic<bool>* stop = nullptr);

// The metadata keys above for inputs made by `spec` (the pairs and hashes from `inputs`).
std::map<std::string, std::string> generated_inputs_metadata(const RandomInputSpec& spec, const HeadInputs& inputs,
                                                             const std::array<std::string, 3>& sha256);
// Only the spec's four keys (a trace that stores its inputs, or holds the inputs of files).
std::map<std::string, std::string> random_spec_metadata(const RandomInputSpec& spec);

// The recipe of a trace's metadata, or nullopt when it has no inputs_generated key. Throws
// InputsRecipeError when the recipe or the spec's keys are damaged (the message names the key).
std::optional<GeneratedInputs> read_generated_inputs(const std::map<std::string, std::string>& metadata);

// The bytes re-making would allocate (the three tensors), for a check before it is done.
uint64_t remade_input_bytes(const AttentionSpec& attention, const GeneratedInputs& recipe);

// What remake_inputs reports: elements generated, then bytes hashed.
struct RemakeProgress {
  std::function<void(int64_t elements)> generated;
  HashProgress hashed;
};

// Re-makes the recipe's inputs and checks them against its hashes. Throws InputsRecipeError
// (unknown generator, pairs outside the attention, a hash that differs) naming the problem.
HeadInputs remake_inputs(const AttentionSpec& attention, const GeneratedInputs& recipe, unsigned workers = 0,
                         const RemakeProgress& progress = {});

}  // namespace ts
