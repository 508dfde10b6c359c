#include "kernels/launcher.h"

#include "kernels/launch_backends.h"

namespace ts {

bool gpu_available(std::string* reason) {
#if defined(TILESCOPE_HAVE_CUDA)
  return detail::cuda_device_present(reason);
#else
  if (reason) *reason = "built without CUDA (configure with -DTILESCOPE_CUDA=ON and nvcc)";
  return false;
#endif
}

LaunchOutcome launch_attention(const LaunchRequest& request, const AttentionInputs& inputs) {
  validate(request.config);
  check_inputs(request.config, inputs);
  Backend backend = request.backend;
  if (backend == Backend::auto_) backend = gpu_available() ? Backend::gpu : Backend::cpu;
  if (request.cancel != nullptr && request.cancel->load())
    throw LaunchError(LaunchFailure::cancelled, "the run was cancelled before it started");
  if (backend == Backend::cpu) return detail::launch_on_cpu(request, inputs);
#if defined(TILESCOPE_HAVE_CUDA)
  return detail::launch_on_gpu(request, inputs);
#else
  throw LaunchError(LaunchFailure::not_built,
                    "the GPU backend is not available: tilescope was built without CUDA "
                    "(reconfigure with -DTILESCOPE_CUDA=ON where nvcc is installed, or use --backend cpu)");
#endif
}

}  // namespace ts
