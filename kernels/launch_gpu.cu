// The GPU backend: the kernels' nvcc build on the current CUDA device. Buffers are allocated
// per launch, poisoned (0xFF: NaN, and stage -1 in trace headers) before the kernels run,
// and copied back into the outcome. Every CUDA error becomes a LaunchError naming the call.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/gpu_timing.h"
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

// A second stream, beside the legacy default one the kernels are launched on, with the events
// that fork work into it and join it back: a traced build of two kernels (kernels/kernel_registry.h)
// runs its recording kernel there, side by side with the kernel of the blocks that record
// nothing. Non-blocking, so that the default stream does not serialise it.
class SideStream {
 public:
  SideStream() {
    // The greatest priority: the block scheduler then hands out the recording kernel's blocks
    // before the other kernel's, which would otherwise take every SM first and leave the
    // (slower) recording blocks to the end of the grid (FA-2 prefill on an H100, one head traced:
    // +14% at the default priority, +1-2% at the greatest; docs/perf.md).
    try {
      int least = 0, greatest = 0;
      check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
      check(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest), "cudaStreamCreateWithPriority");
      check(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      check(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    } catch (...) {
      release();
      throw;
    }
  }
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;
  // Waits for what the side stream holds (a launch that threw between fork and join leaves a
  // kernel there reading the run's buffers, which GpuRun frees after this).
  ~SideStream() { release(); }
  // The side stream, which starts after what the default stream holds so far.
  cudaStream_t fork() {
    check(cudaEventRecord(fork_, nullptr), "cudaEventRecord (fork)");
    check(cudaStreamWaitEvent(stream_, fork_, 0), "cudaStreamWaitEvent (fork)");
    return stream_;
  }
  // What the default stream holds next starts after what the side stream holds.
  void join() {
    check(cudaEventRecord(join_, stream_), "cudaEventRecord (join)");
    check(cudaStreamWaitEvent(nullptr, join_, 0), "cudaStreamWaitEvent (join)");
  }

 private:
  void release() {
    if (stream_) cudaStreamSynchronize(stream_);
    if (join_) cudaEventDestroy(join_);
    if (fork_) cudaEventDestroy(fork_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_{};
  cudaEvent_t fork_{}, join_{};
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
    if (reason) {
      // The runtime reports a machine with no NVIDIA driver at all as an "insufficient" driver
      // version; say both, so that a user without a GPU is not sent to upgrade a driver.
      *reason = err == cudaErrorInsufficientDriver
                    ? std::string("no CUDA device: the NVIDIA driver is missing, or older than this build's CUDA runtime (") +
                          cudaGetErrorString(err) + ")"
                    : std::string("no CUDA device: ") + cudaGetErrorString(err);
    }
    cudaGetLastError();  // clear it: the CPU backend may run next
    return false;
  }
  if (count == 0) {
    if (reason) *reason = "no CUDA device: the driver reports none";
    return false;
  }
  return true;
}

namespace {

// One GPU run's buffers, poisoned and filled, and its kernels: launched once by launch_on_gpu,
// many times by time_on_gpu.
class GpuRun {
 public:
  GpuRun(const LaunchRequest& request, const AttentionInputs& inputs) : request_(request) {
    std::string why;
    if (!cuda_device_present(&why)) throw LaunchError(LaunchFailure::no_device, why);
    check(cudaGetDevice(&device_), "cudaGetDevice");
    int sm_count = 0;
    check(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device_),
          "cudaDeviceGetAttribute");
    plan_ = plan_launch(request.config, sm_count, request.trace, request.tile_events);
    const AttentionConfig& c = plan_.config;
    const size_t d = static_cast<size_t>(c.head_dim);

    q_ = DeviceBuffer<std::byte>(inputs.q.bytes.size(), "cudaMalloc (q)");
    k_ = DeviceBuffer<std::byte>(inputs.k.bytes.size(), "cudaMalloc (k)");
    v_ = DeviceBuffer<std::byte>(inputs.v.bytes.size(), "cudaMalloc (v)");
    q_.upload(inputs.q.bytes.data());
    k_.upload(inputs.k.bytes.data());
    v_.upload(inputs.v.bytes.data());
    o_ = DeviceBuffer<std::byte>(static_cast<size_t>(plan_.o_elements) * dtype_size(c.dtype), "cudaMalloc (o)");
    lse_ = DeviceBuffer<float>(static_cast<size_t>(plan_.lse_elements), "cudaMalloc (lse)");
    const size_t prow = static_cast<size_t>(plan_.partial_rows);
    partial_o_ = DeviceBuffer<float>(prow * d, "cudaMalloc (partial O)");
    partial_m_ = DeviceBuffer<float>(prow, "cudaMalloc (partial m)");
    partial_l_ = DeviceBuffer<float>(prow, "cudaMalloc (partial l)");
    o_.poison();
    lse_.poison();
    partial_o_.poison();
    partial_m_.poison();
    partial_l_.poison();

    // At least one slot when tracing, even for capacity 0: a null buffer would read as
    // "tracing off" and the kernels would not count what they drop.
    slots_ = plan_.tracing ? std::max<size_t>(1, static_cast<size_t>(plan_.trace_slots)) : 0;
    const size_t rows = static_cast<size_t>(plan_.event_rows);
    t_headers_ = DeviceBuffer<EventHeader>(slots_, "cudaMalloc (trace headers)");
    t_m_ = DeviceBuffer<float>(slots_ * rows, "cudaMalloc (trace m)");
    t_l_ = DeviceBuffer<float>(slots_ * rows, "cudaMalloc (trace l)");
    t_o_ = DeviceBuffer<float>(slots_ * rows * d, "cudaMalloc (trace O)");
    t_dropped_ = DeviceBuffer<unsigned long long>(plan_.tracing ? 1 : 0, "cudaMalloc (trace counter)");
    if (plan_.tracing) {
      t_headers_.poison();
      t_m_.poison();
      t_l_.poison();
      t_o_.poison();
      for (const PlannedKernel& pk : plan_.kernels) {
        slot_tables_.emplace_back(pk.slot_base.size(), "cudaMalloc (trace slot table)");
        slot_tables_.back().upload(pk.slot_base.data());
      }
    }
    reset_dropped();

    params_ = base_params(plan_);
    params_.q = q_.get();
    params_.k = k_.get();
    params_.v = v_.get();
    params_.o = o_.get();
    params_.lse = lse_.get();
    params_.partial_o = partial_o_.get();
    params_.partial_m = partial_m_.get();
    params_.partial_l = partial_l_.get();
    for (const PlannedKernel& pk : plan_.kernels) {
      const AttentionKernel fn = gpu::find_kernel(pk.stage, c.dtype, static_cast<int>(c.head_dim), pk.variant);
      if (fn == nullptr)
        throw LaunchError(LaunchFailure::failed, std::string("no GPU build of ") +
                                                     kernel_stage_name(pk.stage) + " for head_dim " +
                                                     std::to_string(c.head_dim));
      const std::string what = std::string("cudaFuncSetAttribute (") + kernel_stage_name(pk.stage) + " shared memory)";
      set_max_dynamic_smem(fn, pk.smem_bytes, what.c_str());
      const AttentionKernel plain = gpu::find_kernel(pk.stage, c.dtype, static_cast<int>(c.head_dim), KernelVariant::plain);
      const size_t smem = occupancy_matched_smem(fn, plain, pk.stage, pk.smem_bytes, what.c_str());
      kernels_.push_back(fn);
      smem_bytes_.push_back(smem);
      // A traced build of two kernels: its recording kernel, at the plain build's occupancy too.
      Recording rec;
      if (pk.variant == KernelVariant::traced) {
        rec.kernel = gpu::find_recording_kernel(pk.stage, c.dtype, static_cast<int>(c.head_dim));
        if (rec.kernel != nullptr) {
          set_max_dynamic_smem(rec.kernel, pk.smem_bytes, what.c_str());
          rec.smem_bytes = occupancy_matched_smem(rec.kernel, plain, pk.stage, pk.smem_bytes, what.c_str());
          if (pk.runs_recording_kernel() && pk.runs_other_kernel() && !side_) side_ = std::make_unique<SideStream>();
        }
      }
      recording_.push_back(rec);
    }
  }

  static void set_max_dynamic_smem(AttentionKernel fn, size_t bytes, const char* what) {
    if (bytes > 48 * 1024)
      check(cudaFuncSetAttribute(reinterpret_cast<const void*>(fn), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(bytes)),
            what);
  }

  // The dynamic shared memory to launch a kernel with so that no more of its blocks share an SM
  // than they should: for an instrumented or faulty build, no more than of the plain build's (a
  // debugger runs the kernel with the schedule the plain build gets); for the Split-K partial,
  // in any build, no more than kSplitkBlocksPerSm (kernels/tile_shapes.h), the occupancy its
  // split heuristic counts on. How many a build's registers and shared memory allow is an
  // accident of each build: the decode kernel has come out at two blocks of 128 threads to an SM
  // and at three (the warps' kernel at head dim 128 on sm_90); with three, the block scheduler
  // packs the decode grid's blocks onto fewer SMs, with less L1 beside the larger shared-memory
  // carve-out (the warps' kernel copies K and V through L1), and it ran slower
  // (docs/gpu-validation.md and docs/perf.md have the counts and timings). The extra blocks are kept out with shared memory
  // they do not use. Where a build fits fewer blocks than the target, nothing can be done.
  size_t occupancy_matched_smem(AttentionKernel fn, AttentionKernel plain, KernelStage stage, size_t smem,
                                const char* what) const {
    auto blocks_per_sm = [](AttentionKernel k, size_t bytes) {
      int n = 0;
      check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, reinterpret_cast<const void*>(k), kKernelThreads, bytes),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      return n;
    };
    int target = blocks_per_sm(fn, smem);
    if (plain != nullptr && plain != fn) {
      set_max_dynamic_smem(plain, smem, what);
      target = std::min(target, blocks_per_sm(plain, smem));
    }
    if (stage == KernelStage::splitk_partial) target = std::min(target, kSplitkBlocksPerSm);
    if (target <= 0 || blocks_per_sm(fn, smem) <= target) return smem;
    int per_sm = 0, per_block = 0;
    check(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device_), "cudaDeviceGetAttribute");
    check(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_), "cudaDeviceGetAttribute");
    // The smallest size at which target + 1 blocks no longer fit, found by stepping up (each
    // block also costs a reserved 1 KiB the occupancy calculator accounts for).
    for (size_t bytes = std::max(smem, static_cast<size_t>(per_sm) / (target + 1)); bytes <= static_cast<size_t>(per_block);
         bytes += 256) {
      set_max_dynamic_smem(fn, bytes, what);
      if (blocks_per_sm(fn, bytes) <= target) return bytes;
    }
    set_max_dynamic_smem(fn, smem, what);
    return smem;
  }

  void reset_dropped() const {
    if (t_dropped_.get()) check(cudaMemset(t_dropped_.get(), 0, sizeof(unsigned long long)), "cudaMemset");
  }

  // Enqueues the plan's kernels (the caller synchronises); progress, when asked, syncs after
  // each kernel.
  void launch_kernels() {
    const uint64_t total_blocks = plan_.total_blocks();
    uint64_t blocks_done = 0;
    for (size_t i = 0; i < plan_.kernels.size(); ++i) {
      const PlannedKernel& pk = plan_.kernels[i];
      if (request_.cancel != nullptr && request_.cancel->load())
        throw LaunchError(LaunchFailure::cancelled, "the run was cancelled");
      AttentionParams params = params_;
      if (plan_.tracing)
        params.trace = trace_view(plan_, pk, {t_headers_.get(), t_m_.get(), t_l_.get(), t_o_.get(), t_dropped_.get()},
                                  slot_tables_[i].get());
      const std::string name = kernel_stage_name(pk.stage);
      void* args[] = {&params};
      auto launch = [&](AttentionKernel fn, size_t smem, cudaStream_t stream, const char* which) {
        check(cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(pk.grid_x, pk.grid_y, pk.grid_z),
                               dim3(kKernelThreads, 1, 1), args, smem, stream),
              ("cudaLaunchKernel (" + name + which + ")").c_str());
      };
      // A traced build of two kernels runs the one whose blocks all run, or both side by side:
      // the recording kernel first, so that its blocks are not left to the end of the grid's.
      const Recording& rec = recording_[i];
      if (rec.kernel == nullptr || !pk.runs_recording_kernel()) {
        launch(kernels_[i], smem_bytes_[i], nullptr, "");
      } else if (!pk.runs_other_kernel()) {
        launch(rec.kernel, rec.smem_bytes, nullptr, ", recording blocks");
      } else {
        launch(rec.kernel, rec.smem_bytes, side_->fork(), ", recording blocks");
        launch(kernels_[i], smem_bytes_[i], nullptr, "");
        side_->join();
      }
      if (request_.progress) {
        check(cudaDeviceSynchronize(), ("the " + name + " kernel").c_str());
        blocks_done += pk.blocks();
        request_.progress(blocks_done, total_blocks);
      }
    }
  }

  LaunchOutcome collect(double elapsed_ms) const {
    check(cudaDeviceSynchronize(), "the kernels (cudaDeviceSynchronize)");
    const AttentionConfig& c = plan_.config;
    const size_t d = static_cast<size_t>(c.head_dim);
    LaunchOutcome out;
    out.config = c;
    out.tiling = plan_.tiling;
    out.backend = Backend::gpu;
    out.device = device_name(device_);
    out.elapsed_ms = elapsed_ms;
    out.o = HostTensor::zeros(c.dtype, {c.batch, c.heads, c.seq_q, c.head_dim});
    o_.download(out.o.bytes.data());
    out.lse.resize(static_cast<size_t>(plan_.lse_elements));
    lse_.download(out.lse.data());
    const size_t prow = static_cast<size_t>(plan_.partial_rows);
    if (prow > 0) {
      out.partial_o.resize(prow * d);
      out.partial_m.resize(prow);
      out.partial_l.resize(prow);
      partial_o_.download(out.partial_o.data());
      partial_m_.download(out.partial_m.data());
      partial_l_.download(out.partial_l.data());
    }
    if (plan_.tracing) {
      const size_t rows = static_cast<size_t>(plan_.event_rows);
      std::vector<EventHeader> h(slots_);
      std::vector<float> hm(slots_ * rows), hl(slots_ * rows), ho(slots_ * rows * d);
      unsigned long long dropped = 0;
      t_headers_.download(h.data());
      t_m_.download(hm.data());
      t_l_.download(hl.data());
      t_o_.download(ho.data());
      t_dropped_.download(&dropped);
      out.events = collect_events(plan_, h.data(), hm.data(), hl.data(), ho.data(), dropped);
    }
    return out;
  }

 private:
  const LaunchRequest& request_;
  int device_ = 0;
  LaunchPlan plan_;
  AttentionParams params_;
  std::vector<AttentionKernel> kernels_;
  std::vector<size_t> smem_bytes_;  // per kernel: the plan's, or more (occupancy_matched_smem)
  // Per kernel: a traced build's recording kernel (kernels/kernel_registry.h), if it has one.
  struct Recording {
    AttentionKernel kernel = nullptr;
    size_t smem_bytes = 0;
  };
  std::vector<Recording> recording_;
  DeviceBuffer<std::byte> q_, k_, v_, o_;
  DeviceBuffer<float> lse_, partial_o_, partial_m_, partial_l_;
  size_t slots_ = 0;
  DeviceBuffer<EventHeader> t_headers_;
  DeviceBuffer<float> t_m_, t_l_, t_o_;
  DeviceBuffer<unsigned long long> t_dropped_;
  std::vector<DeviceBuffer<int64_t>> slot_tables_;
  // When some kernel runs both of its traced kernels. Declared last, destroyed first: it waits
  // for its stream before the buffers are freed.
  std::unique_ptr<SideStream> side_;
};

}  // namespace

LaunchOutcome launch_on_gpu(const LaunchRequest& request, const AttentionInputs& inputs) {
  GpuRun run(request, inputs);
  EventTimer timer;
  timer.start();
  run.launch_kernels();
  const double elapsed = timer.stop_ms();
  return run.collect(elapsed);
}

std::vector<GpuTiming> time_kernels_in_turn(const std::vector<LaunchRequest>& requests,
                                            const AttentionInputs& inputs, int warmup, int runs, int rounds) {
  if (runs < 1 || warmup < 0 || rounds < 1)
    throw ConfigError("runs", "timing on the GPU needs runs >= 1, warmup >= 0 and rounds >= 1");
  std::vector<std::unique_ptr<GpuRun>> gpu_runs;
  for (const LaunchRequest& r : requests) gpu_runs.push_back(std::make_unique<GpuRun>(r, inputs));
  for (auto& run : gpu_runs)
    for (int i = 0; i < warmup; ++i) run->launch_kernels();
  std::vector<GpuTiming> timings(requests.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < gpu_runs.size(); ++k) {
      EventTimer timer;
      timer.start();
      for (int i = 0; i < runs; ++i) gpu_runs[k]->launch_kernels();
      timings[k].round_ms.push_back(timer.stop_ms() / runs);
    }
  }
  for (size_t k = 0; k < gpu_runs.size(); ++k) {
    GpuTiming& t = timings[k];
    std::vector<double> sorted = t.round_ms;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    t.ms_per_run = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    t.runs = runs;
    // One more run whose buffers the outcome shows (a trace's dropped count is per run).
    gpu_runs[k]->reset_dropped();
    EventTimer last;
    last.start();
    gpu_runs[k]->launch_kernels();
    t.outcome = gpu_runs[k]->collect(last.stop_ms());
  }
  return timings;
}

}  // namespace ts::detail

namespace ts {

GpuTiming time_on_gpu(const LaunchRequest& request, const AttentionInputs& inputs, int warmup,
                      int runs) {
  return time_in_turn_on_gpu({request}, inputs, warmup, runs, 1).front();
}

std::vector<GpuTiming> time_in_turn_on_gpu(const std::vector<LaunchRequest>& requests,
                                           const AttentionInputs& inputs, int warmup, int runs, int rounds) {
  for (const LaunchRequest& r : requests) {
    validate(r.config);
    check_inputs(r.config, inputs);
  }
  return detail::time_kernels_in_turn(requests, inputs, warmup, runs, rounds);
}

}  // namespace ts
