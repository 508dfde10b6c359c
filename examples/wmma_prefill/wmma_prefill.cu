// A FlashAttention-2-style prefill forward on tensor cores through nvcuda::wmma (wmma_prefill.h).
//
// Per block: 64 query rows of one (batch, head), 128 threads (4 warps). For each kv tile of 64 keys:
//   1. K and V tiles into shared memory (rows past seq_kv zero-filled);
//   2. S = Q K^T: warp w computes S's key columns 16w..16w+15 for all 64 rows (4 accumulator
//      fragments, head_dim / 16 mma steps each) and stores them to shared S (fp32);
//   3. online softmax, two threads per query row (32 columns each): the masked, scaled row max,
//      the new max, alpha = exp(m_old - m_new), P = exp(s - m_new) rounded to fp16 into shared P,
//      l = alpha l + sum P (P before rounding, as FlashAttention-2 sums it), O's row * alpha;
//   4. O += P V: warp w owns O's rows 16w..16w+15, loads them from shared O into accumulator
//      fragments, multiplies P's row strip by V and stores them back.
// The shared K, V, Q and P rows are padded by 8 halves (16 bytes) against bank conflicts; every
// wmma leading dimension is therefore kPaddedLd, not kHeadDim.
//
// Probes (TILESCOPE_TRACE=1): after every kv tile, the block's unnormalised state (m, l, O) of
// its query rows; after the last, the output it writes (normalised, LSE in the m channel).
#include "wmma_prefill.h"

#include <mma.h>

#include <cmath>

#include <tilescope/portable.h>
#include <tilescope/probe.h>

namespace wmma_prefill {
namespace {

using namespace nvcuda;

constexpr int kThreads = 128;
constexpr int kPaddedLd = kHeadDim + 8;  // halves per shared row of Q, K, V and P
constexpr int kSLd = kBlockKV;           // floats per shared row of S
constexpr int kOLd = kHeadDim;           // floats per shared row of O

// Shared memory, in bytes from the dynamic shared base (each part 32-byte aligned for wmma).
constexpr int kQBytes = kBlockQ * kPaddedLd * 2;
constexpr int kKBytes = kBlockKV * kPaddedLd * 2;
constexpr int kSBytes = kBlockQ * kSLd * 4;
constexpr int kPBytes = kBlockQ * kPaddedLd * 2;
constexpr int kOBytes = kBlockQ * kOLd * 4;
constexpr int kQOffset = 0;
constexpr int kKOffset = kQOffset + kQBytes;
constexpr int kVOffset = kKOffset + kKBytes;
constexpr int kSOffset = kVOffset + kKBytes;
constexpr int kPOffset = kSOffset + kSBytes;
constexpr int kOOffset = kPOffset + kPBytes;
constexpr int kMOffset = kOOffset + kOBytes;
constexpr int kLOffset = kMOffset + kBlockQ * 4;
constexpr int kLseOffset = kLOffset + kBlockQ * 4;
constexpr int kSharedBytes = kLseOffset + kBlockQ * 4;
static_assert(kSLd == kOLd, "the epilogue stages the normalised O in S's shared memory");

__global__ void __launch_bounds__(kThreads)
    wmma_prefill_kernel(const __half* __restrict__ q, const __half* __restrict__ k,
                        const __half* __restrict__ v, __half* __restrict__ o, float* __restrict__ lse,
                        int heads, int seq_q, int seq_kv, float scale, bool causal, int bug,
                        tilescope::TraceView trace) {
  TILESCOPE_DYNAMIC_SHARED(unsigned char, smem);
  __half* q_s = reinterpret_cast<__half*>(smem + kQOffset);
  __half* k_s = reinterpret_cast<__half*>(smem + kKOffset);
  __half* v_s = reinterpret_cast<__half*>(smem + kVOffset);
  float* s_s = reinterpret_cast<float*>(smem + kSOffset);
  __half* p_s = reinterpret_cast<__half*>(smem + kPOffset);
  float* o_s = reinterpret_cast<float*>(smem + kOOffset);
  float* m_s = reinterpret_cast<float*>(smem + kMOffset);
  float* l_s = reinterpret_cast<float*>(smem + kLOffset);
  float* lse_s = reinterpret_cast<float*>(smem + kLseOffset);

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int q_begin = blockIdx.x * kBlockQ;
  const int head = blockIdx.y;
  const int batch = blockIdx.z;
  const int rows = min(kBlockQ, seq_q - q_begin);
  const size_t pair = static_cast<size_t>(batch) * heads + head;
  const __half* q_pair = q + pair * seq_q * kHeadDim;
  const __half* k_pair = k + pair * seq_kv * kHeadDim;
  const __half* v_pair = v + pair * seq_kv * kHeadDim;
  const int causal_offset = seq_kv - seq_q;  // bottom-right: row i sees keys j <= i + offset

  for (int idx = tid; idx < kBlockQ * kHeadDim; idx += kThreads) {
    const int r = idx / kHeadDim, c = idx % kHeadDim;
    q_s[r * kPaddedLd + c] = r < rows ? q_pair[static_cast<size_t>(q_begin + r) * kHeadDim + c] : __float2half(0.f);
    o_s[r * kOLd + c] = 0.f;
  }
  if (tid < kBlockQ) {
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.f;
  }

  // The keys this block's last row sees end the loop.
  int kv_end = seq_kv;
  if (causal) kv_end = max(0, min(seq_kv, q_begin + rows + causal_offset));
  const int kv_tiles = (kv_end + kBlockKV - 1) / kBlockKV;

  // Softmax work: two threads per row, each 32 of the tile's 64 columns.
  const int row = tid / 2;
  const int col0 = (tid % 2) * (kBlockKV / 2);
  const int query = q_begin + row;
  __syncthreads();

  for (int tile = 0; tile < kv_tiles; ++tile) {
    const int kv_begin = tile * kBlockKV;
    for (int idx = tid; idx < kBlockKV * kHeadDim; idx += kThreads) {
      const int r = idx / kHeadDim, c = idx % kHeadDim;
      const bool in = kv_begin + r < seq_kv;
      const size_t at = static_cast<size_t>(kv_begin + r) * kHeadDim + c;
      k_s[r * kPaddedLd + c] = in ? k_pair[at] : __float2half(0.f);
      v_s[r * kPaddedLd + c] = in ? v_pair[at] : __float2half(0.f);
    }
    __syncthreads();

    // S = Q K^T, warp `warp`'s 16 key columns. K is [key][d] in shared memory: K^T as a col_major
    // matrix_b (element (d, key) at key * ld + d).
    for (int i = 0; i < kBlockQ / 16; ++i) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> s_frag;
      wmma::fill_fragment(s_frag, 0.f);
      for (int kk = 0; kk < kHeadDim / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> q_frag;
        wmma::load_matrix_sync(q_frag, q_s + i * 16 * kPaddedLd + kk * 16, kPaddedLd);
        const __half* k_tile = k_s + warp * 16 * kPaddedLd + kk * 16;
        if (bug == static_cast<int>(WmmaBug::k_row_major)) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> k_frag;
          wmma::load_matrix_sync(k_frag, k_tile, kPaddedLd);
          wmma::mma_sync(s_frag, q_frag, k_frag, s_frag);
        } else {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> k_frag;
          wmma::load_matrix_sync(k_frag, k_tile, kPaddedLd);
          wmma::mma_sync(s_frag, q_frag, k_frag, s_frag);
        }
      }
      wmma::store_matrix_sync(s_s + i * 16 * kSLd + warp * 16, s_frag, kSLd, wmma::mem_row_major);
    }
    if (bug != static_cast<int>(WmmaBug::no_score_barrier)) __syncthreads();

    // Online softmax of row `row`, columns col0..col0+31.
    float s[kBlockKV / 2];
    float tile_max = -INFINITY;
    const int key_limit = bug == static_cast<int>(WmmaBug::kv_tail_off_by_one) ? seq_kv + 1 : seq_kv;
    for (int c = 0; c < kBlockKV / 2; ++c) {
      const int key = kv_begin + col0 + c;
      const bool masked = key >= key_limit || (causal && key > query + causal_offset);
      s[c] = masked ? -INFINITY : s_s[row * kSLd + col0 + c] * scale;
      tile_max = fmaxf(tile_max, s[c]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_old = m_s[row];
    const float m_new = fmaxf(m_old, tile_max);
    const float m_ref = m_new == -INFINITY ? 0.f : m_new;  // a row with no key yet: exp(-inf) = 0
    const float alpha = __expf(m_old - m_ref);
    float tile_sum = 0.f;
    for (int c = 0; c < kBlockKV / 2; ++c) {
      const float p = __expf(s[c] - m_ref);
      p_s[row * kPaddedLd + col0 + c] = __float2half(p);
      tile_sum += p;
    }
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
    if (bug != static_cast<int>(WmmaBug::o_not_rescaled))
      for (int c = 0; c < kHeadDim / 2; ++c) o_s[row * kOLd + (tid % 2) * (kHeadDim / 2) + c] *= alpha;
    if (tid % 2 == 0) {
      m_s[row] = m_new;
      l_s[row] = alpha * l_s[row] + tile_sum;
    }
    __syncthreads();

    // O += P V, warp `warp`'s 16 rows. V is [key][d]: a row_major matrix_b.
    const int v_ld = bug == static_cast<int>(WmmaBug::v_unpadded_ldm) ? kHeadDim : kPaddedLd;
    for (int j = 0; j < kHeadDim / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> o_frag;
      float* o_tile = o_s + warp * 16 * kOLd + j * 16;
      wmma::load_matrix_sync(o_frag, o_tile, kOLd, wmma::mem_row_major);
      for (int kk = 0; kk < kBlockKV / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> p_frag;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> v_frag;
        wmma::load_matrix_sync(p_frag, p_s + warp * 16 * kPaddedLd + kk * 16, kPaddedLd);
        wmma::load_matrix_sync(v_frag, v_s + kk * 16 * v_ld + j * 16, v_ld);
        wmma::mma_sync(o_frag, p_frag, v_frag, o_frag);
      }
      wmma::store_matrix_sync(o_tile, o_frag, kOLd, wmma::mem_row_major);
    }
    __syncthreads();

    // [doc:probe-step]
    // tilescope: the block's running state over keys [0, end of this tile), unnormalised.
    if (tid == 0)
      tilescope::record(trace,
                        tilescope::state(kStageStep, batch, head, q_begin, rows)
                            .keys(0, min(kv_begin + kBlockKV, seq_kv)).step(tile),
                        m_s, l_s, o_s, kOLd);
    // [/doc]
  }

  // Epilogue: O / l to the output (0 for a row that saw no key), LSE = m + log l. The normalised
  // rows are staged in S's shared memory (free after the last softmax) for the final probe, so
  // that the last step's probe, still reading O, m and l, needs no barrier before this.
  const float l_row = l_s[row];
  const float inv_l = l_row > 0.f ? 1.f / l_row : 0.f;
  float* out_s = s_s;  // [kBlockQ][kOLd] (kSLd == kOLd)
  for (int c = 0; c < kHeadDim / 2; ++c) {
    const int col = (tid % 2) * (kHeadDim / 2) + c;
    const float out = o_s[row * kOLd + col] * inv_l;
    out_s[row * kOLd + col] = out;
    if (row < rows) o[(pair * seq_q + query) * kHeadDim + col] = __float2half(out);
  }
  if (tid % 2 == 0) {
    const float row_lse = l_row > 0.f ? m_s[row] + logf(l_row) : -INFINITY;
    lse_s[row] = row_lse;
    if (row < rows) lse[pair * seq_q + query] = row_lse;
  }
  __syncthreads();
  // tilescope: the output as written, O / l with the LSE in the m channel.
  if (tid == 0)
    tilescope::record(trace,
                      tilescope::state(kStageFinal, batch, head, q_begin, rows)
                          .keys(0, seq_kv).convention(tilescope::kNormalized),
                      lse_s, l_s, out_s, kOLd);
}

}  // namespace

cudaError_t wmma_prefill_forward(const __half* q, const __half* k, const __half* v, __half* o, float* lse,
                                 int batch, int heads, int seq_q, int seq_kv, float scale, bool causal,
                                 WmmaBug bug, const tilescope::TraceView& trace, cudaStream_t stream) {
  const cudaError_t set =
      cudaFuncSetAttribute(wmma_prefill_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes);
  if (set != cudaSuccess) return set;
  const dim3 grid((seq_q + kBlockQ - 1) / kBlockQ, heads, batch);
  TILESCOPE_LAUNCH(wmma_prefill_kernel, grid, kThreads, kSharedBytes, stream)(
      q, k, v, o, lse, heads, seq_q, seq_kv, scale, causal, static_cast<int>(bug), trace);
  return cudaGetLastError();
}

}  // namespace wmma_prefill
