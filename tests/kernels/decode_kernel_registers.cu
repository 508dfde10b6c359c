// The decode kernel (Split-K partial, bf16, head_dim 128) in its plain and traced builds (the
// traced build's two kernels), for
// check_decode_registers.py: compiled with `-Xptxas -v`, never linked or run.
#include "kernels/splitk_partial.cuh"

const void* decode_kernels[] = {
    reinterpret_cast<const void*>(&ts::splitk_partial_kernel<__nv_bfloat16, 128, ts::KernelVariant::plain>),
    reinterpret_cast<const void*>(&ts::splitk_partial_kernel<__nv_bfloat16, 128, ts::KernelVariant::traced>),
    reinterpret_cast<const void*>(&ts::splitk_partial_recording_blocks_kernel<__nv_bfloat16, 128>),
};
