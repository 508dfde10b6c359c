// The parts of a capture request (CaptureSpec) a person sets, as the checks name them
// (capture_check.h). Each front end says them in its own words: the CLI as its options
// (app/cli_common/capture_flags.h), the GUI as its launch form's labels
// (app/model/viewer/launch_form.h).
#pragma once

#include <array>

namespace ts {

enum class CaptureField {
  kernel,
  fault,
  backend,
  batch,
  heads,
  heads_kv,
  seq_q,
  seq_kv,
  head_dim,
  dtype,
  window,         // window_left, window_right
  softcap,
  splits,         // num_splits
  softmax_scale,
  q_size,         // the Q tensor's size: batch x heads x seq_q x head_dim together
  kv_size,        // K and V's: batch x kv heads x seq_kv x head_dim together
  input_seed,
  input_scale,
  input_files,
  trace_batch,
  trace_heads,
  trace_queries,
  trace_stages,
  capacity,
  cpu_workers,
  perturb_seed,
};

// Every field, in the order above (for the front ends' tables and their tests).
inline constexpr std::array kCaptureFields = {
    CaptureField::kernel,        CaptureField::fault,        CaptureField::backend,      CaptureField::batch,
    CaptureField::heads,         CaptureField::heads_kv,     CaptureField::seq_q,        CaptureField::seq_kv,
    CaptureField::head_dim,      CaptureField::dtype,        CaptureField::window,       CaptureField::softcap,
    CaptureField::splits,        CaptureField::softmax_scale, CaptureField::q_size,      CaptureField::kv_size,
    CaptureField::input_seed,    CaptureField::input_scale,  CaptureField::input_files,  CaptureField::trace_batch,
    CaptureField::trace_heads,   CaptureField::trace_queries, CaptureField::trace_stages, CaptureField::capacity,
    CaptureField::cpu_workers,   CaptureField::perturb_seed,
};
static_assert(kCaptureFields.size() == static_cast<size_t>(CaptureField::perturb_seed) + 1,
              "kCaptureFields lists every CaptureField");

}  // namespace ts
