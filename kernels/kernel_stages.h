// The stages our kernels record, as the stage table of their traces declares them, and the
// indices the kernels write into their events' `stage` field. One list per kernel: the kernels,
// the launch planner (which slots each block's events take) and the trace writer read it here.
//
//   FA-1:    0 "fa1.step"        state  pass 0  the running state after each kv tile (registers)
//            1 "final"           final  pass 0  the output rows as written, with their LSE
//   FA-2:    0 "fa2.step"        state  pass 0  as FA-1's, with P rounded to the input dtype
//                                               before P V (StageInfo::p_rounded) and the
//                                               weights by exp2 with the scale and log2 e
//                                               folded in (StageInfo::exp2_folded)
//            1 "final"           final  pass 0  as FA-1's
//   Split-K: 0 "splitk.tile"     state  pass 0  a split's running state after each of its kv
//                                               tiles (optional: LaunchRequest::tile_events);
//                                               it, the partial and the reduce p_rounded in a
//                                               run on tensor cores (kernel_stage_table(config))
//            1 "splitk.partial"  state  pass 0  the split's state as written to the partial
//                                               buffers the reduce reads
//            2 "splitk.reduce"   merge  pass 1  the merged state after each split
//            3 "final"           final  pass 1  the output rows as written, with their LSE
//   Split-K 2: Split-K's stages at Split-K's indices (its reduce is Split-K's reduce), with the
//            partial pass's named for it, P rounded and exponents folded as FA-2's (p_rounded,
//            exp2_folded: the reduce merges such states) in all but the final output:
//            0 "splitk2.tile", 1 "splitk2.partial", 2 "splitk.reduce", 3 "final"
#pragma once

#include <cstdint>
#include <vector>

#include "base/attention_config.h"
#include "base/host_device.h"
#include "instrumentation/trace/trace_event.h"

namespace ts {

inline constexpr int32_t kFa1StepStage = 0;
inline constexpr int32_t kFa1FinalStage = 1;
inline constexpr int32_t kFa1NumStages = 2;

inline constexpr int32_t kFa2StepStage = 0;
inline constexpr int32_t kFa2FinalStage = 1;
inline constexpr int32_t kFa2NumStages = 2;

inline constexpr int32_t kSplitkTileStage = 0;
inline constexpr int32_t kSplitkPartialStage = 1;
inline constexpr int32_t kSplitkReduceStage = 2;
inline constexpr int32_t kSplitkFinalStage = 3;
inline constexpr int32_t kSplitkNumStages = 4;

// The most stages any of our kernels declares (sizes of per-block slot tables).
inline constexpr int32_t kMaxKernelStages = 4;

// The stage table of a kernel's traces: its stages' names, kinds and passes, with the flags of a
// run of that kernel in its usual form (Split-K's stages as its SIMT steps compute them).
std::vector<StageInfo> kernel_stage_table(KernelKind kernel);
// The stage table of a run of `config` (what its trace declares): Split-K's partial runs on tensor
// cores for a decode in a 16-bit dtype (splitk_decode_on_tensor_cores, kernel_smem.h), and then
// its states carry P rounded to the input dtype (p_rounded), as FA-2's do.
std::vector<StageInfo> kernel_stage_table(const AttentionConfig& config);

}  // namespace ts
