#include "app/cli_common/capture_flags.h"

namespace ts::cli {

std::string_view option_for(CaptureField field) {
  switch (field) {
    case CaptureField::kernel: return "--kernel";
    case CaptureField::fault: return "--fault or --kernel";
    case CaptureField::backend: return "--backend";
    case CaptureField::batch: return "--batch";
    case CaptureField::heads: return "--heads";
    case CaptureField::heads_kv: return "--heads-kv";
    case CaptureField::seq_q: return "--seq-q";
    case CaptureField::seq_kv: return "--seq-kv";
    case CaptureField::head_dim: return "--head-dim";
    case CaptureField::dtype: return "--dtype";
    case CaptureField::window: return "--window";
    case CaptureField::softcap: return "--softcap";
    case CaptureField::splits: return "--splits";
    case CaptureField::softmax_scale: return "--scale";
    case CaptureField::q_size: return "--batch, --heads, --seq-q or --head-dim";
    case CaptureField::kv_size: return "--batch, --heads-kv, --seq-kv or --head-dim";
    case CaptureField::input_seed: return "--seed";
    case CaptureField::input_scale: return "--input-scale";
    case CaptureField::input_files: return "--inputs";
    case CaptureField::trace_batch: return "--trace-batch";
    case CaptureField::trace_heads: return "--trace-head";
    case CaptureField::trace_queries: return "--trace-queries";
    case CaptureField::trace_stages: return "--stages";
    case CaptureField::capacity: return "--capacity";
    case CaptureField::cpu_workers: return "--workers";
    case CaptureField::perturb_seed: return "--perturb-seed";
  }
  return {};
}

std::string recording_capacity_hint() {
  return "record it again with a larger trace capacity or narrower filters (tilescope.record's capacity= and "
         "filter=, the C++ Recorder's BufferOptions capacity and filter; docs/your-own-kernel.md)";
}

std::string capacity_hint() {
  return "capture again with a larger " + std::string(option_for(CaptureField::capacity)) + " or narrower filters (" +
         std::string(option_for(CaptureField::trace_batch)) + ", " + std::string(option_for(CaptureField::trace_heads)) +
         ", " + std::string(option_for(CaptureField::trace_queries)) + ", " +
         std::string(option_for(CaptureField::trace_stages)) + ")";
}

}  // namespace ts::cli
