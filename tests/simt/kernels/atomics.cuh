// Atomics from many blocks at once (the CPU runtime runs blocks on several worker threads).
//
//   atomics_kernel: every thread i < n folds ints[i], floats[i] into one AtomicTotals with
//     atomicAdd (int, unsigned, unsigned long long, float), atomicSub, atomicMax/Min (int,
//     unsigned), atomicAnd/Or/Xor, atomicInc (wrapping), a double sum and an int maximum
//     built from atomicCAS loops, and atomicExch (the last value swapped in must be one of
//     the inputs).
//   histogram_kernel: bins[values[i] % bin_count] += 1 with unsigned atomicAdd.
//   contended_counters_kernel: every thread bumps the same four counters `iterations` times:
//     counters[0] by atomicAdd, [1] by atomicInc (no wrap), [2] by an atomicCAS loop, and
//     [3] down by atomicSub; a lost update on any worker shows in the totals.
//
// Run by tests/simt/test_kernels.cpp on both backends.
#pragma once

#include "instrumentation/simt/cuda_compat.h"
#include "tests/simt/kernels/test_types.h"

namespace ts::test {

__device__ inline double atomic_add_double_by_cas(double* address, double value) {
  auto* bits = reinterpret_cast<unsigned long long*>(address);
  unsigned long long old = *bits;
  unsigned long long assumed;
  do {
    assumed = old;
    const double sum = __longlong_as_double(static_cast<long long>(assumed)) + value;
    old = atomicCAS(bits, assumed, static_cast<unsigned long long>(__double_as_longlong(sum)));
  } while (assumed != old);
  return __longlong_as_double(static_cast<long long>(old));
}

__device__ inline int atomic_max_by_cas(int* address, int value) {
  int old = *address;
  while (old < value) {
    const int seen = atomicCAS(address, old, value);
    if (seen == old) break;
    old = seen;
  }
  return old;
}

__global__ void atomics_kernel(const int* ints, const float* floats, int n, AtomicTotals* totals) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const int v = ints[i];
  const auto u = static_cast<unsigned>(v);
  atomicAdd(&totals->sum, v);
  atomicSub(&totals->difference, v);
  atomicAdd(&totals->unsigned_sum, u);
  atomicAdd(&totals->wide_sum, static_cast<unsigned long long>(u));
  atomicAdd(&totals->float_sum, floats[i]);
  atomicMax(&totals->max, v);
  atomicMin(&totals->min, v);
  atomicMax(&totals->unsigned_max, u);
  atomicMin(&totals->unsigned_min, u);
  atomicAnd(&totals->bits_and, u);
  atomicOr(&totals->bits_or, u);
  atomicXor(&totals->bits_xor, u);
  atomicInc(&totals->wrapping_count, kWrapLimit);
  atomic_max_by_cas(&totals->cas_max, v);
  atomic_add_double_by_cas(&totals->cas_double_sum, static_cast<double>(floats[i]));
  atomicExch(&totals->exchanged, v);
}

__global__ void histogram_kernel(const unsigned* values, int n, unsigned* bins,
                                 unsigned bin_count) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) atomicAdd(&bins[values[i] % bin_count], 1u);
}

__global__ void contended_counters_kernel(unsigned* counters, int iterations) {
  for (int i = 0; i < iterations; ++i) {
    atomicAdd(&counters[0], 1u);
    atomicInc(&counters[1], 0xffffffffu);
    unsigned expected = 0;  // a guess; a failed atomicCAS returns the current value
    for (;;) {
      const unsigned seen = atomicCAS(&counters[2], expected, expected + 1);
      if (seen == expected) break;
      expected = seen;
    }
    atomicSub(&counters[3], 1u);
  }
}

}  // namespace ts::test
