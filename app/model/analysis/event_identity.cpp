#include "app/model/analysis/event_identity.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "base/list_text.h"

namespace ts {

EventKey event_key(const EventHeader& h) {
  return {h.stage, h.batch, h.head, h.q_begin, h.rows, h.split, h.step};
}

OrderKey order_key(const EventHeader& h, const std::vector<StageInfo>& stages) {
  const bool known = h.stage >= 0 && static_cast<size_t>(h.stage) < stages.size();
  const int32_t pass = known ? stages[static_cast<size_t>(h.stage)].pass : 0;
  const int32_t output = known && stages[static_cast<size_t>(h.stage)].kind == StageKind::final ? 1 : 0;
  return {pass, h.block, output, h.step, h.q_begin, h.stage, h.head, h.batch};
}

std::vector<KeyRange> event_key_ranges(const EventHeader& h, const StageInfo& stage, const AttentionSpec& spec) {
  if (stage.kind == StageKind::final) return {KeyRange{0, static_cast<int32_t>(spec.seq_kv)}};
  std::vector<KeyRange> out;
  for (int32_t k = 0; k < std::clamp(h.num_key_ranges, 0, kMaxKeyRanges); ++k) out.push_back(h.keys[k]);
  return out;
}

int64_t event_key_end(const EventHeader& h, const StageInfo& stage, const AttentionSpec& spec) {
  if (stage.kind == StageKind::final) return spec.seq_kv;
  int64_t end = 0;
  for (int32_t k = 0; k < std::clamp(h.num_key_ranges, 0, kMaxKeyRanges); ++k)
    end = std::max<int64_t>(end, h.keys[k].end);
  return end;
}

std::string event_problem(const EventHeader& h, const AttentionSpec& spec) {
  if (h.kv_head >= 0 && h.kv_head != spec.kv_head_of(h.head))
    return "it says it read kv head " + std::to_string(h.kv_head) + ", but query head " + std::to_string(h.head) +
           " reads kv head " + std::to_string(spec.kv_head_of(h.head)) + " (" + std::to_string(spec.heads_q) +
           " query heads on " + std::to_string(spec.heads_kv) + " kv heads)";
  if (h.rows > 0 && h.q_begin >= spec.q_len(h.batch))
    return "its rows start at query " + std::to_string(h.q_begin) + ", past batch " + std::to_string(h.batch) +
           "'s " + std::to_string(spec.q_len(h.batch)) + " queries";
  return "";
}

std::vector<size_t> kernel_order(std::span<const EventHeader> headers, const std::vector<StageInfo>& stages) {
  std::vector<OrderKey> keys(headers.size());
  for (size_t i = 0; i < headers.size(); ++i) keys[i] = order_key(headers[i], stages);
  std::vector<size_t> order(headers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  return order;
}

std::vector<size_t> sample_row_blocks(std::span<const size_t> events, std::span<const EventHeader> headers,
                                      const SampleBudget& budget, bool& sampled) {
  uint64_t rows = 0, block_rows = 0;
  std::set<RowBlock> blocks;
  for (size_t e : events) {
    const uint64_t n = static_cast<uint64_t>(std::max(0, headers[e].rows));
    rows += n;
    if (blocks.insert(row_block(headers[e])).second) block_rows += n;
  }
  sampled = rows > budget.event_rows || block_rows > budget.row_block_rows;
  if (!sampled) return {events.begin(), events.end()};
  uint64_t every = 1;
  while (every * std::max<uint64_t>(1, budget.event_rows) < rows || every * std::max<uint64_t>(1, budget.row_block_rows) < block_rows)
    every *= 2;
  auto key = [&](const EventHeader& h) {
    return static_cast<uint64_t>(h.q_begin / std::max(1, h.rows)) + static_cast<uint64_t>(h.head) + static_cast<uint64_t>(h.batch);
  };
  std::vector<size_t> out;
  for (size_t e : events)
    if (key(headers[e]) % every == 0) out.push_back(e);
  if (out.empty()) {  // no row block on the lattice: the first row block's events
    const RowBlock first = row_block(headers[events.front()]);
    for (size_t e : events)
      if (row_block(headers[e]) == first) out.push_back(e);
  }
  return out;
}

std::string describe_keys(std::span<const KeyRange> ranges) {
  std::vector<std::string> parts;
  for (const KeyRange& r : ranges) {
    if (r.end <= r.begin) continue;
    parts.push_back(r.end - r.begin == 1 ? std::to_string(r.begin) : std::to_string(r.begin) + "-" + std::to_string(r.end - 1));
  }
  if (parts.empty()) return "no key";
  return (parts.size() == 1 && ranges.size() == 1 && ranges[0].end - ranges[0].begin == 1 ? "key " : "keys ") +
         spoken_list(parts, "and");
}

std::string IndexNames::numbered(int64_t i) const {
  return std::string(one) + " " + std::to_string(i) + std::string(one_after);
}

std::string IndexNames::name() const { return std::string(one) + std::string(one_after); }

std::string describe_event(const EventHeader& h, const std::vector<StageInfo>& stages, const AttentionSpec& spec) {
  const bool known = h.stage >= 0 && static_cast<size_t>(h.stage) < stages.size();
  std::string s = known ? stages[static_cast<size_t>(h.stage)].name : "stage " + std::to_string(h.stage);
  s += ", batch " + std::to_string(h.batch) + " head " + std::to_string(h.head);
  if (h.rows > 0)
    s += h.rows == 1 ? ", query " + std::to_string(h.q_begin)
                     : ", queries " + std::to_string(h.q_begin) + "-" + std::to_string(h.q_begin + h.rows - 1);
  if (known && stages[static_cast<size_t>(h.stage)].kind == StageKind::final) return s + " (the output)";
  if (h.split >= 0) s += ", split " + std::to_string(h.split);
  s += ", " + kEventOfItsBlock.numbered(h.step);
  if (known) {
    const std::vector<KeyRange> keys = event_key_ranges(h, stages[static_cast<size_t>(h.stage)], spec);
    s += " (" + describe_keys(keys) + ")";
  }
  return s;
}

}  // namespace ts
