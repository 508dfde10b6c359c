// The CPU backend: the kernels' host build run by the SIMT runtime, writing straight into the
// outcome's buffers (poisoned with NaN first, like the GPU's).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>

#include "instrumentation/simt/runtime.h"
#include "kernels/launch_backends.h"
#include "kernels/launch_plan.h"

namespace ts::detail {
namespace {

// 0xFF bytes: NaN as float, fp16 and bf16; -1 as the int32 fields of an EventHeader.
template <typename T>
void poison(std::vector<T>& v) {
  std::memset(static_cast<void*>(v.data()), 0xFF, v.size() * sizeof(T));
}

}  // namespace

LaunchOutcome launch_on_cpu(const LaunchRequest& request, const AttentionInputs& inputs) {
  const LaunchPlan plan = plan_launch(request.config, kCpuNominalSmCount, request.trace, request.tile_events);
  const AttentionConfig& c = plan.config;
  const int workers =
      request.cpu_workers > 0 ? request.cpu_workers
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  LaunchOutcome out;
  std::vector<EventHeader> headers;
  std::vector<float> tm, tl, to;
  unsigned long long dropped = 0;
  try {
    out.o = HostTensor::zeros(c.dtype, {c.batch, c.heads, c.seq_q, c.head_dim});
    std::memset(out.o.bytes.data(), 0xFF, out.o.bytes.size());
    out.lse.resize(static_cast<size_t>(plan.lse_elements));
    poison(out.lse);
    if (plan.partial_rows > 0) {
      const size_t rows = static_cast<size_t>(plan.partial_rows);
      out.partial_o.resize(rows * static_cast<size_t>(c.head_dim));
      out.partial_m.resize(rows);
      out.partial_l.resize(rows);
      poison(out.partial_o);
      poison(out.partial_m);
      poison(out.partial_l);
    }
    if (plan.tracing) {
      // At least one slot even for capacity 0: a null buffer would read as "tracing off" and
      // the kernels would not count what they drop.
      const size_t slots = std::max<size_t>(1, static_cast<size_t>(plan.trace_slots));
      const size_t rows = static_cast<size_t>(plan.event_rows);
      headers.resize(slots);
      tm.resize(slots * rows);
      tl.resize(slots * rows);
      to.resize(slots * rows * static_cast<size_t>(c.head_dim));
      poison(headers);
      poison(tm);
      poison(tl);
      poison(to);
    }
  } catch (const std::bad_alloc&) {
    throw LaunchError(LaunchFailure::too_large,
                      "not enough host memory for the outputs (" +
                          std::to_string(plan.output_bytes() >> 20) + " MiB) and trace (" +
                          std::to_string(plan.trace_bytes() >> 20) +
                          " MiB); reduce the sizes or filter the trace");
  }

  AttentionParams params = base_params(plan);
  params.q = inputs.q.bytes.data();
  params.k = inputs.k.bytes.data();
  params.v = inputs.v.bytes.data();
  params.o = out.o.bytes.data();
  params.lse = out.lse.data();
  params.partial_o = out.partial_o.empty() ? nullptr : out.partial_o.data();
  params.partial_m = out.partial_m.empty() ? nullptr : out.partial_m.data();
  params.partial_l = out.partial_l.empty() ? nullptr : out.partial_l.data();

  const uint64_t total_blocks = plan.total_blocks();
  uint64_t blocks_before = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const PlannedKernel& k : plan.kernels) {
    const AttentionKernel fn =
        cpu::find_kernel(k.stage, c.dtype, static_cast<int>(c.head_dim), k.variant);
    if (fn == nullptr)
      throw LaunchError(LaunchFailure::failed, std::string("no CPU build of ") +
                                                   kernel_stage_name(k.stage) + " for head_dim " +
                                                   std::to_string(c.head_dim));
    params.trace = trace_view(plan, k, {headers.data(), tm.data(), tl.data(), to.data(), &dropped},
                              k.slot_base.data());
    // A traced build of two kernels (kernels/kernel_registry.h) runs as on the GPU: the one whose
    // blocks all run, or both over the grid (here one after the other, the progress the mean of
    // the two's).
    const AttentionKernel recording = k.variant == KernelVariant::traced
                                          ? cpu::find_recording_kernel(k.stage, c.dtype, static_cast<int>(c.head_dim))
                                          : nullptr;
    std::vector<AttentionKernel> kernels;
    if (recording != nullptr && k.runs_recording_kernel()) kernels.push_back(recording);
    if (recording == nullptr || k.runs_other_kernel()) kernels.push_back(fn);
    uint64_t done_before = 0;  // blocks of the grid the kernels before this one ran
    for (const AttentionKernel kernel : kernels) {
      simt::LaunchOptions options;
      options.workers = workers;
      options.perturb_seed = request.perturb_seed;
      options.cancel = request.cancel;
      if (request.progress) {
        const uint64_t parts = kernels.size();
        options.progress = [&request, blocks_before, total_blocks, done_before, parts](uint64_t done, uint64_t) {
          request.progress(blocks_before + (done_before + done) / parts, total_blocks);
        };
      }
      const simt::LaunchResult r = simt::launch(
          simt::LaunchConfig{dim3(k.grid_x, k.grid_y, k.grid_z), dim3(kKernelThreads, 1, 1), k.smem_bytes},
          options, kernel, params);
      if (r.status == simt::LaunchResult::Status::cancelled)
        throw LaunchError(LaunchFailure::cancelled, "the run was cancelled");
      if (!r.ok())
        throw LaunchError(LaunchFailure::failed, std::string("the CPU run of ") + kernel_stage_name(k.stage) +
                                                     " failed: " + r.message);
      done_before += k.blocks();
    }
    blocks_before += k.blocks();
  }
  out.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  out.config = c;
  out.tiling = plan.tiling;
  out.backend = Backend::cpu;
  out.device = "CPU SIMT (" + std::to_string(workers) + (workers == 1 ? " worker)" : " workers)");
  if (plan.tracing) out.events = collect_events(plan, headers.data(), tm.data(), tl.data(), to.data(), dropped);
  return out;
}

}  // namespace ts::detail
