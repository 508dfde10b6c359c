// <cuda_pipeline.h> on tilescope's CPU path: not supported by the SIMT runtime.
#pragma once

#error "tilescope CPU path: the __pipeline_* primitives (<cuda_pipeline.h>) are not supported by the SIMT runtime; use ts::tc::cp_async_* from instrumentation/simt/tensor_core.h (cp.async with commit and wait groups, on the GPU and the CPU)"
