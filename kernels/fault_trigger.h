// Whether a config takes the path a fault variant breaks. Each fault is a bug on one path of
// the kernels (a second kv tile, a fully masked tile, an empty split, a second query row...);
// a config that never takes that path runs the faulty kernel correctly, and its "clean"
// verdict must not read as "the fault is not there". The analysis quotes the reason.
#pragma once

#include <string>

#include "base/attention_config.h"
#include "kernels/tiling.h"

namespace ts {

// Why `config.fault` cannot show in a run of `config` cut by `tiling`, as a clause that
// completes "the kernel was built with fault F, but ..."; empty when the fault's path is taken
// (and for Fault::none). missing_barrier, a race, always has a reason: even on its path it shows
// only when the threads of a block drift apart.
std::string why_fault_cannot_show(const AttentionConfig& config, const Tiling& tiling);

}  // namespace ts
