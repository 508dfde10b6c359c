// One launcher per test kernel (tests/simt/kernels/*.cuh), declared for the host-compiled test
// bodies. kernel_launchers.inc defines them once; backend_cpu.cpp compiles that with the host
// compiler (kernels run by the SIMT runtime), backend_gpu.cu with nvcc (kernels run natively).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "tests/simt/kernels/test_types.h"
#include "tests/simt/test_backend.h"

namespace ts::test {

// block_reduce.cuh
RunStatus run_block_sum(const Launch& launch, const float* in, float* out, int n);
RunStatus run_block_vote(const Launch& launch, const int* pred, int* votes);
// warp_shuffle.cuh (T: float, int, double, long long, __half, __nv_bfloat16)
template <typename T>
RunStatus run_shuffle_flavours(const Launch& launch, const T* in, T* out, unsigned mask,
                               int lane_arg, int width);
RunStatus run_warp_reduce(const Launch& launch, const int* in, int* out, int width);
// warp_vote.cuh
RunStatus run_warp_vote(const Launch& launch, const int* pred, const unsigned* key, unsigned* out,
                        unsigned mask);
// atomics.cuh
RunStatus run_atomics(const Launch& launch, const int* ints, const float* floats, int n,
                      AtomicTotals* totals);
RunStatus run_histogram(const Launch& launch, const unsigned* values, int n, unsigned* bins,
                        unsigned bin_count);
RunStatus run_contended_counters(const Launch& launch, unsigned* counters, int iterations);
// dynamic_shared.cuh
RunStatus run_reverse_in_shared(const Launch& launch, const float* in, float* out_reversed,
                                double* out_doubled, int* misaligned);
RunStatus run_read_unwritten_shared(const Launch& launch, float* out);
// grid_3d.cuh
RunStatus run_coordinates(const Launch& launch, ThreadRecord* out);
// missing_barrier.cuh
RunStatus run_shifted_tile_sum(const Launch& launch, bool with_barrier, const float* in, float* out,
                               int tiles);
RunStatus run_warp_synced_tile_sum(const Launch& launch, bool with_barrier, const float* in, float* out,
                                   int tiles);
// schedule_order.cuh (CPU only)
RunStatus run_tickets(const Launch& launch, unsigned* counters, unsigned* first, unsigned* second);
// faulty_sync.cuh (CPU only: they hang or misbehave on a GPU)
RunStatus run_deadlock(const Launch& launch, int* out);
RunStatus run_divergent_barrier(const Launch& launch, int* out);
RunStatus run_exit_before_barrier(const Launch& launch, int* out, unsigned exiting);
RunStatus run_warp_mask_disagreement(const Launch& launch, int* out);
RunStatus run_warp_op_disagreement(const Launch& launch, int* out);
RunStatus run_mask_omits_lane(const Launch& launch, int* out);
RunStatus run_bad_width(const Launch& launch, int* out);
RunStatus run_trap(const Launch& launch, int* out, unsigned trapping);
// exited_lanes.cuh (CPU only: reads values CUDA leaves undefined)
RunStatus run_exited_lane_shuffle(const Launch& launch, int* out, unsigned exiting);
// intrinsics.cuh
RunStatus run_float_intrinsics(const Launch& launch, const float* x, const float* y, float* out,
                               int n);
RunStatus run_float_to_int(const Launch& launch, const float* x, int* out, int n);
RunStatus run_bit_intrinsics(const Launch& launch, const unsigned* a, const unsigned* b,
                             unsigned* out, int n);
RunStatus run_half_intrinsics(const Launch& launch, const float* x, const float* y, float* out,
                              int n);
// tensor_core.cuh (Element, Input: __half, __nv_bfloat16; Accumulator: float, or __half with
// __half inputs; kMatrices: 1, 2, 4)
template <typename Element>
RunStatus run_mma_registers(const Launch& launch, const uint32_t* a, const uint32_t* b,
                            const float* c, float* d, bool in_place);
template <int kMatrices, bool kTransposed>
RunStatus run_ldmatrix(const Launch& launch, const uint16_t* tile, unsigned tile_elements,
                       const unsigned* row_offsets, uint32_t* out);
template <typename Element>
RunStatus run_attention_tile(const Launch& launch, const uint16_t* tiles, const float* c_s,
                             const float* c_o, float* s, float* o);
RunStatus run_async_copy(const Launch& launch, const uint32_t* src, uint32_t* out,
                         AsyncCopyMode mode);
template <typename Input, typename Accumulator, bool kAColMajor, bool kBColMajor>
RunStatus run_wmma(const Launch& launch, const Input* a, const Input* b, const Accumulator* c,
                   Accumulator* d, bool c_col_major, bool d_col_major, bool fill,
                   float fill_value);
// tensor_core_misuse.cuh (CPU only: undefined behaviour on a GPU)
RunStatus run_mma_lane_exits(const Launch& launch, float* out, unsigned exiting);
RunStatus run_mma_lane_at_barrier(const Launch& launch, float* out);
RunStatus run_mma_two_places(const Launch& launch, float* out);
RunStatus run_ldmatrix_during_mma(const Launch& launch, float* out);
RunStatus run_mma_partial_warp(const Launch& launch, float* out);
RunStatus run_ldmatrix_misaligned(const Launch& launch, uint32_t* out);
RunStatus run_cp_async_misaligned(const Launch& launch, const uint32_t* src, uint32_t* out);
RunStatus run_cp_async_oversized(const Launch& launch, const uint32_t* src, uint32_t* out);
RunStatus run_wmma_pointer_disagreement(const Launch& launch, const __half* a, float* out);

}  // namespace ts::test
