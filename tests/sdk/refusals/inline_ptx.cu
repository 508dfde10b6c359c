// Inline PTX in a kernel on the CPU path: the shim's <cuda_runtime.h> refuses it by name.
__global__ void lane_of(unsigned* out) {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  *out = lane;
}
