// The GPU reference in a build without CUDA: never available, so the analysis stays on the CPU
// (kernels/reference_gpu.h).
#include "kernels/reference_gpu.h"

namespace ts {

struct GpuReference::Device {};

bool gpu_reference_available(std::string* reason) {
  if (reason) *reason = "built without CUDA";
  return false;
}

GpuReference::GpuReference(const ReferenceInputs& inputs) : inputs_(inputs) {
  throw GpuReferenceError("GPU reference: built without CUDA");
}

GpuReference::~GpuReference() = default;

std::vector<std::shared_ptr<const RowBlockReference>> GpuReference::compute(
    std::span<const RowBlock>, std::span<const std::vector<int64_t>>) const {
  (void)inputs_;  // held for the CUDA build's compute; named here so clang sees it used
  throw GpuReferenceError("GPU reference: built without CUDA");
}

}  // namespace ts
