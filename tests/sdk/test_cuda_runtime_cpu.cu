// The CUDA runtime API subset of tilescope's CPU path (instrumentation/simt/cuda_runtime_cpu.h),
// through the shim headers as a user's .cu sees them (built by tilescope_add_cpu_executable):
// memory, symbols, launches (TILESCOPE_LAUNCH, cudaLaunchKernel), dynamic shared memory opt-in,
// configuration and execution errors with their codes, strings and reporting calls, streams,
// events and the device's description.
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

__device__ int g_device_value;
__constant__ float g_constants[4];

__global__ void add_constants(float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = g_constants[i % 4] + static_cast<float>(g_device_value);
}

template <typename T, int kScale>
__global__ void scaled_index(T* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = static_cast<T>(i * kScale);
}

// Reverses `n` floats through dynamic shared memory (one block).
__global__ void reverse_in_shared(const float* in, float* out, int n) {
  TILESCOPE_DYNAMIC_SHARED(float, tile);
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) tile[i] = in[i];
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) out[i] = tile[n - 1 - i];
}

__global__ void trap_in_block(int bad_block) {
  if (static_cast<int>(blockIdx.x) == bad_block && threadIdx.x == 3) __trap();
}

__global__ void spin(int iterations, int* sink) {
  int x = 0;
  for (int i = 0; i < iterations; ++i) x += i ^ static_cast<int>(threadIdx.x);
  if (x == -1) *sink = x;  // never: keeps the loop
}

// Every test starts with no error left over.
class CudaRuntimeCpu : public ::testing::Test {
 protected:
  void SetUp() override { cudaGetLastError(); }
};

TEST_F(CudaRuntimeCpu, MallocGivesAlignedMemoryPoisonedWithNaN) {
  float* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 100 * sizeof(float)), cudaSuccess);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(std::isnan(p[i])) << i;
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  void* none = reinterpret_cast<void*>(1);
  EXPECT_EQ(cudaMalloc(&none, 0), cudaSuccess);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
}

TEST_F(CudaRuntimeCpu, FreeingWhatMallocDidNotReturnIsInvalidValueWithAReason) {
  float* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaErrorInvalidValue);  // twice
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // cleared
  int local = 0;
  EXPECT_EQ(cudaFree(&local), cudaErrorInvalidValue);
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorInvalidValue)).find("cudaFree of a pointer that cudaMalloc did not return"),
            std::string::npos);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  void* host = nullptr;
  ASSERT_EQ(cudaMallocHost(&host, 32), cudaSuccess);
  EXPECT_EQ(cudaFree(host), cudaErrorInvalidValue);  // host memory is freed with cudaFreeHost
  EXPECT_EQ(cudaFreeHost(host), cudaSuccess);
}

TEST_F(CudaRuntimeCpu, CopiesOfEveryKindAndMemset) {
  std::vector<float> host = {1, 2, 3, 4, 5, 6, 7, 8};
  float *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 8 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 8 * sizeof(float)), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(a, host.data(), 32, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(b, a, 32, cudaMemcpyDeviceToDevice, s), cudaSuccess);
  std::vector<float> back(8, 0.0f);
  EXPECT_EQ(cudaMemcpyAsync(back.data(), b, 32, cudaMemcpyDefault, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(back, host);
  EXPECT_EQ(cudaMemsetAsync(a, 0, 32, s), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(back.data(), a, 32, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, std::vector<float>(8, 0.0f));
  EXPECT_EQ(cudaMemcpy(back.data(), a, 32, static_cast<cudaMemcpyKind>(7)), cudaErrorInvalidMemcpyDirection);
  EXPECT_EQ(cudaMemcpy(nullptr, a, 32, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaFree(a), cudaSuccess);
  EXPECT_EQ(cudaFree(b), cudaSuccess);
}

TEST_F(CudaRuntimeCpu, SymbolsAreCopiedToAndFromAndReadByKernels) {
  const float constants[4] = {0.5f, 1.5f, 2.5f, 3.5f};
  const int value = 10;
  ASSERT_EQ(cudaMemcpyToSymbol(g_constants, constants, sizeof(constants)), cudaSuccess);
  ASSERT_EQ(cudaMemcpyToSymbolAsync(g_device_value, &value, sizeof(int), 0, cudaMemcpyHostToDevice, nullptr),
            cudaSuccess);
  float* out = nullptr;
  ASSERT_EQ(cudaMalloc(&out, 8 * sizeof(float)), cudaSuccess);
  TILESCOPE_LAUNCH(add_constants, 1, 8)(out, 8);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  float back[8];
  ASSERT_EQ(cudaMemcpy(back, out, sizeof(back), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(back[i], constants[i % 4] + 10.0f);

  float two[2] = {0, 0};
  EXPECT_EQ(cudaMemcpyFromSymbol(two, g_constants, sizeof(two), 2 * sizeof(float)), cudaSuccess);
  EXPECT_EQ(two[0], 2.5f);
  EXPECT_EQ(two[1], 3.5f);
  // Past the variable's end: refused, nothing written.
  EXPECT_EQ(cudaMemcpyToSymbol(g_constants, constants, sizeof(constants), sizeof(float)), cudaErrorInvalidValue);
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorInvalidValue)).find("runs past the symbol's 16 bytes"),
            std::string::npos);
  void* address = nullptr;
  EXPECT_EQ(cudaGetSymbolAddress(&address, g_device_value), cudaSuccess);
  EXPECT_EQ(address, static_cast<void*>(&g_device_value));
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

TEST_F(CudaRuntimeCpu, LaunchFormsAndTemplateKernels) {
  int* out = nullptr;
  ASSERT_EQ(cudaMalloc(&out, 100 * sizeof(int)), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  // A template-id with a comma is parenthesised, as the macro's comment says.
  TILESCOPE_LAUNCH((scaled_index<int, 3>), dim3(4), dim3(32), 0, s)(out, 100);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(out[i], 3 * i);

  int n = 50;
  void* args[] = {&out, &n};
  EXPECT_EQ(cudaLaunchKernel(scaled_index<int, 5>, dim3(2), dim3(32), args, 0, s), cudaSuccess);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(out[i], 5 * i);
  EXPECT_EQ(out[50], 150);  // untouched past n
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

TEST_F(CudaRuntimeCpu, DynamicSharedMemoryAbove48KiBNeedsTheAttributeAsOnAGpu) {
  const int n = 16384;  // 64 KiB of floats
  float *in = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(&in, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, n * sizeof(float)), cudaSuccess);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>(i);

  TILESCOPE_LAUNCH(reverse_in_shared, 1, 256, n * sizeof(float))(in, out, n);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorInvalidValue)).find("cudaFuncAttributeMaxDynamicSharedMemorySize"),
            std::string::npos);
  EXPECT_TRUE(std::isnan(out[0]));  // the kernel did not run

  ASSERT_EQ(cudaFuncSetAttribute(reverse_in_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, n * sizeof(float)),
            cudaSuccess);
  TILESCOPE_LAUNCH(reverse_in_shared, 1, 256, n * sizeof(float))(in, out, n);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  for (int i = 0; i < n; i += 997) EXPECT_EQ(out[i], static_cast<float>(n - 1 - i));

  EXPECT_EQ(cudaFuncSetAttribute(reverse_in_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(in), cudaSuccess);
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

TEST_F(CudaRuntimeCpu, BadConfigurationsAreRefusedAtTheLaunch) {
  int* out = nullptr;
  ASSERT_EQ(cudaMalloc(&out, 64 * sizeof(int)), cudaSuccess);
  TILESCOPE_LAUNCH((scaled_index<int, 1>), 1, 2048)(out, 64);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);  // peek leaves it
  EXPECT_NE(std::string(cudaGetErrorString(cudaErrorInvalidConfiguration)).find("exceeds the limits (x and y <= 1024"),
            std::string::npos);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  TILESCOPE_LAUNCH((scaled_index<int, 1>), dim3(0), 32)(out, 64);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

TEST_F(CudaRuntimeCpu, AKernelThatFailsIsReportedByTheNextSynchronisingCall) {
  TILESCOPE_LAUNCH(trap_in_block, 4, 32)(2);
  const cudaError_t sync = cudaDeviceSynchronize();
  EXPECT_EQ(sync, cudaErrorLaunchFailure);
  const std::string text = cudaGetErrorString(sync);
  EXPECT_NE(text.find("unspecified launch failure"), std::string::npos) << text;
  EXPECT_NE(text.find("__trap"), std::string::npos) << text;
  EXPECT_NE(text.find("thread (3,0,0) of block (2,0,0)"), std::string::npos) << text;
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  // Not sticky: the runtime carries on.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  int* out = nullptr;
  ASSERT_EQ(cudaMalloc(&out, 32 * sizeof(int)), cudaSuccess);
  TILESCOPE_LAUNCH((scaled_index<int, 2>), 1, 32)(out, 32);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(out[31], 62);
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

TEST_F(CudaRuntimeCpu, EventsTimeTheWorkBetweenThem) {
  cudaEvent_t start = nullptr, stop = nullptr, untimed = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  float ms = -1.0f;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaErrorInvalidResourceHandle);  // never recorded
  int* sink = nullptr;
  ASSERT_EQ(cudaMalloc(&sink, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(start), cudaSuccess);
  TILESCOPE_LAUNCH(spin, 1, 32)(1000, sink);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(cudaEventRecord(stop), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(stop), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_GE(ms, 19.0f);
  EXPECT_LT(ms, 10000.0f);
  ASSERT_EQ(cudaEventRecord(untimed), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, untimed), cudaErrorInvalidResourceHandle);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(s, stop, 0), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  for (cudaEvent_t e : {start, stop, untimed}) EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(start), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaFree(sink), cudaSuccess);
}

TEST_F(CudaRuntimeCpu, TheDeviceIsOneWithAnH100sLimits) {
  int count = 0, device = -1;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_STREQ(p.name, "tilescope CPU SIMT runtime");
  EXPECT_EQ(p.warpSize, 32);
  EXPECT_EQ(p.maxThreadsPerBlock, 1024);
  EXPECT_EQ(p.sharedMemPerBlock, 48u * 1024);
  EXPECT_EQ(p.sharedMemPerBlockOptin, 227u * 1024);
  EXPECT_EQ(p.multiProcessorCount, 132);
  EXPECT_EQ(p.major, 9);
  EXPECT_GT(p.totalGlobalMem, 0u);
  int value = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_EQ(value, 132);
  EXPECT_EQ(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), cudaSuccess);
  EXPECT_EQ(value, 227 * 1024);
  size_t free_bytes = 0, total_bytes = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_LE(free_bytes, total_bytes);
}

TEST_F(CudaRuntimeCpu, LaunchSettingsChooseWorkersAndPerturbTheSchedule) {
  simt::LaunchOptions& options = simt::cuda_runtime::launch_options();
  const simt::LaunchOptions saved = options;
  options.workers = 1;
  options.perturb_seed = 7;
  int* out = nullptr;
  ASSERT_EQ(cudaMalloc(&out, 256 * sizeof(int)), cudaSuccess);
  TILESCOPE_LAUNCH((scaled_index<int, 1>), 8, 32)(out, 256);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(out[255], 255);
  options = saved;
  EXPECT_EQ(cudaFree(out), cudaSuccess);
}

}  // namespace
