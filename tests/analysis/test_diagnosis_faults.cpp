#include <gtest/gtest.h>
#include <iostream>
#include "app/model/analysis/analyze_run.h"
#include "app/model/analysis/report_text.h"
#include "tests/analysis/fault_kernels/fault_kernel_run.h"

namespace ts::test {
namespace {
TEST(Probe, Dump) {
  for (const TestFaultInfo& f : kTestFaults) {
    FaultKernelRun run;
    run.fault = f.fault;
    run.shape = f.shape;
    run.attention.batch = 2; run.attention.heads_q = 2; run.attention.heads_kv = 2;
    run.attention.seq_q = 40; run.attention.seq_kv = 100; run.attention.head_dim = 32;
    run.attention.causal = f.fault == TestFault::causal_drops_diagonal || f.fault == TestFault::causal_admits_next_key || f.fault == TestFault::causal_top_left || f.fault == TestFault::last_split_drops_diagonal ? CausalAlign::bottom_right : CausalAlign::none;
    if (f.fault == TestFault::softcap_not_applied) run.attention.softcap = 5;
    if (f.fault == TestFault::gqa_modulo_head_map) { run.attention.heads_q = 4; }
    run.splits = 2;
    const RunView v = run_fault_kernel(run);
    const AnalysisReport r = analyze_run(v);
    std::cout << "==== " << f.name << "\n" << report_text(r);
  }
}
}
}
