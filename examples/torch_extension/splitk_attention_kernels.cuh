// splitk_attention_kernels.cuh — the kernels of splitk_attention.cu (see there), apart from the
// PyTorch binding so that nvcc can compile them alone.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>

#include <tilescope/portable.h>  // TILESCOPE_LAUNCH: <<<>>> under nvcc, the CPU path's launch elsewhere
#include <tilescope/probe.h>

namespace splitk_attention {

constexpr int TILE_SIZE_M = 64;   // query rows per block: one thread each
constexpr int TILE_SIZE_N = 32;   // keys per kv tile (float K and V tiles: 2 x 16 KiB of shared memory)
constexpr int MAX_HEAD_DIM = 128;
constexpr int kStagePartial = 0;  // the stage table tilescope.record is given, in this order
constexpr int kStageReduce = 1;
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

// Pass 1. Grid: (heads, batch, query_tiles * kv_tiles); block: TILE_SIZE_M threads.
template <typename T>
__global__ void split_k_partial(const T* Q, const T* K, const T* V, float* partial_O, float* partial_max,
                                float* partial_sum, int num_heads, int num_kv_heads, int seq_q, int seq_kv,
                                int head_dim, float softmax_scale, bool causal, int num_kv_tiles,
                                const tilescope::TraceView trace) {
  const int head_idx = blockIdx.x, batch_idx = blockIdx.y;
  const int kv_head_idx = head_idx / (num_heads / num_kv_heads);  // GQA
  const int query_tile_idx = blockIdx.z / num_kv_tiles, kv_tile_idx = blockIdx.z % num_kv_tiles;
  const int query_idx = query_tile_idx * TILE_SIZE_M + threadIdx.x;
  __shared__ float K_smem[TILE_SIZE_N][MAX_HEAD_DIM];
  __shared__ float V_smem[TILE_SIZE_N][MAX_HEAD_DIM];
  const T* Q_base = Q + (static_cast<size_t>(batch_idx) * num_heads + head_idx) * seq_q * head_dim;
  const size_t kv_offset = (static_cast<size_t>(batch_idx) * num_kv_heads + kv_head_idx) * seq_kv * head_dim;
  const int kv_start = kv_tile_idx * TILE_SIZE_N, kv_end = min(kv_start + TILE_SIZE_N, seq_kv);
  const int kv_len = kv_end - kv_start;
  for (int i = threadIdx.x; i < kv_len * head_dim; i += blockDim.x) {
    K_smem[i / head_dim][i % head_dim] = to_float(K[kv_offset + static_cast<size_t>(kv_start) * head_dim + i]);
    V_smem[i / head_dim][i % head_dim] = to_float(V[kv_offset + static_cast<size_t>(kv_start) * head_dim + i]);
  }
  __syncthreads();
  if (query_idx >= seq_q) return;
  const int diagonal = query_idx + (seq_kv - seq_q);  // causal, aligned bottom-right
  float q[MAX_HEAD_DIM];
  for (int d = 0; d < head_dim; ++d) q[d] = to_float(Q_base[query_idx * head_dim + d]);
  float scores[TILE_SIZE_N];
  float local_max = -INFINITY;
  for (int kv = 0; kv < kv_len; ++kv) {
    float score = 0.0f;
    for (int d = 0; d < head_dim; ++d) score += q[d] * K_smem[kv][d];
    score *= softmax_scale;
    if (causal && kv_start + kv > diagonal) score = -INFINITY;
    scores[kv] = score;
    local_max = fmaxf(local_max, score);
  }
  float local_sum = 0.0f;
  float acc_o[MAX_HEAD_DIM] = {0};
  if (local_max != -INFINITY) {
    for (int kv = 0; kv < kv_len; ++kv) {
      const float p = expf(scores[kv] - local_max);
      local_sum += p;
      for (int d = 0; d < head_dim; ++d) acc_o[d] += p * V_smem[kv][d];
    }
  }
  const size_t partial_idx =
      ((static_cast<size_t>(batch_idx) * num_heads + head_idx) * num_kv_tiles + kv_tile_idx) * seq_q + query_idx;
  for (int d = 0; d < head_dim; ++d) partial_O[partial_idx * head_dim + d] = acc_o[d];
  partial_max[partial_idx] = local_max;
  partial_sum[partial_idx] = local_sum;
  // tilescope: this row's state over the tile's keys, as stored in the partial buffers.
  tilescope::record(trace,
                    tilescope::state(kStagePartial, batch_idx, head_idx, query_idx, 1)
                        .keys(kv_start, kv_end).split(kv_tile_idx).kv_head(kv_head_idx),
                    local_max, local_sum, acc_o);
}

// Pass 2. Grid: (heads, batch, query_tiles); block: TILE_SIZE_M threads.
template <typename T>
__global__ void split_k_reduce(const float* partial_O, const float* partial_max, const float* partial_sum, T* O,
                               float* softmax_lse, int num_heads, int seq_q, int seq_kv, int head_dim,
                               int num_kv_tiles, const tilescope::TraceView trace) {
  const int head_idx = blockIdx.x, batch_idx = blockIdx.y;
  const int query_idx = blockIdx.z * TILE_SIZE_M + threadIdx.x;
  if (query_idx >= seq_q) return;
  float global_max = -INFINITY, global_sum = 0.0f;
  float final_o[MAX_HEAD_DIM] = {0};
  for (int kv_tile = 0; kv_tile < num_kv_tiles; ++kv_tile) {
    const size_t partial_idx =
        ((static_cast<size_t>(batch_idx) * num_heads + head_idx) * num_kv_tiles + kv_tile) * seq_q + query_idx;
    const float local_max = partial_max[partial_idx], local_sum = partial_sum[partial_idx];
    if (local_max != -INFINITY) {
      const float new_max = fmaxf(global_max, local_max);
      const float rescale = expf(global_max - new_max), reweight = expf(local_max - new_max);
#if defined(FLASH_ATTENTION_PLANTED_BUG)
      const float weight = local_sum * reweight;  // partial_O already holds sum(exp(s - max) v)
#else
      const float weight = reweight;
#endif
      for (int d = 0; d < head_dim; ++d)
        final_o[d] = final_o[d] * rescale + weight * partial_O[partial_idx * head_dim + d];
      global_sum = global_sum * rescale + local_sum * reweight;
      global_max = new_max;
    }
    // tilescope: the row's state merged over kv tiles 0..kv_tile.
    tilescope::record(trace,
                      tilescope::state(kStageReduce, batch_idx, head_idx, query_idx, 1)
                          .keys(0, min((kv_tile + 1) * TILE_SIZE_N, seq_kv)).split(kv_tile).step(kv_tile),
                      global_max, global_sum, final_o);
  }
  const size_t row = (static_cast<size_t>(batch_idx) * num_heads + head_idx) * seq_q + query_idx;
  for (int d = 0; d < head_dim; ++d)
    O[row * head_dim + d] = from_float<T>(global_sum > 0.0f ? final_o[d] / global_sum : 0.0f);
  softmax_lse[row] = global_sum > 0.0f ? global_max + logf(global_sum) : -INFINITY;
}

// Both passes on `stream`. Q [batch, heads, seq_q, head_dim], K, V [batch, kv_heads, seq_kv,
// head_dim], O like Q, LSE [batch, heads, seq_q]; partial buffers of batch x heads x kv_tiles x
// seq_q rows (x head_dim for partial_O), kv_tiles = ceil(seq_kv / TILE_SIZE_N).
template <typename T>
void split_k_forward(const T* Q, const T* K, const T* V, T* O, float* lse, float* partial_O, float* partial_max,
                     float* partial_sum, int batch, int heads, int kv_heads, int seq_q, int seq_kv, int head_dim,
                     bool causal, const tilescope::TraceView& trace, cudaStream_t stream) {
  const int kv_tiles = (seq_kv + TILE_SIZE_N - 1) / TILE_SIZE_N, q_tiles = (seq_q + TILE_SIZE_M - 1) / TILE_SIZE_M;
  const float scale = 1.0f / sqrtf(static_cast<float>(head_dim));
  TILESCOPE_LAUNCH(split_k_partial<T>, dim3(heads, batch, q_tiles * kv_tiles), dim3(TILE_SIZE_M), 0, stream)(
      Q, K, V, partial_O, partial_max, partial_sum, heads, kv_heads, seq_q, seq_kv, head_dim, scale, causal,
      kv_tiles, trace);
  TILESCOPE_LAUNCH(split_k_reduce<T>, dim3(heads, batch, q_tiles), dim3(TILE_SIZE_M), 0, stream)(
      partial_O, partial_max, partial_sum, O, lse, heads, seq_q, seq_kv, head_dim, kv_tiles, trace);
}

}  // namespace splitk_attention
