// <cuda_awbarrier.h> on tilescope's CPU path: not supported by the SIMT runtime.
#pragma once

#error "tilescope CPU path: arrive-wait barriers (<cuda_awbarrier.h>) are not supported by the SIMT runtime; use __syncthreads (and ts::tc::cp_async_wait_group for asynchronous copies)"
