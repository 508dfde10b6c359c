#include "app/model/analysis/event_identity.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace ts {

EventKey event_key(const EventHeader& h) {
  EventKey k;
  k.stage = h.stage;
  k.batch = h.batch;
  k.head = h.head;
  k.q_tile = h.q_tile;
  // Normalised so that a probe's bookkeeping fields cannot make one event look like two.
  switch (static_cast<Stage>(h.stage)) {
    case Stage::fa1_step: k.split = -1; k.step = h.step; break;
    case Stage::splitk_partial: k.split = h.split; k.step = 0; break;
    case Stage::splitk_reduce: k.split = h.split; k.step = h.split; break;
    case Stage::final_output: k.split = -1; k.step = 0; break;
    default: k.split = h.split; k.step = h.step; break;
  }
  return k;
}

OrderKey order_key(const EventKey& k, const Tiling& t) {
  constexpr int64_t kLast = std::numeric_limits<int64_t>::max();
  const bool splitk = t.kernel == KernelKind::splitk;
  switch (static_cast<Stage>(k.stage)) {
    case Stage::fa1_step: return {0, k.batch, k.head, k.q_tile, k.step};
    case Stage::splitk_partial: return {0, k.batch, k.head, k.q_tile, k.split};
    case Stage::splitk_reduce: return {1, k.batch, k.head, k.q_tile, k.split};
    case Stage::final_output: return {splitk ? 1 : 0, k.batch, k.head, k.q_tile, kLast};
  }
  return {2, k.batch, k.head, k.q_tile, k.step};
}

KvTileRange expected_kv_range(const EventKey& k, const Tiling& t) {
  switch (static_cast<Stage>(k.stage)) {
    case Stage::fa1_step: return {0, k.step + 1};
    case Stage::splitk_partial: return t.split_kv_tiles(k.split);
    case Stage::splitk_reduce: return {0, t.split_kv_tiles(k.split).end};
    case Stage::final_output:
      return t.kernel == KernelKind::fa1 ? t.kv_tiles_visited(k.q_tile) : KvTileRange{0, t.num_kv_tiles};
  }
  return {0, 0};
}

Convention expected_convention(Stage stage) {
  return stage == Stage::final_output ? Convention::normalized : Convention::unnormalized;
}

uint32_t kernel_stage_mask(KernelKind kernel) {
  return kernel == KernelKind::fa1
             ? stage_bit(Stage::fa1_step) | stage_bit(Stage::final_output)
             : stage_bit(Stage::splitk_partial) | stage_bit(Stage::splitk_reduce) | stage_bit(Stage::final_output);
}

std::string stage_name(int32_t stage) {
  if (stage >= 0 && stage < kNumStages) return kStageNames[stage];
  return "stage " + std::to_string(stage);
}

std::string event_problem(const EventHeader& h, const AttentionConfig& c, const Tiling& t) {
  if (h.stage < 0 || h.stage >= kNumStages) return "unknown stage " + std::to_string(h.stage);
  if ((kernel_stage_mask(t.kernel) & stage_bit(static_cast<Stage>(h.stage))) == 0)
    return std::string("stage ") + kStageNames[h.stage] + " does not occur in a " +
           std::string(to_string(t.kernel)) + " run";
  if (h.batch < 0 || h.batch >= c.batch) return "batch " + std::to_string(h.batch) + " outside the run's " + std::to_string(c.batch);
  if (h.head < 0 || h.head >= c.heads) return "head " + std::to_string(h.head) + " outside the run's " + std::to_string(c.heads);
  if (h.q_tile < 0 || h.q_tile >= t.num_q_tiles)
    return "query tile " + std::to_string(h.q_tile) + " outside the run's " + std::to_string(t.num_q_tiles);
  const int32_t rows = t.rows_in_q_tile(h.q_tile);
  if (h.rows != rows)
    return "holds " + std::to_string(h.rows) + " rows; query tile " + std::to_string(h.q_tile) + " has " +
           std::to_string(rows);
  switch (static_cast<Stage>(h.stage)) {
    case Stage::fa1_step:
      if (h.step < 0 || h.step >= t.kv_tiles_visited(h.q_tile).end)
        return "step " + std::to_string(h.step) + " outside the " + std::to_string(t.kv_tiles_visited(h.q_tile).end) +
               " kv tiles query tile " + std::to_string(h.q_tile) + " visits";
      break;
    case Stage::splitk_partial:
    case Stage::splitk_reduce:
      if (h.split < 0 || h.split >= t.num_splits)
        return "split " + std::to_string(h.split) + " outside the run's " + std::to_string(t.num_splits) + " splits";
      break;
    case Stage::final_output:
      break;
  }
  return "";
}

std::vector<size_t> kernel_order(std::span<const EventHeader> headers, const Tiling& tiling) {
  std::vector<size_t> order(headers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return order_key(event_key(headers[a]), tiling) < order_key(event_key(headers[b]), tiling);
  });
  return order;
}

std::vector<EventKey> expected_events(const Tiling& t, std::span<const TileId> tiles, uint32_t mask) {
  std::vector<EventKey> out;
  auto want = [&](Stage s) { return (mask & stage_bit(s)) != 0; };
  auto add = [&](Stage s, const TileId& id, int32_t split, int32_t step) {
    out.push_back({static_cast<int32_t>(s), id.batch, id.head, id.q_tile, split, step});
  };
  if (t.kernel == KernelKind::fa1) {
    for (const TileId& id : tiles) {
      if (want(Stage::fa1_step))
        for (int32_t step = 0; step < t.kv_tiles_visited(id.q_tile).end; ++step) add(Stage::fa1_step, id, -1, step);
      if (want(Stage::final_output)) add(Stage::final_output, id, -1, 0);
    }
    return out;
  }
  if (want(Stage::splitk_partial))
    for (const TileId& id : tiles)
      for (int32_t s = 0; s < t.num_splits; ++s) add(Stage::splitk_partial, id, s, 0);
  for (const TileId& id : tiles) {
    if (want(Stage::splitk_reduce))
      for (int32_t s = 0; s < t.num_splits; ++s) add(Stage::splitk_reduce, id, s, s);
    if (want(Stage::final_output)) add(Stage::final_output, id, -1, 0);
  }
  return out;
}

}  // namespace ts
