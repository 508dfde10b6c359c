// The CPU backend of the SIMT tests: kernels compiled by the host compiler and run by the
// SIMT runtime; "device" memory is host memory.
#include <cstdlib>
#include <cstring>
#include <new>

#include "instrumentation/simt/runtime.h"
#include "tests/simt/test_backend.h"

namespace ts::test {

namespace {

RunStatus to_status(const simt::LaunchResult& result) {
  return RunStatus{result.ok(), result.message};
}

simt::LaunchOptions options_of(const Launch& launch) {
  simt::LaunchOptions options;
  options.workers = launch.workers;
  options.perturb_seed = launch.perturb_seed;
  return options;
}

}  // namespace

const char* backend_name() { return "CPU SIMT runtime"; }

void* device_allocate(size_t bytes) {
  // Aligned like cudaMalloc, so kernels' vector loads behave the same.
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void device_free(void* pointer) { std::free(pointer); }
void copy_to_device(void* device, const void* host, size_t bytes) {
  if (bytes != 0) std::memcpy(device, host, bytes);
}
void copy_to_host(void* host, const void* device, size_t bytes) {
  if (bytes != 0) std::memcpy(host, device, bytes);
}

}  // namespace ts::test

#define SIMT_TEST_LAUNCH(launch, kernel, ...)                                             \
  ::ts::test::to_status(::simt::launch(                                                  \
      ::simt::LaunchConfig{(launch).grid, (launch).block, (launch).dynamic_shared_bytes}, \
      ::ts::test::options_of(launch), kernel, __VA_ARGS__))

#include "tests/simt/kernel_launchers.inc"
