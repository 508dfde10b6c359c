// The CUDA runtime API subset of the CPU path (cuda_runtime_cpu.h says what it covers and how it
// differs from a GPU's): CUDA's own C declarations (cuda_runtime_api.h) defined here, with memory
// as host allocations poisoned with 0xFF, calls that complete before they return, streams and
// events as handles with a clock, launches on the SIMT runtime, and CUDA's error codes with the
// last error per host thread. A program links this instead of cudart, never both.
#include "instrumentation/simt/cuda_runtime_cpu.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "instrumentation/simt/src/launch_config_check.h"

// CUDA declares these handle types and leaves them opaque; the CPU path defines them.
struct CUstream_st {
  unsigned flags = 0;
};
struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false;
  uint64_t ns = 0;
};

namespace {

using simt::LaunchConfig;
using simt::LaunchResult;

constexpr size_t kAllocationAlignment = 256;  // what cudaMalloc guarantees
constexpr size_t kStaticSharedBytes = 48 * 1024;

// The calling host thread's errors: the last one (cudaGetLastError), the one a synchronising
// call still has to return (a kernel that failed while running), and the detail of the latest
// error of each code, which cudaGetErrorString appends.
struct ThreadErrors {
  cudaError_t last = cudaSuccess;
  cudaError_t pending = cudaSuccess;
  std::map<int, std::string> detail;
  std::string text;  // cudaGetErrorString's result, kept alive until the next call
};
thread_local ThreadErrors errors;

cudaError_t fail(cudaError_t code, std::string detail) {
  errors.last = code;
  errors.detail[static_cast<int>(code)] = std::move(detail);
  return code;
}

// A synchronising call reports a kernel that failed since the last report.
cudaError_t take_pending() {
  const cudaError_t e = errors.pending;
  errors.pending = cudaSuccess;
  return e;
}

// Process-wide state: live allocations, streams and events, and per-kernel dynamic shared
// memory opt-ins.
struct Registry {
  std::mutex mutex;
  std::unordered_map<void*, size_t> allocations;
  std::unordered_map<void*, size_t> host_allocations;
  std::set<CUstream_st*> streams;
  std::set<CUevent_st*> events;
  std::unordered_map<const void*, size_t> dynamic_shared_optin;
};
Registry& registry() {
  static Registry r;
  return r;
}

uint64_t now_ns() { return simt::clock_ns(); }

size_t physical_bytes(int which) {
  const long pages = sysconf(which), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

bool valid_kind(cudaMemcpyKind kind) {
  return kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice ||
         kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice ||
         kind == cudaMemcpyDefault;
}

cudaError_t allocate(void** ptr, size_t bytes, std::unordered_map<void*, size_t> Registry::*table,
                     const char* what) {
  if (ptr == nullptr) return fail(cudaErrorInvalidValue, std::string(what) + " given a null pointer to store the address in");
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  const size_t rounded = (bytes + kAllocationAlignment - 1) / kAllocationAlignment * kAllocationAlignment;
  if (rounded < bytes) return fail(cudaErrorMemoryAllocation, std::string(what) + " of " + std::to_string(bytes) + " bytes");
  void* p = std::aligned_alloc(kAllocationAlignment, rounded);
  if (p == nullptr)
    return fail(cudaErrorMemoryAllocation,
                std::string(what) + " of " + std::to_string(bytes) + " bytes: the host has not that much memory free");
  std::memset(p, 0xFF, rounded);  // NaN in every float type: unwritten reads show
  {
    const std::lock_guard<std::mutex> lock(registry().mutex);
    (registry().*table)[p] = bytes;
  }
  *ptr = p;
  return cudaSuccess;
}

cudaError_t release(void* ptr, std::unordered_map<void*, size_t> Registry::*table, const char* what,
                    const char* allocator) {
  if (ptr == nullptr) return cudaSuccess;
  {
    const std::lock_guard<std::mutex> lock(registry().mutex);
    auto& live = registry().*table;
    const auto it = live.find(ptr);
    if (it == live.end())
      return fail(cudaErrorInvalidValue, std::string(what) + " of a pointer that " + allocator +
                                             " did not return, or that was freed already");
    live.erase(it);
  }
  std::free(ptr);
  return cudaSuccess;
}

bool known_stream(cudaStream_t s) {
  // 0, cudaStreamLegacy and cudaStreamPerThread are the default streams.
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return true;
  const std::lock_guard<std::mutex> lock(registry().mutex);
  return registry().streams.count(s) != 0;
}

bool known_event(cudaEvent_t e) {
  const std::lock_guard<std::mutex> lock(registry().mutex);
  return e != nullptr && registry().events.count(e) != 0;
}

cudaError_t bad_stream(const char* call) {
  return fail(cudaErrorInvalidResourceHandle,
              std::string(call) + " given a stream that cudaStreamCreate did not return (or that was destroyed)");
}
cudaError_t bad_event(const char* call) {
  return fail(cudaErrorInvalidResourceHandle,
              std::string(call) + " given an event that cudaEventCreate did not return (or that was destroyed)");
}

cudaDeviceProp cpu_device_properties() {
  cudaDeviceProp p{};
  std::strncpy(p.name, "tilescope CPU SIMT runtime", sizeof(p.name) - 1);
  p.totalGlobalMem = physical_bytes(_SC_PHYS_PAGES);
  p.sharedMemPerBlock = kStaticSharedBytes;
  p.regsPerBlock = 65536;
  p.warpSize = 32;
  p.memPitch = SIZE_MAX;
  p.maxThreadsPerBlock = static_cast<int>(simt::kMaxThreadsPerBlock);
  p.maxThreadsDim[0] = 1024;
  p.maxThreadsDim[1] = 1024;
  p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 0x7fffffff;
  p.maxGridSize[1] = 65535;
  p.maxGridSize[2] = 65535;
  p.totalConstMem = 64 * 1024;
  p.major = 9;
  p.minor = 0;
  p.textureAlignment = 512;
  p.multiProcessorCount = simt::kNominalMultiprocessors;
  p.concurrentKernels = 1;
  p.unifiedAddressing = 1;
  p.l2CacheSize = 50 * 1024 * 1024;
  p.maxThreadsPerMultiProcessor = 2048;
  p.sharedMemPerMultiprocessor = 228 * 1024;
  p.regsPerMultiprocessor = 65536;
  p.sharedMemPerBlockOptin = simt::kMaxDynamicSharedBytes;
  p.maxBlocksPerMultiProcessor = 32;
  p.reservedSharedMemPerBlock = 1024;
  return p;
}

}  // namespace

extern "C" {

// ---- memory ------------------------------------------------------------------------------------

cudaError_t cudaMalloc(void** ptr, size_t bytes) { return allocate(ptr, bytes, &Registry::allocations, "cudaMalloc"); }
cudaError_t cudaFree(void* ptr) { return release(ptr, &Registry::allocations, "cudaFree", "cudaMalloc"); }
cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  return allocate(ptr, bytes, &Registry::host_allocations, "cudaMallocHost");
}
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned int) {
  return allocate(ptr, bytes, &Registry::host_allocations, "cudaHostAlloc");
}
cudaError_t cudaFreeHost(void* ptr) {
  return release(ptr, &Registry::host_allocations, "cudaFreeHost", "cudaMallocHost or cudaHostAlloc");
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (!valid_kind(kind))
    return fail(cudaErrorInvalidMemcpyDirection, "cudaMemcpy kind " + std::to_string(static_cast<int>(kind)) +
                                                     " is not a cudaMemcpyKind");
  if (bytes > 0 && (dst == nullptr || src == nullptr))
    return fail(cudaErrorInvalidValue, "cudaMemcpy of " + std::to_string(bytes) + " bytes with a null pointer");
  if (const cudaError_t e = take_pending(); e != cudaSuccess) return e;  // synchronising, as on a GPU
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  if (!known_stream(stream)) return bad_stream("cudaMemcpyAsync");
  if (!valid_kind(kind))
    return fail(cudaErrorInvalidMemcpyDirection, "cudaMemcpyAsync kind " + std::to_string(static_cast<int>(kind)) +
                                                     " is not a cudaMemcpyKind");
  if (bytes > 0 && (dst == nullptr || src == nullptr))
    return fail(cudaErrorInvalidValue, "cudaMemcpyAsync of " + std::to_string(bytes) + " bytes with a null pointer");
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  if (bytes > 0 && ptr == nullptr) return fail(cudaErrorInvalidValue, "cudaMemset of a null pointer");
  if (bytes > 0) std::memset(ptr, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) {
  if (!known_stream(stream)) return bad_stream("cudaMemsetAsync");
  return cudaMemset(ptr, value, bytes);
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return fail(cudaErrorInvalidValue, "cudaMemGetInfo given a null pointer");
  *free_bytes = physical_bytes(_SC_AVPHYS_PAGES);
  *total_bytes = physical_bytes(_SC_PHYS_PAGES);
  return cudaSuccess;
}

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind) {
  if (!valid_kind(kind))
    return fail(cudaErrorInvalidMemcpyDirection, "cudaMemcpyToSymbol kind " + std::to_string(static_cast<int>(kind)) +
                                                     " is not a cudaMemcpyKind");
  if (count > 0 && (symbol == nullptr || src == nullptr))
    return fail(cudaErrorInvalidValue, "cudaMemcpyToSymbol with a null pointer");
  if (count > 0) std::memmove(const_cast<char*>(static_cast<const char*>(symbol)) + offset, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  if (!valid_kind(kind))
    return fail(cudaErrorInvalidMemcpyDirection, "cudaMemcpyFromSymbol kind " + std::to_string(static_cast<int>(kind)) +
                                                     " is not a cudaMemcpyKind");
  if (count > 0 && (symbol == nullptr || dst == nullptr))
    return fail(cudaErrorInvalidValue, "cudaMemcpyFromSymbol with a null pointer");
  if (count > 0) std::memmove(dst, static_cast<const char*>(symbol) + offset, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream) {
  if (!known_stream(stream)) return bad_stream("cudaMemcpyToSymbolAsync");
  return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}

cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                      cudaMemcpyKind kind, cudaStream_t stream) {
  if (!known_stream(stream)) return bad_stream("cudaMemcpyFromSymbolAsync");
  return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}

cudaError_t cudaGetSymbolAddress(void** address, const void* symbol) {
  if (address == nullptr || symbol == nullptr) return fail(cudaErrorInvalidValue, "cudaGetSymbolAddress with a null pointer");
  *address = const_cast<void*>(symbol);
  return cudaSuccess;
}

// ---- errors ------------------------------------------------------------------------------------

cudaError_t cudaGetLastError() {
  const cudaError_t e = errors.last != cudaSuccess ? errors.last : errors.pending;
  errors.last = cudaSuccess;
  errors.pending = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return errors.last != cudaSuccess ? errors.last : errors.pending; }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define TS_CUDA_ERROR_NAME(code) \
  case code:                     \
    return #code;
    TS_CUDA_ERROR_NAME(cudaSuccess)
    TS_CUDA_ERROR_NAME(cudaErrorInvalidValue)
    TS_CUDA_ERROR_NAME(cudaErrorMemoryAllocation)
    TS_CUDA_ERROR_NAME(cudaErrorInitializationError)
    TS_CUDA_ERROR_NAME(cudaErrorInvalidConfiguration)
    TS_CUDA_ERROR_NAME(cudaErrorInvalidDevice)
    TS_CUDA_ERROR_NAME(cudaErrorInvalidDevicePointer)
    TS_CUDA_ERROR_NAME(cudaErrorInvalidMemcpyDirection)
    TS_CUDA_ERROR_NAME(cudaErrorInvalidResourceHandle)
    TS_CUDA_ERROR_NAME(cudaErrorInvalidDeviceFunction)
    TS_CUDA_ERROR_NAME(cudaErrorInvalidSymbol)
    TS_CUDA_ERROR_NAME(cudaErrorNotReady)
    TS_CUDA_ERROR_NAME(cudaErrorNotSupported)
    TS_CUDA_ERROR_NAME(cudaErrorLaunchFailure)
    TS_CUDA_ERROR_NAME(cudaErrorIllegalAddress)
    TS_CUDA_ERROR_NAME(cudaErrorAssert)
    TS_CUDA_ERROR_NAME(cudaErrorNoDevice)
#undef TS_CUDA_ERROR_NAME
    default:
      return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  const char* base = "unrecognized error code";
  switch (error) {
    case cudaSuccess: base = "no error"; break;
    case cudaErrorInvalidValue: base = "invalid argument"; break;
    case cudaErrorMemoryAllocation: base = "out of memory"; break;
    case cudaErrorInitializationError: base = "initialization error"; break;
    case cudaErrorInvalidConfiguration: base = "invalid configuration argument"; break;
    case cudaErrorInvalidDevice: base = "invalid device ordinal"; break;
    case cudaErrorInvalidDevicePointer: base = "invalid device pointer"; break;
    case cudaErrorInvalidMemcpyDirection: base = "invalid copy direction for memcpy"; break;
    case cudaErrorInvalidResourceHandle: base = "invalid resource handle"; break;
    case cudaErrorInvalidDeviceFunction: base = "invalid device function"; break;
    case cudaErrorInvalidSymbol: base = "invalid device symbol"; break;
    case cudaErrorNotReady: base = "device not ready"; break;
    case cudaErrorNotSupported: base = "operation not supported"; break;
    case cudaErrorLaunchFailure: base = "unspecified launch failure"; break;
    case cudaErrorIllegalAddress: base = "an illegal memory access was encountered"; break;
    case cudaErrorAssert: base = "device-side assert triggered"; break;
    case cudaErrorNoDevice: base = "no CUDA-capable device is detected"; break;
    default: break;
  }
  const auto it = errors.detail.find(static_cast<int>(error));
  if (error == cudaSuccess || it == errors.detail.end() || it->second.empty()) return base;
  errors.text = std::string(base) + " (tilescope CPU path: " + it->second + ")";
  return errors.text.c_str();
}

// ---- device ------------------------------------------------------------------------------------

cudaError_t cudaDeviceSynchronize() { return take_pending(); }

cudaError_t cudaDeviceReset() {
  errors = ThreadErrors{};
  return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return fail(cudaErrorInvalidValue, "cudaGetDeviceCount given a null pointer");
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return fail(cudaErrorInvalidValue, "cudaGetDevice given a null pointer");
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device != 0)
    return fail(cudaErrorInvalidDevice, "device " + std::to_string(device) + ": the CPU path has one device, 0");
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return fail(cudaErrorInvalidValue, "cudaGetDeviceProperties given a null pointer");
  if (device != 0)
    return fail(cudaErrorInvalidDevice, "device " + std::to_string(device) + ": the CPU path has one device, 0");
  *prop = cpu_device_properties();
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
  if (value == nullptr) return fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute given a null pointer");
  if (device != 0)
    return fail(cudaErrorInvalidDevice, "device " + std::to_string(device) + ": the CPU path has one device, 0");
  const cudaDeviceProp p = cpu_device_properties();
  switch (attribute) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = static_cast<int>(p.sharedMemPerBlock); break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = static_cast<int>(p.sharedMemPerBlockOptin); break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = static_cast<int>(p.sharedMemPerMultiprocessor); break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    default:
      return fail(cudaErrorInvalidValue, "device attribute " + std::to_string(static_cast<int>(attribute)) +
                                             " is not one the CPU path describes (cudaGetDeviceProperties has the rest)");
  }
  return cudaSuccess;
}

// ---- streams and events ------------------------------------------------------------------------

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  if (stream == nullptr) return fail(cudaErrorInvalidValue, "cudaStreamCreate given a null pointer");
  auto* s = new CUstream_st{flags};
  const std::lock_guard<std::mutex> lock(registry().mutex);
  registry().streams.insert(s);
  *stream = s;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, 0); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  {
    const std::lock_guard<std::mutex> lock(registry().mutex);
    if (stream == nullptr || registry().streams.erase(stream) == 0) return bad_stream("cudaStreamDestroy");
  }
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!known_stream(stream)) return bad_stream("cudaStreamSynchronize");
  return take_pending();
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  if (!known_stream(stream)) return bad_stream("cudaStreamQuery");
  return cudaSuccess;  // its work is done: every call completes before it returns
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (!known_stream(stream)) return bad_stream("cudaStreamWaitEvent");
  if (!known_event(event)) return bad_event("cudaStreamWaitEvent");
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (event == nullptr) return fail(cudaErrorInvalidValue, "cudaEventCreate given a null pointer");
  auto* e = new CUevent_st{flags, false, 0};
  const std::lock_guard<std::mutex> lock(registry().mutex);
  registry().events.insert(e);
  *event = e;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, 0); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  {
    const std::lock_guard<std::mutex> lock(registry().mutex);
    if (event == nullptr || registry().events.erase(event) == 0) return bad_event("cudaEventDestroy");
  }
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!known_event(event)) return bad_event("cudaEventRecord");
  if (!known_stream(stream)) return bad_stream("cudaEventRecord");
  event->recorded = true;
  event->ns = now_ns();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!known_event(event)) return bad_event("cudaEventSynchronize");
  return take_pending();
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!known_event(event)) return bad_event("cudaEventQuery");
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return fail(cudaErrorInvalidValue, "cudaEventElapsedTime given a null pointer");
  if (!known_event(start) || !known_event(end)) return bad_event("cudaEventElapsedTime");
  if (!start->recorded || !end->recorded)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime of an event that was never recorded");
  if (((start->flags | end->flags) & cudaEventDisableTiming) != 0)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime of an event created with cudaEventDisableTiming");
  *ms = static_cast<float>(static_cast<double>(static_cast<int64_t>(end->ns - start->ns)) * 1e-6);
  return cudaSuccess;
}

// ---- kernels -----------------------------------------------------------------------------------

cudaError_t cudaFuncSetAttribute(const void* kernel, cudaFuncAttribute attribute, int value) {
  if (kernel == nullptr) return fail(cudaErrorInvalidDeviceFunction, "cudaFuncSetAttribute of a null kernel");
  if (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || static_cast<size_t>(value) > simt::kMaxDynamicSharedBytes)
      return fail(cudaErrorInvalidValue, "cudaFuncAttributeMaxDynamicSharedMemorySize = " + std::to_string(value) +
                                             "; the device allows up to " +
                                             std::to_string(simt::kMaxDynamicSharedBytes) + " bytes");
    const std::lock_guard<std::mutex> lock(registry().mutex);
    registry().dynamic_shared_optin[kernel] = static_cast<size_t>(value);
  }
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void* kernel, dim3, dim3, void**, size_t, cudaStream_t) {
  return fail(cudaErrorInvalidDeviceFunction,
              kernel == nullptr ? "cudaLaunchKernel of a null kernel"
                                : "cudaLaunchKernel was given the kernel as a const void*, which the CPU path cannot "
                                  "call (it needs the kernel's type): pass the kernel itself, "
                                  "cudaLaunchKernel(my_kernel, grid, block, args, smem, stream), or use TILESCOPE_LAUNCH");
}

}  // extern "C"

namespace simt::cuda_runtime {

cudaError_t record_error(cudaError_t code, const std::string& detail) { return fail(code, detail); }

cudaError_t check_symbol_range(size_t count, size_t offset, size_t symbol_bytes, const char* call) {
  if (offset > symbol_bytes || count > symbol_bytes - offset)
    return fail(cudaErrorInvalidValue, std::string(call) + " of " + std::to_string(count) + " bytes at offset " +
                                           std::to_string(offset) + " runs past the symbol's " +
                                           std::to_string(symbol_bytes) + " bytes");
  return cudaSuccess;
}

namespace {

// TILESCOPE_CPU_WORKERS and TILESCOPE_CPU_PERTURB_SEED: a decimal count, or "" when unset. A value
// that is not one is remembered and fails every launch with a message naming the variable.
std::string environment_problem;

bool parse_unsigned(const char* text, uint64_t& out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || text[0] == '-') return false;
  out = v;
  return true;
}

LaunchOptions options_from_environment() {
  LaunchOptions o;
  if (const char* w = std::getenv("TILESCOPE_CPU_WORKERS"); w != nullptr && *w != '\0') {
    uint64_t v = 0;
    if (!parse_unsigned(w, v) || v > 4096)
      environment_problem = std::string("TILESCOPE_CPU_WORKERS='") + w +
                            "' is not a worker count (0 = one per hardware thread, 1 = deterministic, at most 4096)";
    else
      o.workers = static_cast<int>(v);
  }
  if (const char* s = std::getenv("TILESCOPE_CPU_PERTURB_SEED"); s != nullptr && *s != '\0') {
    uint64_t v = 0;
    if (!parse_unsigned(s, v))
      environment_problem = std::string("TILESCOPE_CPU_PERTURB_SEED='") + s + "' is not a decimal seed";
    else
      o.perturb_seed = v;
  }
  return o;
}

}  // namespace

LaunchOptions& launch_options() {
  static LaunchOptions options = options_from_environment();
  return options;
}

cudaError_t check_launch(const void* kernel, const LaunchConfig& config) {
  (void)launch_options();
  if (!environment_problem.empty()) return fail(cudaErrorInvalidValue, environment_problem);
  if (kernel == nullptr) return fail(cudaErrorInvalidDeviceFunction, "launch of a null kernel");
  if (const std::optional<std::string> p = detail::launch_problem(config, launch_options())) {
    // A dimension or the shared memory maximum: what a GPU rejects at the launch.
    const bool smem = config.dynamic_shared_bytes > kMaxDynamicSharedBytes;
    return fail(smem ? cudaErrorInvalidValue : cudaErrorInvalidConfiguration, *p);
  }
  if (config.dynamic_shared_bytes > kStaticSharedBytes) {
    size_t optin = kStaticSharedBytes;
    {
      const std::lock_guard<std::mutex> lock(registry().mutex);
      const auto it = registry().dynamic_shared_optin.find(kernel);
      if (it != registry().dynamic_shared_optin.end()) optin = it->second;
    }
    if (config.dynamic_shared_bytes > optin)
      return fail(cudaErrorInvalidValue,
                  "the launch asks for " + std::to_string(config.dynamic_shared_bytes) +
                      " bytes of dynamic shared memory; above 49152 a GPU needs cudaFuncSetAttribute(kernel, "
                      "cudaFuncAttributeMaxDynamicSharedMemorySize, " +
                      std::to_string(config.dynamic_shared_bytes) + ") first" +
                      (optin > kStaticSharedBytes ? " (the kernel opted in to " + std::to_string(optin) + ")" : ""));
  }
  return cudaSuccess;
}

cudaError_t finish_launch(const LaunchResult& result) {
  if (result.ok()) return cudaSuccess;
  // Reported where a GPU reports a kernel's failure: by the next synchronising call, and by
  // cudaGetLastError.
  errors.pending = cudaErrorLaunchFailure;
  return fail(cudaErrorLaunchFailure, result.message);
}

}  // namespace simt::cuda_runtime
