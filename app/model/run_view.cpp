#include "app/model/run_view.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace ts {

int32_t RunView::stage_index(std::string_view name) const {
  for (size_t s = 0; s < stages.size(); ++s)
    if (stages[s].name == name) return static_cast<int32_t>(s);
  return -1;
}

void add_output_events(RunView& run) {
  if (!run.output || run.stage_index(kOutputStageName) >= 0) return;
  const AttentionSpec& a = run.attention;
  const HostTensor& out = *run.output;
  const std::vector<int64_t> shape = {a.batch, a.heads_q, a.seq_q, a.head_dim};
  if (out.shape != shape)
    throw std::invalid_argument("the output has shape " + shape_string(out.shape) + "; the attention needs " +
                                shape_string(shape));
  const bool with_lse = run.output_lse && run.output_lse->size() == static_cast<size_t>(a.batch * a.heads_q * a.seq_q);
  if (run.max_rows <= 0) run.max_rows = static_cast<int32_t>(std::min<int64_t>(64, a.seq_q));
  run.head_dim = static_cast<int32_t>(a.head_dim);
  const int32_t stage = static_cast<int32_t>(run.stages.size());
  StageInfo info{kOutputStageName, StageKind::final, 0};
  for (const StageInfo& s : run.stages) info.pass = std::max(info.pass, s.pass + 1);
  run.stages.push_back(info);

  const size_t rows_cap = static_cast<size_t>(run.max_rows), d = static_cast<size_t>(a.head_dim);
  const int64_t chunks = (a.seq_q + run.max_rows - 1) / run.max_rows;
  // Only the heads whose inputs the run holds can be compared: a trace filtered to some heads
  // keeps the output of all of them but the inputs of those it traced.
  std::vector<std::pair<int64_t, int64_t>> heads;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t h = 0; h < a.heads_q; ++h)
      if (run.inputs.q_index(b, h) >= 0 && run.inputs.kv_index(b, a.kv_head_of(h)) >= 0) heads.emplace_back(b, h);
  const size_t n = heads.size() * static_cast<size_t>(chunks);
  run.appended_m.assign(n * rows_cap, 0.0f);
  run.appended_l.assign(n * rows_cap, 1.0f);
  run.appended_o.assign(n * rows_cap * d, 0.0f);
  std::vector<float> row(d);
  size_t e = 0;
  for (const auto& [b, h] : heads)
      for (int64_t c = 0; c < chunks; ++c, ++e) {
        const int64_t q0 = c * run.max_rows;
        const int32_t rows = static_cast<int32_t>(std::min<int64_t>(run.max_rows, a.seq_q - q0));
        EventHeader ev{};
        ev.stage = stage;
        ev.convention = kNormalized | (with_lse ? 0 : kNoMax);
        ev.batch = static_cast<int32_t>(b);
        ev.head = static_cast<int32_t>(h);
        ev.kv_head = static_cast<int32_t>(a.kv_head_of(h));
        ev.q_begin = static_cast<int32_t>(q0);
        ev.rows = rows;
        ev.split = -1;
        ev.step = 0;
        ev.block = static_cast<int32_t>(e);
        ev.where = -1;
        ev.num_key_ranges = 1;
        ev.keys[0] = {0, static_cast<int32_t>(a.seq_kv)};
        ev.time_ns = 0;
        for (int32_t r = 0; r < rows; ++r) {
          const int64_t row_index = (b * a.heads_q + h) * a.seq_q + q0 + r;
          out.copy_floats(row_index * a.head_dim, a.head_dim, run.appended_o.data() + (e * rows_cap + r) * d);
          run.appended_m[e * rows_cap + r] =
              with_lse ? (*run.output_lse)[static_cast<size_t>(row_index)] : std::numeric_limits<float>::quiet_NaN();
        }
        run.headers.push_back(ev);
      }
}

}  // namespace ts
