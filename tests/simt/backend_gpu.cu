// The GPU backend of the SIMT tests: the same kernels compiled by nvcc and launched natively,
// so test_simt_gpu checks that the kernels (and the expectations the CPU runtime is held to)
// match real hardware.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "tests/simt/test_backend.h"

namespace ts::test {

namespace {

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(error));
  }
}

template <typename... Params, typename... Args>
RunStatus launch_on_gpu(const Launch& launch, void (*kernel)(Params...), Args... args) {
  constexpr size_t kDefaultDynamicSharedLimit = 48 * 1024;
  if (launch.dynamic_shared_bytes > kDefaultDynamicSharedLimit) {
    const cudaError_t error =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(launch.dynamic_shared_bytes));
    if (error != cudaSuccess) return RunStatus{false, cudaGetErrorString(error)};
  }
  kernel<<<launch.grid, launch.block, launch.dynamic_shared_bytes>>>(args...);
  cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess) error = cudaDeviceSynchronize();
  return error == cudaSuccess ? RunStatus{} : RunStatus{false, cudaGetErrorString(error)};
}

}  // namespace

const char* backend_name() { return "GPU (CUDA)"; }

void* device_allocate(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
  return p;
}
void device_free(void* pointer) { cudaFree(pointer); }
void copy_to_device(void* device, const void* host, size_t bytes) {
  check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
}
void copy_to_host(void* host, const void* device, size_t bytes) {
  check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
}

}  // namespace ts::test

#define SIMT_TEST_LAUNCH(launch, kernel, ...) \
  ::ts::test::launch_on_gpu(launch, kernel, __VA_ARGS__)

#include "tests/simt/kernel_launchers.inc"
