// The float64 reference's heavy part on a CUDA device: the states of every piece of many row
// blocks (kernels/reference.h: a row block's rows against the keys between two consecutive
// boundaries), computed in float64 on the GPU, from which row_block_from_pieces makes the same
// RowBlockReference objects the CPU path makes (prefixes, ranges off the boundaries and the
// output are derived on the host as there). Same semantics as the CPU reference: scores
// q . k times the scale, softcap, ALiBi, every mask through AttentionSpec's visible keys (causal,
// window, per-batch lengths), GQA through the kv head of each query head. Not the same bits:
// the GPU sums in another order and has its own exp and tanh, so states agree to about 1e-15
// relative (tests/kernels/test_reference_gpu.cpp checks them against the CPU's).
//
// Chosen automatically by the analysis when a device is present (app/model/analysis/
// run_reference.h; TILESCOPE_REFERENCE=cpu keeps it on the CPU), never required: without CUDA,
// or without a device, gpu_reference_available() says why and the CPU path is used.
//
//   if (gpu_reference_available()) {
//     GpuReference gpu(inputs);                           // K and V copied to the device once
//     auto refs = gpu.compute(blocks, boundaries);        // one RowBlockReference per block
//   }
#pragma once

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/reference.h"

namespace ts {

// A device that cannot be used (none, out of memory, a failed kernel). The message says why.
class GpuReferenceError : public std::runtime_error {
 public:
  explicit GpuReferenceError(const std::string& message) : std::runtime_error(message) {}
};

// The largest head dim the GPU path takes (larger ones are computed on the CPU).
inline constexpr int64_t kGpuReferenceMaxHeadDim = 256;

// Whether this build has the GPU path and a CUDA device is present; when not, *reason says why.
bool gpu_reference_available(std::string* reason = nullptr);

class GpuReference {
 public:
  // Copies every kv pair's K and V of `inputs` to the device as float32 (exact). `inputs` must
  // outlive this object. Throws GpuReferenceError (no device, head dim over the limit, not
  // enough device memory).
  explicit GpuReference(const ReferenceInputs& inputs);
  ~GpuReference();
  GpuReference(const GpuReference&) = delete;
  GpuReference& operator=(const GpuReference&) = delete;

  // The references of `blocks`, boundaries[i] those of blocks[i] (any order, duplicates and
  // values outside [0, seq_kv] allowed, as compute_row_block takes them). Work is sent in
  // batches of bounded device memory. Throws std::invalid_argument as compute_row_block does,
  // GpuReferenceError when the device fails. Not thread-safe (one caller at a time).
  std::vector<std::shared_ptr<const RowBlockReference>> compute(std::span<const RowBlock> blocks,
                                                               std::span<const std::vector<int64_t>> boundaries) const;

  struct Device;  // device buffers (reference_gpu.cu)

 private:
  const ReferenceInputs& inputs_;
  std::unique_ptr<Device> device_;
};

}  // namespace ts
