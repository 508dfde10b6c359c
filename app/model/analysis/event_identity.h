// Which event is which, and in what order the kernel wrote them.
//
// An event's identity (EventKey) is its stage, (batch, head), query rows, split and step: two
// events of one run with one identity are a duplicate; two runs' events with one identity are the
// same point of the kernel (A/B). Its place in the kernel's own order (OrderKey) is its stage's
// pass first (a merge pass runs after the states it reads), then its block, then, in the block,
// the states and merges before the final outputs (an output is written from the states its block
// holds, whatever step number its probe gives it), then the step: the order of a trace written
// from a plan, and the order in which the first divergence is looked for. Its row block (RowBlock) is the unit the reference computes.
//
// event_problem says why an event that the trace reader accepted still cannot be compared: the
// reader checks storage bounds (tilescope/event.h against the attention's sizes); this checks
// meaning (a kv head other than the attention's GQA mapping gives, rows past a batch's query
// length).
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/attention_spec.h"
#include "instrumentation/trace/trace_event.h"
#include "kernels/reference.h"

namespace ts {

struct EventKey {
  int32_t stage = 0;
  int32_t batch = 0, head = 0;
  int32_t q_begin = 0, rows = 0;
  int32_t split = -1;
  int32_t step = 0;

  friend auto operator<=>(const EventKey&, const EventKey&) = default;
};

EventKey event_key(const EventHeader& h);

// Sort key of the kernel's own order; smaller runs first.
using OrderKey = std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t>;
OrderKey order_key(const EventHeader& h, const std::vector<StageInfo>& stages);

// The rows an event holds, as the reference's unit.
inline RowBlock row_block(const EventHeader& h) { return {h.batch, h.head, h.q_begin, h.rows}; }

// The keys an event covers, as ranges (its header's, in order); a final-kind event covers every
// key.
std::vector<KeyRange> event_key_ranges(const EventHeader& h, const StageInfo& stage, const AttentionSpec& spec);

// One past the last key an event covers (the column of the error grids).
int64_t event_key_end(const EventHeader& h, const StageInfo& stage, const AttentionSpec& spec);

// Why an event cannot be compared ("" when it can); see the top of this file.
std::string event_problem(const EventHeader& h, const AttentionSpec& spec);

// Indices of `headers` sorted into the kernel's own order (stable: a trace already in that order
// comes back as 0, 1, 2, ...): the order a stepping UI walks the events in.
std::vector<size_t> kernel_order(std::span<const EventHeader> headers, const std::vector<StageInfo>& stages);

// What a pass over events may cost: the rows it compares, and the rows of the distinct row
// blocks whose references it needs (each costs rows x keys x head_dim to compute, whatever the
// number of its events: a FA-1 query tile's 64 steps read one row block).
struct SampleBudget {
  uint64_t event_rows = 0;
  uint64_t row_block_rows = 0;
};

// A sample of `events` (indices into `headers`) within `budget`: all of them when they fit; else
// the events of the row blocks whose key q_begin / rows + head + batch is a multiple of K (the
// smallest power of two that brings both costs within the budget), so that a pass over the sample
// reaches evenly across queries, heads and batches, and every sampled pass of a run picks row
// blocks from the same nested sets (those of a larger K are among a smaller K's): the references
// one pass computed serve the next. Never empty when `events` is not. `sampled` says whether
// events were left out.
std::vector<size_t> sample_row_blocks(std::span<const size_t> events, std::span<const EventHeader> headers,
                                      const SampleBudget& budget, bool& sampled);

// "keys 0-4095", "keys 0-127 and 256-383", "no key".
std::string describe_keys(std::span<const KeyRange> ranges);

// What the reports call an index: "split 2", "splits 0-3" (failing_sets.h: index_set_text);
// `one_after` and `many_after` are the words a name needs after the numbers.
struct IndexNames {
  std::string_view one, many;
  std::string_view one_after = {}, many_after = {};
  std::string numbered(int64_t i) const;  // "split 2", "event 4 of its block"
  std::string name() const;               // "split", "event of its block" (an axis)
};

// An event's step, in words true of every stage: its number in its block's own order
// (tilescope/event.h). A running state's events come one per kv tile, but a partial is written
// after its split's tile events and a merge after each state it merged, so "step" would read as
// a kv step that is not there. Every text that names a step says it so: "event 4 of its block",
// "events 1-3 of their blocks (of 0-3)".
inline constexpr IndexNames kEventOfItsBlock{"event", "events", " of its block", " of their blocks"};

// Where an event sits, in words: "splitk.reduce, batch 0 head 3, queries 32-39, split 1, event 1
// of its block (keys 0-4095)" (its step as kEventOfItsBlock says it); a final-kind stage: "final,
// batch 0 head 3, queries 32-39 (the output)".
std::string describe_event(const EventHeader& h, const std::vector<StageInfo>& stages, const AttentionSpec& spec);

}  // namespace ts
