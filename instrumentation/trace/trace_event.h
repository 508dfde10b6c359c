// The event model on the host: the public event layout (tilescope/event.h, what kernels write)
// and the stage table a trace declares — for each stage index an event can carry, the name the
// kernel gave it, its kind (a state over keys, a merge of states, the final output) and its pass
// (which launch it belongs to: events of pass 0 come before those of pass 1 in the kernel's own
// order, whatever their blocks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tilescope/event.h"

namespace ts {

using tilescope::EventHeader;
using tilescope::KeyRange;
using tilescope::kMaxKeyRanges;
using tilescope::StageKind;
using tilescope::kConventionMask;
using tilescope::kLogBase2;
using tilescope::kNoMax;
using tilescope::kNormalized;
using tilescope::kUnscaledMax;

// A trace declares at most this many stages (a probe filters stages by a 64-bit mask).
inline constexpr size_t kMaxStages = 64;
// Longest stage name accepted from a file.
inline constexpr size_t kMaxStageNameBytes = 64;

struct StageInfo {
  std::string name;
  StageKind kind = StageKind::state;
  int32_t pass = 0;
  // The kernel rounds the softmax weights P to the input dtype before P V (a tensor-core kernel:
  // mma takes 16-bit operands), so the stage's states carry that rounding: the yardstick of its
  // tolerance rounds P the same way, its l summed before or after the rounding
  // (app/model/analysis/tolerance.h). Meaningless for a final
  // stage, whose yardstick (the input-dtype naive attention) rounds P already.
  bool p_rounded = false;
  // The kernel takes the softmax weights as exp2 of one float32 fused multiply-add with the scale
  // and log2 e folded in (exp2(s * scale * log2 e - m * log2 e) on the unscaled scores s, as
  // FlashAttention-2 does) rather than exp(s - m): where |m| is large (scores of 1e5 and more)
  // the rounding of those products makes the row's largest weight differ from 1 by a few ulps of
  // m log2 e, which the states' l and O carry; the yardstick folds the same way
  // (kernels/naive_attention.h, textbook_states). Meaningless for a final stage, like p_rounded.
  bool exp2_folded = false;
  bool operator==(const StageInfo&) const = default;
};

std::string_view to_string(StageKind kind);                       // "state", "merge", "final"
std::optional<StageKind> stage_kind_from_name(std::string_view name);

// The pass a stage gets when its declaration says none: states 0, merges 1 (they read states
// recorded earlier), the final output the largest pass of the other stages.
int32_t default_pass(StageKind kind, const std::vector<StageInfo>& others);

// JSON: [{"name": "splitk.partial", "kind": "state", "pass": 0}, ...]; "p_rounded": true and
// "exp2_folded": true on the stages that have them (absent: false).
std::string stage_table_json(const std::vector<StageInfo>& stages);
// Throws std::invalid_argument naming the problem: not a list of objects, more than kMaxStages,
// a name empty, too long, with control characters or repeated, an unknown kind, a pass outside
// [0, 1000], a p_rounded or exp2_folded that is not a boolean. A missing pass takes default_pass.
std::vector<StageInfo> parse_stage_table(std::string_view json);

// "unnormalized", "normalized", "unnormalized, base-2 max", "normalized, base-2 LSE",
// "unnormalized, max of unscaled scores"...
std::string convention_name(int32_t bits);

}  // namespace ts
