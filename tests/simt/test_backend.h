// The executor a test program runs its kernels on: the CPU SIMT runtime (test_simt) or the
// GPU (test_simt_gpu). Test bodies written against this header run unchanged on both; each
// program links one implementation (backend_cpu.cpp or backend_gpu.cu).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <vector_types.h>

namespace ts::test {

// Like <<<grid, block, dynamic_shared_bytes>>>; workers and perturb_seed matter on the CPU.
struct Launch {
  dim3 grid;
  dim3 block;
  size_t dynamic_shared_bytes = 0;
  int workers = 0;
  std::optional<uint64_t> perturb_seed = std::nullopt;
};

struct RunStatus {
  bool ok = true;
  std::string message;  // what failed: the runtime's report, or the CUDA error
};

const char* backend_name();

// Memory the kernels can use: device memory on the GPU, host memory on the CPU.
void* device_allocate(size_t bytes);
void device_free(void* pointer);
void copy_to_device(void* device, const void* host, size_t bytes);
void copy_to_host(void* host, const void* device, size_t bytes);

// An array in kernel-visible memory, filled from (and read back into) a host vector.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& initial) : size_(initial.size()) {
    data_ = static_cast<T*>(device_allocate(bytes()));
    copy_to_device(data_, initial.data(), bytes());
  }
  ~DeviceArray() { device_free(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return data_; }
  std::vector<T> to_host() const {
    std::vector<T> host(size_);
    copy_to_host(host.data(), data_, bytes());
    return host;
  }

 private:
  size_t bytes() const { return size_ * sizeof(T); }
  size_t size_;
  T* data_ = nullptr;
};

}  // namespace ts::test
