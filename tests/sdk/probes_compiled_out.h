// A kernel built with its probes compiled out (probes_compiled_out.cu, TILESCOPE_TRACE=0), for
// test_recorder: its probe calls must record nothing whatever view they are given.
#pragma once

#include <tilescope/trace_view.h>

namespace tilescope_test {

// Launches a block of 32 threads that each call record(), open_warp() and open_planned() on
// `view`; returns how many of those calls said they wrote an event.
int records_with_probes_compiled_out(tilescope::TraceView view);

}  // namespace tilescope_test
