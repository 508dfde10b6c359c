// flash_attention_science.cu — FlashAttention forward with Split-K, written the way the
// FlashMoE-Science team wrote theirs (a PyTorch extension's kernel file), with tilescope probes
// added. It is tilescope's example of debugging your own kernel (docs/your-own-kernel.md).
//
// Pass 1, flash_attention_forward_split_k_partial: each block computes attention for ONE
// (query tile, kv tile) pair, a thread per query row; it stores the tile's unnormalised state in
// the partial buffers, laid out [batch, head, kv_tile, query, dim]:
//   partial_max = max_j s_j,  partial_sum = sum_j exp(s_j - max),  partial_O = sum_j exp(s_j - max) v_j
// over the tile's keys j (s = scale * q . k, causal: keys after the query masked).
// Pass 2, flash_attention_forward_split_k_reduce: a thread per query row merges its kv tiles with
// online-softmax rescaling, then writes O = O / sum and the LSE.
//
// Probes (three lines each, marked "tilescope"): pass 1 records each row's partial state over its
// tile's keys; pass 2 records the merged state after each kv tile. The view comes in as the last
// kernel argument. Without -DTILESCOPE_TRACE=1 the probes compile to nothing.
//
// Planted bug: build with -DFLASH_ATTENTION_PLANTED_BUG to get the team's bug of Session N+7E
// back: the reduce weights each partial O by its local_sum again ("double-counting").
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include <tilescope/portable.h>
#include <tilescope/probe.h>

#include "flash_attention_science.h"

#define CUDA_CHECK(call)                                                                        \
  do {                                                                                          \
    const cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess)                                                                    \
      throw std::runtime_error(std::string(#call) + " failed: " + cudaGetErrorString(err_));    \
  } while (0)

namespace flashmoe {

constexpr int TILE_SIZE_M = 64;  // query rows per block: one thread each
constexpr int TILE_SIZE_N = 64;  // keys per kv tile
constexpr int MAX_HEAD_DIM = 128;

template <typename T>
__device__ __forceinline__ float to_float(T x);
template <>
__device__ __forceinline__ float to_float<half>(half x) { return __half2float(x); }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ half from_float<half>(float x) { return __float2half(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

// Pass 1: partial attention of one (query tile, kv tile) pair.
// Grid: (num_heads, batch, query_tiles * kv_tiles); block: TILE_SIZE_M threads.
template <typename T>
__global__ void flash_attention_forward_split_k_partial(
    const T* Q, const T* K, const T* V, float* partial_O, float* partial_max, float* partial_sum,
    const int batch_size, const int num_heads, const int seq_len, const int head_dim,
    const float softmax_scale, const bool causal, const int num_kv_tiles,
    const tilescope::TraceView trace) {
  const int head_idx = blockIdx.x;
  const int batch_idx = blockIdx.y;
  const int query_tile_idx = blockIdx.z / num_kv_tiles;
  const int kv_tile_idx = blockIdx.z % num_kv_tiles;
  const int query_idx = query_tile_idx * TILE_SIZE_M + threadIdx.x;

  __shared__ T K_smem[TILE_SIZE_N][MAX_HEAD_DIM];
  __shared__ T V_smem[TILE_SIZE_N][MAX_HEAD_DIM];

  const size_t head_offset = (static_cast<size_t>(batch_idx) * num_heads + head_idx) * seq_len * head_dim;
  const T* Q_base = Q + head_offset;
  const T* K_base = K + head_offset;
  const T* V_base = V + head_offset;
  const int kv_start = kv_tile_idx * TILE_SIZE_N;
  const int kv_end = min(kv_start + TILE_SIZE_N, seq_len);
  const int kv_len = kv_end - kv_start;

  // Step 1: load the K, V tile into shared memory (collaborative).
  for (int i = threadIdx.x; i < kv_len * head_dim; i += blockDim.x) {
    const int row = i / head_dim;
    const int d = i % head_dim;
    K_smem[row][d] = K_base[(kv_start + row) * head_dim + d];
    V_smem[row][d] = V_base[(kv_start + row) * head_dim + d];
  }
  __syncthreads();
  if (query_idx >= seq_len) return;

  // Step 2: this thread's query row.
  float q[MAX_HEAD_DIM];
  for (int d = 0; d < head_dim; ++d) q[d] = to_float(Q_base[query_idx * head_dim + d]);

  // Step 3: Q @ K^T for the tile, scaled and masked, and the tile's max.
  float scores[TILE_SIZE_N];
  float local_max = -INFINITY;
  for (int kv = 0; kv < kv_len; ++kv) {
    float score = 0.0f;
    for (int d = 0; d < head_dim; ++d) score += q[d] * to_float(K_smem[kv][d]);
    score *= softmax_scale;
    if (causal && kv_start + kv > query_idx) score = -INFINITY;
    scores[kv] = score;
    local_max = fmaxf(local_max, score);
  }

  // Step 4: exp, sum and P @ V. A tile this row cannot see (causal) keeps sum 0, O 0
  // (Session N+7F: without the guard, exp(-inf - -inf) is NaN).
  float local_sum = 0.0f;
  float acc_o[MAX_HEAD_DIM] = {0};
  if (local_max != -INFINITY) {
    for (int kv = 0; kv < kv_len; ++kv) {
      const float p = expf(scores[kv] - local_max);
      local_sum += p;
      for (int d = 0; d < head_dim; ++d) acc_o[d] += p * to_float(V_smem[kv][d]);
    }
  }

  // Step 5: store the partial results.
  const size_t partial_idx =
      ((static_cast<size_t>(batch_idx) * num_heads + head_idx) * num_kv_tiles + kv_tile_idx) * seq_len + query_idx;
  for (int d = 0; d < head_dim; ++d) partial_O[partial_idx * head_dim + d] = acc_o[d];
  partial_max[partial_idx] = local_max;
  partial_sum[partial_idx] = local_sum;

  // [doc:probe-partial]
  // tilescope: this row's state over the tile's keys, as stored in the partial buffers.
  tilescope::record(trace,
                    tilescope::state(kStagePartial, batch_idx, head_idx, query_idx, 1)
                        .keys(kv_start, kv_end).split(kv_tile_idx),
                    local_max, local_sum, acc_o);
  // [/doc]
}

// Pass 2: merge the kv tiles of each query row.
// Grid: (num_heads, batch, query_tiles); block: TILE_SIZE_M threads.
template <typename T>
__global__ void flash_attention_forward_split_k_reduce(
    const float* partial_O, const float* partial_max, const float* partial_sum, T* O, float* softmax_lse,
    const int batch_size, const int num_heads, const int seq_len, const int head_dim, const int num_kv_tiles,
    const tilescope::TraceView trace) {
  const int head_idx = blockIdx.x;
  const int batch_idx = blockIdx.y;
  const int query_idx = blockIdx.z * TILE_SIZE_M + threadIdx.x;
  if (query_idx >= seq_len) return;

  float global_max = -INFINITY;  // running max over the tiles merged so far
  float global_sum = 0.0f;
  float final_o[MAX_HEAD_DIM] = {0};
  for (int kv_tile = 0; kv_tile < num_kv_tiles; ++kv_tile) {
    const size_t partial_idx =
        ((static_cast<size_t>(batch_idx) * num_heads + head_idx) * num_kv_tiles + kv_tile) * seq_len + query_idx;
    const float local_max = partial_max[partial_idx];
    const float local_sum = partial_sum[partial_idx];
    const float* partial_O_base = partial_O + partial_idx * head_dim;
    if (local_max != -INFINITY) {  // a tile the row cannot see adds nothing
      const float new_max = fmaxf(global_max, local_max);
      const float rescale = expf(global_max - new_max);
      const float reweight = expf(local_max - new_max);
#if defined(FLASH_ATTENTION_PLANTED_BUG)
      const float weight = local_sum * reweight;  // partial_O already holds sum(exp(s - max) v)
#else
      const float weight = reweight;
#endif
      for (int d = 0; d < head_dim; ++d) final_o[d] = final_o[d] * rescale + weight * partial_O_base[d];
      global_sum = global_sum * rescale + local_sum * reweight;
      global_max = new_max;
    }
    // [doc:probe-reduce]
    // tilescope: the row's state merged over kv tiles 0..kv_tile.
    tilescope::record(trace,
                      tilescope::state(kStageReduce, batch_idx, head_idx, query_idx, 1)
                          .keys(0, min((kv_tile + 1) * TILE_SIZE_N, seq_len)).split(kv_tile).step(kv_tile),
                      global_max, global_sum, final_o);
    // [/doc]
  }

  const size_t row = (static_cast<size_t>(batch_idx) * num_heads + head_idx) * seq_len + query_idx;
  for (int d = 0; d < head_dim; ++d)
    O[row * head_dim + d] = from_float<T>(global_sum > 0.0f ? final_o[d] / global_sum : 0.0f);
  softmax_lse[row] = global_sum > 0.0f ? global_max + logf(global_sum) : -INFINITY;
}

size_t split_k_partial_rows(const int batch_size, const int num_heads, const int seq_len) {
  const int num_kv_tiles = (seq_len + TILE_SIZE_N - 1) / TILE_SIZE_N;
  return static_cast<size_t>(batch_size) * num_heads * num_kv_tiles * seq_len;
}

template <typename T>
void flash_attention_split_k_passes(const T* Q, const T* K, const T* V, T* O, float* softmax_lse,
                                    float* partial_O, float* partial_max, float* partial_sum,
                                    const int batch_size, const int num_heads, const int seq_len,
                                    const int head_dim, const float softmax_scale, const bool causal,
                                    const tilescope::TraceView trace, cudaStream_t stream) {
  if (head_dim < 1 || head_dim > MAX_HEAD_DIM)
    throw std::invalid_argument("head_dim must be in [1, " + std::to_string(MAX_HEAD_DIM) + "]");
  const int num_query_tiles = (seq_len + TILE_SIZE_M - 1) / TILE_SIZE_M;
  const int num_kv_tiles = (seq_len + TILE_SIZE_N - 1) / TILE_SIZE_N;
  const dim3 block(TILE_SIZE_M);

  // Pass 1: a block per (query tile, kv tile).
  const dim3 grid_partial(num_heads, batch_size, num_query_tiles * num_kv_tiles);
  // [doc:launch]
  TILESCOPE_LAUNCH(flash_attention_forward_split_k_partial<T>, grid_partial, block, 0, stream)(
      Q, K, V, partial_O, partial_max, partial_sum, batch_size, num_heads, seq_len, head_dim, softmax_scale,
      causal, num_kv_tiles, trace);
  CUDA_CHECK(cudaGetLastError());
  // [/doc]

  // Pass 2: a block per query tile.
  const dim3 grid_reduce(num_heads, batch_size, num_query_tiles);
  TILESCOPE_LAUNCH(flash_attention_forward_split_k_reduce<T>, grid_reduce, block, 0, stream)(
      partial_O, partial_max, partial_sum, O, softmax_lse, batch_size, num_heads, seq_len, head_dim,
      num_kv_tiles, trace);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void flash_attention_forward_split_k(const T* Q, const T* K, const T* V, T* O, float* softmax_lse,
                                     const int batch_size, const int num_heads, const int seq_len,
                                     const int head_dim, const float softmax_scale, const bool causal,
                                     const tilescope::TraceView trace, cudaStream_t stream) {
  // 1. Partial buffers: [batch, head, kv_tile, query] rows of head_dim floats.
  const size_t partial_rows = split_k_partial_rows(batch_size, num_heads, seq_len);
  float* partial_O = nullptr;
  float* partial_max = nullptr;
  float* partial_sum = nullptr;
  CUDA_CHECK(cudaMalloc(&partial_O, partial_rows * head_dim * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&partial_max, partial_rows * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&partial_sum, partial_rows * sizeof(float)));

  // 2. The two passes.
  flash_attention_split_k_passes(Q, K, V, O, softmax_lse, partial_O, partial_max, partial_sum, batch_size,
                                 num_heads, seq_len, head_dim, softmax_scale, causal, trace, stream);

  // 3. Free the partials once the passes are done.
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaFree(partial_O));
  CUDA_CHECK(cudaFree(partial_max));
  CUDA_CHECK(cudaFree(partial_sum));
}

// Explicit instantiations (Session N+7B: without them the extension failed to load with an
// undefined symbol).
template void flash_attention_forward_split_k<half>(const half*, const half*, const half*, half*, float*, int,
                                                    int, int, int, float, bool, tilescope::TraceView,
                                                    cudaStream_t);
template void flash_attention_forward_split_k<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                             const __nv_bfloat16*, __nv_bfloat16*, float*, int,
                                                             int, int, int, float, bool, tilescope::TraceView,
                                                             cudaStream_t);
template void flash_attention_split_k_passes<half>(const half*, const half*, const half*, half*, float*, float*,
                                                   float*, float*, int, int, int, int, float, bool,
                                                   tilescope::TraceView, cudaStream_t);
template void flash_attention_split_k_passes<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                            const __nv_bfloat16*, __nv_bfloat16*, float*, float*,
                                                            float*, float*, int, int, int, int, float, bool,
                                                            tilescope::TraceView, cudaStream_t);

}  // namespace flashmoe
