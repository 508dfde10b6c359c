// splitk_attention.cu — a PyTorch extension's Split-K attention forward, written the way the
// seed kernels are (a thread per query row; pass 1 stores each (query tile, kv tile)'s
// unnormalised state in partial_O / partial_max / partial_sum laid out [batch, head, kv_tile,
// query, dim]; pass 2 merges the kv tiles with online-softmax rescaling), with tilescope probes.
// tests: test_splitk_attention.py records it with tilescope.record and asserts it.
//
// The trace view comes from Python: tilescope.record(...).view is a CPU uint8 tensor holding a
// tilescope::TraceView's bytes; forward() copies it into the struct and passes it by value.
// Build with -DTILESCOPE_TRACE=1 (the probes compile to nothing otherwise) and, to plant the
// bug, -DFLASH_ATTENTION_PLANTED_BUG: the reduce weights each partial O by its sum again.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAException.h>

#include <cstring>

#include "splitk_attention_kernels.cuh"

namespace {

using namespace splitk_attention;

tilescope::TraceView view_of(const c10::optional<torch::Tensor>& bytes) {
  tilescope::TraceView view{};  // no buffer: tracing off
  if (bytes) {
    TORCH_CHECK(bytes->device().is_cpu() && bytes->scalar_type() == torch::kUInt8 &&
                    bytes->numel() == static_cast<int64_t>(sizeof(view)),
                "trace view: pass tilescope.record(...).view (", sizeof(view), " CPU bytes)");
    std::memcpy(&view, bytes->contiguous().data_ptr(), sizeof(view));
  }
  return view;
}

template <typename T>
void launch(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, torch::Tensor& o,
            torch::Tensor& lse, bool causal, const tilescope::TraceView& trace) {
  const int batch = q.size(0), heads = q.size(1), seq_q = q.size(2), head_dim = q.size(3);
  const int kv_heads = k.size(1), seq_kv = k.size(2);
  const int kv_tiles = (seq_kv + TILE_SIZE_N - 1) / TILE_SIZE_N;
  auto f32 = q.options().dtype(torch::kFloat32);
  auto partial_O = torch::empty({batch, heads, kv_tiles, seq_q, head_dim}, f32);
  auto partial_max = torch::empty({batch, heads, kv_tiles, seq_q}, f32);
  auto partial_sum = torch::empty({batch, heads, kv_tiles, seq_q}, f32);
  split_k_forward<T>(reinterpret_cast<const T*>(q.data_ptr()), reinterpret_cast<const T*>(k.data_ptr()),
                     reinterpret_cast<const T*>(v.data_ptr()), reinterpret_cast<T*>(o.data_ptr()),
                     lse.data_ptr<float>(), partial_O.data_ptr<float>(), partial_max.data_ptr<float>(),
                     partial_sum.data_ptr<float>(), batch, heads, kv_heads, seq_q, seq_kv, head_dim, causal, trace,
                     at::cuda::getCurrentCUDAStream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Q [batch, heads, seq_q, head_dim], K, V [batch, kv_heads, seq_kv, head_dim], contiguous CUDA
// tensors of one dtype. Returns (O like Q, LSE [batch, heads, seq_q] float32).
std::vector<torch::Tensor> forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, bool causal,
                                   c10::optional<torch::Tensor> trace_view) {
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda(), "Q, K, V must be CUDA tensors");
  TORCH_CHECK(q.dim() == 4 && k.sizes() == v.sizes() && q.size(3) <= MAX_HEAD_DIM, "shapes");
  TORCH_CHECK(q.size(1) % k.size(1) == 0, "heads must be a multiple of kv heads");
  const c10::cuda::CUDAGuard guard(q.device());
  q = q.contiguous(); k = k.contiguous(); v = v.contiguous();
  auto o = torch::empty_like(q);
  auto lse = torch::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(torch::kFloat32));
  const tilescope::TraceView trace = view_of(trace_view);
  switch (q.scalar_type()) {
    case torch::kFloat32: launch<float>(q, k, v, o, lse, causal, trace); break;
    case torch::kFloat16: launch<__half>(q, k, v, o, lse, causal, trace); break;
    case torch::kBFloat16: launch<__nv_bfloat16>(q, k, v, o, lse, causal, trace); break;
    default: TORCH_CHECK(false, "dtype must be float32, float16 or bfloat16");
  }
  return {o, lse};
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "Split-K attention forward (traced when given a tilescope view)",
        py::arg("q"), py::arg("k"), py::arg("v"), py::arg("causal") = false, py::arg("trace_view") = py::none());
}
