// tilescope's recorder: the host code that traces a user's own attention kernel. It creates the
// trace buffer in device memory, hands the kernel its view (a kernel argument, or a `__device__`
// symbol set here), collects the events after the launches, and writes a trace file with what
// the float64 reference needs: Q, K, V in the kernel's own layout, the attention description,
// the kernel's output and LSE, the stage table and names.
//
//   tilescope::Recorder rec(attention, {{"partial", tilescope::StageKind::state},
//                                       {"reduce", tilescope::StageKind::merge}});
//   tilescope::TraceView view = rec.start({.capacity = 1 << 16, .max_rows = 1}, stream);
//   my_partial<<<grid, block, 0, stream>>>(..., view);       // or rec.bind_symbol(my_trace)
//   my_reduce<<<grid2, block2, 0, stream>>>(..., view);
//   rec.set_inputs(tilescope::bhsd(q, B, H, S, D), tilescope::bhsd(k, ...), ..., stream);
//   rec.set_output(tilescope::bhsd(o, ...), tilescope::lse_bhs(lse, B, H, S), stream);
//   rec.write("my_kernel.trace.safetensors");                // collects first (waits for it)
//
// The device-memory parts below are inline: they call the CUDA runtime API of the translation
// unit that includes this header (real CUDA under nvcc or with the CUDA toolkit; tilescope's
// CPU subset on the CPU path), so the library itself (tilescope/trace_writer.h: conversion and
// writing) has no CUDA dependency, and cudaMemcpyToSymbol runs where the symbol is defined.
// Tensors may live in device or host memory (copies use cudaMemcpyDefault). Every copy is on
// the caller's stream, then waited for; the recorder never synchronises the whole device.
// Errors are RecorderError exceptions naming the problem and what to do.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tilescope/event.h"
#include "tilescope/trace_view.h"
#include "tilescope/trace_writer.h"

namespace tilescope {

// The DType of an element type the recorder knows (float, __half, __nv_bfloat16). Others
// (at::Half, c10::BFloat16...) have the same bits: pass the pointer with an explicit DType.
template <typename T>
struct ElementDType {
  static_assert(sizeof(T) == 0,
                "tilescope: the recorder knows float, __half and __nv_bfloat16; for another "
                "element type with the same bits, pass the pointer and a tilescope::DType");
};
template <>
struct ElementDType<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct ElementDType<__half> {
  static constexpr DType value = DType::f16;
};
template <>
struct ElementDType<__nv_bfloat16> {
  static constexpr DType value = DType::bf16;
};

template <typename T>
TensorRef bhsd(const T* data, int64_t batch, int64_t heads, int64_t seq, int64_t head_dim) {
  return bhsd(data, ElementDType<std::remove_cv_t<T>>::value, batch, heads, seq, head_dim);
}
template <typename T>
TensorRef bshd(const T* data, int64_t batch, int64_t seq, int64_t heads, int64_t head_dim) {
  return bshd(data, ElementDType<std::remove_cv_t<T>>::value, batch, seq, heads, head_dim);
}
template <typename T>
TensorRef strided(const T* data, std::array<int64_t, 4> sizes, std::array<int64_t, 4> strides) {
  return strided(data, ElementDType<std::remove_cv_t<T>>::value, sizes, strides);
}

// The trace buffer's shape and what it keeps.
struct BufferOptions {
  // Events the buffer holds; further events are counted as dropped (the trace says how many).
  int64_t capacity = int64_t{1} << 16;
  // Payload rows of an event: the most query rows one event describes (1 for a thread per row).
  int32_t max_rows = 1;
  // 0: slots come from a counter (record, open_warp). > 0: the kernel's blocks each record
  // this many events at planned slots (open_planned), in the kernel's own order.
  int32_t events_per_block = 0;
  // Applied where events are made (tilescope/probe.h); the trace stores the inputs of the
  // (batch, head) pairs it keeps.
  TraceFilter filter{};
};

class Recorder {
 public:
  Recorder(Attention attention, std::vector<Stage> stages)
      : writer_(std::move(attention), std::move(stages)) {}
  ~Recorder() { release(); }
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Allocates the trace buffer and clears it on `stream` (a new recording: earlier events are
  // discarded). The view is what the kernels take; it stays valid until the next start or the
  // recorder's end.
  TraceView start(const BufferOptions& options = {}, cudaStream_t stream = nullptr) {
    check_options(options);
    release();
    options_ = options;
    const int64_t rows = options.capacity * options.max_rows;
    const size_t header_bytes = aligned(static_cast<size_t>(options.capacity) * sizeof(EventHeader));
    const size_t ml_bytes = aligned(static_cast<size_t>(rows) * sizeof(float));
    const size_t o_bytes =
        aligned(static_cast<size_t>(rows) * static_cast<size_t>(writer_.attention().head_dim) * sizeof(float));
    const size_t total = header_bytes + 2 * ml_bytes + o_bytes + 2 * sizeof(unsigned long long);
    void* device = nullptr;
    check(cudaMalloc(&device, total),
          "cudaMalloc of the trace buffer (" + std::to_string(total >> 20) +
              " MiB); lower BufferOptions::capacity or max_rows, or narrow its filter");
    device_ = device;
    char* base = static_cast<char*>(device);
    view_ = TraceView{};
    view_.headers = reinterpret_cast<EventHeader*>(base);
    view_.m = reinterpret_cast<float*>(base + header_bytes);
    view_.l = reinterpret_cast<float*>(base + header_bytes + ml_bytes);
    view_.o = reinterpret_cast<float*>(base + header_bytes + 2 * ml_bytes);
    auto* counters = reinterpret_cast<unsigned long long*>(base + header_bytes + 2 * ml_bytes + o_bytes);
    view_.next_slot = counters;
    view_.dropped = counters + 1;
    view_.capacity = options.capacity;
    view_.num_stages = static_cast<int32_t>(writer_.stages().size());
    view_.events_per_block = options.events_per_block;
    view_.max_rows = options.max_rows;
    view_.head_dim = static_cast<int32_t>(writer_.attention().head_dim);
    view_.filter = options.filter;
    // 0xFF: stage -1 marks a slot never written; NaN payloads show rows an event left unwritten.
    check(cudaMemsetAsync(base, 0xFF, header_bytes + 2 * ml_bytes + o_bytes, stream),
          "cudaMemsetAsync (clearing the trace buffer)");
    check(cudaMemsetAsync(counters, 0, 2 * sizeof(unsigned long long), stream),
          "cudaMemsetAsync (clearing the trace counters)");
    collected_ = false;
    describe_device();
    writer_.set_buffer(options.filter, options.capacity);
    return view_;
  }

  // The view of the current recording (empty before start: tracing off).
  const TraceView& view() const { return view_; }

  // Sets a TILESCOPE_TRACE_SYMBOL(name) variable to this recording's view, for kernels that keep
  // their signature. Call it after start(), from code that sees the symbol (this template runs
  // cudaMemcpyToSymbol in that translation unit). The recorder sets it back to an empty view
  // (tracing off) when it ends, so that no kernel writes into a freed buffer.
  template <typename Symbol>
  void bind_symbol(const Symbol& symbol, cudaStream_t stream = nullptr) {
    static_assert(std::is_same_v<std::remove_cv_t<Symbol>, TraceView>,
                  "bind_symbol takes a variable declared with TILESCOPE_TRACE_SYMBOL(name)");
    if (device_ == nullptr)
      throw RecorderError("tilescope recorder: bind_symbol before start(): start the recording first, then bind");
    check(cudaMemcpyToSymbolAsync(symbol, &view_, sizeof(TraceView), 0, cudaMemcpyHostToDevice, stream),
          "cudaMemcpyToSymbolAsync (setting the trace symbol)");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (after setting the trace symbol)");
    unbind_ = [&symbol] {
      const TraceView off{};
      cudaMemcpyToSymbol(symbol, &off, sizeof(TraceView));  // at the end: errors ignored
    };
  }

  void set_names(std::string kernel, std::string run) { writer_.set_names(std::move(kernel), std::move(run)); }
  void set_metadata(std::string key, std::string value) {
    writer_.set_metadata(std::move(key), std::move(value));
  }

  // Q [batch, heads_q, seq_q, head_dim], K and V [batch, heads_kv, seq_kv, head_dim] (dims in
  // that order, any strides: bhsd, bshd, strided), in device or host memory, one dtype.
  void set_inputs(const TensorRef& q, const TensorRef& k, const TensorRef& v, cudaStream_t stream = nullptr) {
    writer_.check_inputs(q, k, v);  // before anything is read
    std::vector<std::byte> hq, hk, hv;
    writer_.set_inputs(to_host(q, hq, stream, "Q"), to_host(k, hk, stream, "K"), to_host(v, hv, stream, "V"),
                       options_.filter);
  }
  // The kernel's output [batch, heads_q, seq_q, head_dim], and its LSE when it has one.
  void set_output(const TensorRef& o, cudaStream_t stream = nullptr) {
    writer_.check_output(o);
    std::vector<std::byte> ho;
    writer_.set_output(to_host(o, ho, stream, "the output"));
  }
  void set_output(const TensorRef& o, const LseRef& lse, cudaStream_t stream = nullptr) {
    writer_.check_output_lse(lse);
    set_output(o, stream);
    std::vector<std::byte> bytes;
    LseRef host = lse;
    host.data = static_cast<const float*>(copy_to_host(lse.data, span_bytes(lse, "the output's LSE"), bytes,
                                                       stream, "the output's LSE"));
    writer_.set_output_lse(host);
  }

  // Waits for `stream` (the kernels' stream) and copies the recorded events back.
  void collect(cudaStream_t stream = nullptr) {
    if (device_ == nullptr) throw RecorderError("tilescope recorder: collect() before start(): nothing was recorded");
    check(cudaStreamSynchronize(stream),
          "the traced kernels (cudaStreamSynchronize before collecting the trace); run them under "
          "compute-sanitizer, or on tilescope's CPU path, to see where they fail");
    unsigned long long counters[2] = {0, 0};
    check(cudaMemcpyAsync(counters, view_.next_slot, sizeof(counters), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync (trace counters)");
    std::vector<EventHeader> headers(static_cast<size_t>(options_.capacity));
    check(cudaMemcpyAsync(headers.data(), view_.headers, headers.size() * sizeof(EventHeader),
                          cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync (trace headers)");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (trace headers)");
    // Payloads up to the last written slot only.
    size_t used = headers.size();
    while (used > 0 && headers[used - 1].stage == -1) --used;
    const size_t rows = used * static_cast<size_t>(options_.max_rows);
    const size_t head_dim = static_cast<size_t>(writer_.attention().head_dim);
    std::vector<float> m(rows), l(rows), o(rows * head_dim);
    if (used > 0) {
      check(cudaMemcpyAsync(m.data(), view_.m, rows * sizeof(float), cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync (trace m)");
      check(cudaMemcpyAsync(l.data(), view_.l, rows * sizeof(float), cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync (trace l)");
      check(cudaMemcpyAsync(o.data(), view_.o, o.size() * sizeof(float), cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync (trace O)");
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (trace payloads)");
    }
    writer_.set_events(headers.data(), m.data(), l.data(), o.data(), static_cast<int64_t>(used),
                       options_.max_rows, counters[1]);
    collected_ = true;
  }

  // Writes the trace (collecting on the default stream first if collect() was not called since
  // start()).
  void write(const std::string& path) {
    if (device_ != nullptr && !collected_) collect();
    writer_.write(path);
  }

  int64_t num_events() const { return writer_.num_events(); }
  uint64_t dropped_events() const { return writer_.dropped_events(); }
  TraceWriter& writer() { return writer_; }

 private:
  static size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

  static void check(cudaError_t e, const std::string& what) {
    if (e == cudaSuccess) return;
    const char* text = cudaGetErrorString(e);
    cudaGetLastError();  // reported here; do not leave it for the program's next check
    throw RecorderError("tilescope recorder: " + what + " failed: " + text);
  }

  void check_options(const BufferOptions& o) const {
    if (o.capacity < 1)
      throw RecorderError("tilescope recorder: BufferOptions::capacity = " + std::to_string(o.capacity) +
                          "; the buffer must hold at least one event");
    if (o.max_rows < 1 || o.max_rows > 65536)
      throw RecorderError("tilescope recorder: BufferOptions::max_rows = " + std::to_string(o.max_rows) +
                          "; give the most query rows one event holds, 1 to 65536");
    if (o.events_per_block < 0)
      throw RecorderError("tilescope recorder: BufferOptions::events_per_block = " +
                          std::to_string(o.events_per_block) + "; 0 for counted slots, or the events each block records");
    const double bytes = static_cast<double>(o.capacity) *
                         (sizeof(EventHeader) + 4.0 * o.max_rows * (2.0 + static_cast<double>(writer_.attention().head_dim)));
    if (bytes > 64.0 * (int64_t{1} << 30))
      throw RecorderError("tilescope recorder: a trace buffer of " + std::to_string(o.capacity) + " events of " +
                          std::to_string(o.max_rows) + " rows would take " +
                          std::to_string(static_cast<int64_t>(bytes / (1 << 30))) +
                          " GiB; lower capacity or max_rows, or narrow the filter");
  }

  void describe_device() {
#if defined(TILESCOPE_SIMT_CPU)
    writer_.set_metadata("backend", "cpu");
    writer_.set_metadata("device", "tilescope CPU SIMT runtime");
#else
    writer_.set_metadata("backend", "gpu");
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) == cudaSuccess && cudaGetDeviceProperties(&prop, device) == cudaSuccess)
      writer_.set_metadata("device", std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                                         std::to_string(prop.minor) + ")");
    else
      cudaGetLastError();  // no name then; not worth failing the recording for
#endif
  }

  // A copy of `bytes` bytes at `data` (device or host memory) in `storage`.
  static const void* copy_to_host(const void* data, size_t bytes, std::vector<std::byte>& storage,
                                  cudaStream_t stream, const char* what) {
    if (data == nullptr) throw RecorderError(std::string("tilescope recorder: ") + what + " is a null pointer");
    storage.resize(bytes);
    check(cudaMemcpyAsync(storage.data(), data, bytes, cudaMemcpyDefault, stream),
          std::string("cudaMemcpyAsync (copying ") + what + " to the host)");
    check(cudaStreamSynchronize(stream), std::string("cudaStreamSynchronize (copying ") + what + ")");
    return storage.data();
  }
  static TensorRef to_host(const TensorRef& t, std::vector<std::byte>& storage, cudaStream_t stream,
                           const char* what) {
    TensorRef host = t;
    host.data = copy_to_host(t.data, span_bytes(t, what), storage, stream, what);
    return host;
  }

  void release() noexcept {
    if (unbind_) {
      unbind_();
      unbind_ = nullptr;
    }
    if (device_ != nullptr) {
      cudaFree(device_);  // errors ignored: nothing to do about them here
      device_ = nullptr;
    }
    view_ = TraceView{};
  }

  TraceWriter writer_;
  BufferOptions options_{};
  void* device_ = nullptr;
  TraceView view_{};
  bool collected_ = false;
  std::function<void()> unbind_;
};

}  // namespace tilescope
