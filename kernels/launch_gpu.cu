// The GPU backend: the kernels' nvcc build on the current CUDA device. Buffers are allocated
// per launch, poisoned (0xFF: NaN, and stage -1 in trace headers) before the kernels run,
// and copied back into the outcome. Every CUDA error becomes a LaunchError naming the call.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/launch_backends.h"
#include "kernels/launch_plan.h"

namespace ts::detail {
namespace {

void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  const LaunchFailure reason =
      err == cudaErrorMemoryAllocation ? LaunchFailure::too_large : LaunchFailure::failed;
  throw LaunchError(reason, std::string("CUDA error in ") + what + ": " + cudaGetErrorString(err) +
                                (reason == LaunchFailure::too_large
                                     ? " (reduce the sizes, or filter the trace)"
                                     : ""));
}

// One device allocation, freed on every path out of the launch.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t count, const char* what) : count_(count) {
    if (count > 0) check(cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T)), what);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), count_(o.count_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  T* get() const { return ptr_; }
  size_t bytes() const { return count_ * sizeof(T); }
  void poison() const {
    if (ptr_) check(cudaMemset(ptr_, 0xFF, bytes()), "cudaMemset (poisoning a buffer)");
  }
  void upload(const void* src) const {
    if (ptr_) check(cudaMemcpy(ptr_, src, bytes(), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  void download(void* dst) const {
    if (ptr_) check(cudaMemcpy(dst, ptr_, bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
  }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// cudaEvent pair for the kernels' time.
class EventTimer {
 public:
  EventTimer() {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start() { check(cudaEventRecord(start_), "cudaEventRecord"); }
  double stop_ms() {
    check(cudaEventRecord(stop_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "the kernels (cudaEventSynchronize)");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

std::string device_name(int device) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

}  // namespace

bool cuda_device_present(std::string* reason) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (reason) *reason = std::string("no CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();  // clear it: the CPU backend may run next
    return false;
  }
  if (count == 0) {
    if (reason) *reason = "no CUDA device: the driver reports none";
    return false;
  }
  return true;
}

LaunchOutcome launch_on_gpu(const LaunchRequest& request, const AttentionInputs& inputs) {
  std::string why;
  if (!cuda_device_present(&why)) throw LaunchError(LaunchFailure::no_device, why);
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  int sm_count = 0;
  check(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute");
  const LaunchPlan plan = plan_launch(request.config, sm_count, request.trace);
  const AttentionConfig& c = plan.config;
  const size_t d = static_cast<size_t>(c.head_dim);

  DeviceBuffer<std::byte> q(inputs.q.bytes.size(), "cudaMalloc (q)");
  DeviceBuffer<std::byte> k(inputs.k.bytes.size(), "cudaMalloc (k)");
  DeviceBuffer<std::byte> v(inputs.v.bytes.size(), "cudaMalloc (v)");
  q.upload(inputs.q.bytes.data());
  k.upload(inputs.k.bytes.data());
  v.upload(inputs.v.bytes.data());
  DeviceBuffer<std::byte> o(static_cast<size_t>(plan.o_elements) * dtype_size(c.dtype), "cudaMalloc (o)");
  DeviceBuffer<float> lse(static_cast<size_t>(plan.lse_elements), "cudaMalloc (lse)");
  const size_t prow = static_cast<size_t>(plan.partial_rows);
  DeviceBuffer<float> partial_o(prow * d, "cudaMalloc (partial O)");
  DeviceBuffer<float> partial_m(prow, "cudaMalloc (partial m)");
  DeviceBuffer<float> partial_l(prow, "cudaMalloc (partial l)");
  o.poison();
  lse.poison();
  partial_o.poison();
  partial_m.poison();
  partial_l.poison();

  // At least one slot when tracing, even for capacity 0: a null buffer would read as "tracing
  // off" and the kernels would not count what they drop.
  const size_t slots = plan.tracing ? std::max<size_t>(1, static_cast<size_t>(plan.trace_slots)) : 0;
  const size_t rows = static_cast<size_t>(plan.event_rows);
  DeviceBuffer<EventHeader> t_headers(slots, "cudaMalloc (trace headers)");
  DeviceBuffer<float> t_m(slots * rows, "cudaMalloc (trace m)");
  DeviceBuffer<float> t_l(slots * rows, "cudaMalloc (trace l)");
  DeviceBuffer<float> t_o(slots * rows * d, "cudaMalloc (trace O)");
  DeviceBuffer<unsigned long long> t_dropped(plan.tracing ? 1 : 0, "cudaMalloc (trace counter)");
  std::vector<DeviceBuffer<int64_t>> slot_tables;
  if (plan.tracing) {
    t_headers.poison();
    t_m.poison();
    t_l.poison();
    t_o.poison();
    if (t_dropped.get()) check(cudaMemset(t_dropped.get(), 0, sizeof(unsigned long long)), "cudaMemset");
    for (const PlannedKernel& pk : plan.kernels) {
      slot_tables.emplace_back(pk.slot_base.size(), "cudaMalloc (trace slot table)");
      slot_tables.back().upload(pk.slot_base.data());
    }
  }

  AttentionParams params = base_params(plan);
  params.q = q.get();
  params.k = k.get();
  params.v = v.get();
  params.o = o.get();
  params.lse = lse.get();
  params.partial_o = partial_o.get();
  params.partial_m = partial_m.get();
  params.partial_l = partial_l.get();

  EventTimer timer;
  const uint64_t total_blocks = plan.total_blocks();
  uint64_t blocks_done = 0;
  timer.start();
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const PlannedKernel& pk = plan.kernels[i];
    if (request.cancel != nullptr && request.cancel->load())
      throw LaunchError(LaunchFailure::cancelled, "the run was cancelled");
    const AttentionKernel fn =
        gpu::find_kernel(pk.stage, c.dtype, static_cast<int>(c.head_dim), plan.variant);
    if (fn == nullptr)
      throw LaunchError(LaunchFailure::failed, std::string("no GPU build of ") +
                                                   kernel_stage_name(pk.stage) + " for head_dim " +
                                                   std::to_string(c.head_dim));
    params.trace = TraceDeviceView{};
    if (plan.tracing) {
      params.trace.headers = t_headers.get();
      params.trace.m = t_m.get();
      params.trace.l = t_l.get();
      params.trace.o = t_o.get();
      params.trace.capacity = plan.trace_slots;
      params.trace.dropped = t_dropped.get();
      params.trace.block_slot_base = slot_tables[i].get();
      params.trace.block_m = plan.event_rows;
      params.trace.head_dim = static_cast<int32_t>(c.head_dim);
    }
    const std::string name = kernel_stage_name(pk.stage);
    if (pk.smem_bytes > 48 * 1024)
      check(cudaFuncSetAttribute(reinterpret_cast<const void*>(fn),
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(pk.smem_bytes)),
            ("cudaFuncSetAttribute (" + name + " shared memory)").c_str());
    void* args[] = {&params};
    check(cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(pk.grid_x, pk.grid_y, pk.grid_z),
                           dim3(kKernelThreads, 1, 1), args, pk.smem_bytes, nullptr),
          ("cudaLaunchKernel (" + name + ")").c_str());
    if (request.progress) {
      check(cudaDeviceSynchronize(), ("the " + name + " kernel").c_str());
      blocks_done += pk.blocks();
      request.progress(blocks_done, total_blocks);
    }
  }
  const double elapsed = timer.stop_ms();
  check(cudaDeviceSynchronize(), "the kernels (cudaDeviceSynchronize)");

  LaunchOutcome out;
  out.config = c;
  out.tiling = plan.tiling;
  out.backend = Backend::gpu;
  out.device = device_name(device);
  out.elapsed_ms = elapsed;
  out.o = HostTensor::zeros(c.dtype, {c.batch, c.heads, c.seq_q, c.head_dim});
  o.download(out.o.bytes.data());
  out.lse.resize(static_cast<size_t>(plan.lse_elements));
  lse.download(out.lse.data());
  if (prow > 0) {
    out.partial_o.resize(prow * d);
    out.partial_m.resize(prow);
    out.partial_l.resize(prow);
    partial_o.download(out.partial_o.data());
    partial_m.download(out.partial_m.data());
    partial_l.download(out.partial_l.data());
  }
  if (plan.tracing) {
    std::vector<EventHeader> h(slots);
    std::vector<float> hm(slots * rows), hl(slots * rows), ho(slots * rows * d);
    unsigned long long dropped = 0;
    t_headers.download(h.data());
    t_m.download(hm.data());
    t_l.download(hl.data());
    t_o.download(ho.data());
    t_dropped.download(&dropped);
    out.events = collect_events(plan, h.data(), hm.data(), hl.data(), ho.data(), dropped);
  }
  return out;
}

}  // namespace ts::detail
