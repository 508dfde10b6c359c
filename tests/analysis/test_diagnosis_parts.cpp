// The diagnosis's parts on their own: the one table of symptom kinds, how failing sets read, and
// the row-block samples the diagnosis's passes share.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "app/model/analysis/event_identity.h"
#include "app/model/analysis/failing_sets.h"
#include "app/model/analysis/symptom_kinds.h"

namespace ts {
namespace {

TEST(SymptomKinds, OneTableOfStableIds) {
  std::set<std::string> ids;
  for (const SymptomKindInfo& k : all_symptom_kinds()) {
    EXPECT_TRUE(ids.insert(std::string(k.id)).second) << k.id << " twice";
    EXPECT_EQ(symptom_kind_from_id(k.id), k.kind);
    EXPECT_EQ(to_string(k.kind), k.id);
    EXPECT_FALSE(k.meaning.empty()) << k.id;
  }
  // The ids scripts already read keep their names.
  for (const char* id : {"clean", "missing_partial", "nan_fully_masked", "reduce_scaled_by_l", "query_layout",
                         "stale_state", "race", "agree"})
    EXPECT_TRUE(ids.count(id)) << id;
  EXPECT_FALSE(symptom_kind_info(SymptomKind::unexplained).mechanism);
  EXPECT_TRUE(symptom_kind_info(SymptomKind::o_not_rescaled).mechanism);
}

IndexSet set_of(std::vector<int64_t> failing, std::vector<int64_t> compared) { return {std::move(failing), std::move(compared)}; }

TEST(FailingSets, ReadAsCompactRanges) {
  EXPECT_EQ(index_set_text(set_of({1}, {0, 1}), kBatchNames), "batch 1 only (of 0-1)");
  EXPECT_EQ(index_set_text(set_of({0, 1, 2, 3}, {0, 1, 2, 3}), kHeadNames), "all heads (0-3)");
  std::vector<int64_t> all(256), upper(128);
  for (int64_t i = 0; i < 256; ++i) all[static_cast<size_t>(i)] = i;
  for (int64_t i = 0; i < 128; ++i) upper[static_cast<size_t>(i)] = 128 + i;
  EXPECT_EQ(index_set_text(set_of(upper, all), kQueryNames), "queries 128-255 (of 0-255)");
  EXPECT_EQ(index_set_text(set_of({0}, {0}), kBatchNames), "batch 0");
  EXPECT_EQ(index_set_text(set_of({}, {0, 1}), kSplitNames), "no split");
  // A step is said as what it is for every stage: the event's number in its block.
  EXPECT_EQ(index_set_text(set_of({4}, {4}), kEventOfItsBlock), "event 4 of its block");
  EXPECT_EQ(index_set_text(set_of({0, 1, 2, 3}, {0, 1, 2, 3}), kEventOfItsBlock), "all events of their blocks (0-3)");
  EXPECT_EQ(index_set_text(set_of({}, {0, 1}), kEventOfItsBlock), "no event of their blocks");
  EXPECT_EQ(index_set_text(set_of({3}, {0, 1, 2, 3}), kEventOfItsBlock), "event 3 of its block only (of 0-3)");
  EXPECT_EQ(index_set_text(set_of({1, 2, 3}, {0, 1, 2, 3}), kEventOfItsBlock), "events 1-3 of their blocks (of 0-3)");

  FailingSets f;
  f.batches = set_of({1}, {0, 1});
  f.heads = set_of({0, 1}, {0, 1});
  f.query_rows = set_of(upper, all);
  f.splits = set_of({2}, {0, 1, 2, 3});
  f.steps = set_of({0}, {0});
  f.key_ends = set_of({300}, {300});
  f.columns = set_of({32, 33}, {0, 1, 2, 3});
  f.column_events_checked = 3;
  f.quantities = 2 | 4;  // l and O
  EXPECT_EQ(failing_sets_text(f),
            "batch 1 only (of 0-1), all heads (0-1), queries 128-255 (of 0-255), split 2 only (of 0-3), head-dim "
            "columns 32-33 (of 0-3); l and O wrong");
  f.steps = set_of({1, 2, 3}, {0, 1, 2, 3});
  EXPECT_EQ(failing_sets_text(f),
            "batch 1 only (of 0-1), all heads (0-1), queries 128-255 (of 0-255), split 2 only (of 0-3), events 1-3 "
            "of their blocks (of 0-3), head-dim columns 32-33 (of 0-3); l and O wrong");
}

TEST(RowBlockSamples, WithinBudgetNestedAndNeverEmpty) {
  // 64 row blocks (batch 2 x heads 4 x 8 query tiles of 16 rows), 4 events each.
  std::vector<EventHeader> headers;
  for (int32_t b = 0; b < 2; ++b)
    for (int32_t h = 0; h < 4; ++h)
      for (int32_t q = 0; q < 8; ++q)
        for (int32_t step = 0; step < 4; ++step) {
          EventHeader e{};
          e.batch = b;
          e.head = h;
          e.q_begin = q * 16;
          e.rows = 16;
          e.step = step;
          headers.push_back(e);
        }
  std::vector<size_t> events(headers.size());
  for (size_t i = 0; i < events.size(); ++i) events[i] = i;
  bool sampled = true;
  EXPECT_EQ(sample_row_blocks(events, headers, {1u << 20, 1u << 20}, sampled).size(), events.size());
  EXPECT_FALSE(sampled);

  auto blocks_of = [&](const std::vector<size_t>& picked) {
    std::set<RowBlock> out;
    for (size_t e : picked) out.insert(row_block(headers[e]));
    return out;
  };
  const std::vector<size_t> half = sample_row_blocks(events, headers, {2048, 1u << 20}, sampled);
  EXPECT_TRUE(sampled);
  const std::vector<size_t> quarter = sample_row_blocks(events, headers, {1024, 1u << 20}, sampled);
  uint64_t rows = 0;
  for (size_t e : quarter) rows += static_cast<uint64_t>(headers[e].rows);
  EXPECT_LE(rows, 1024u + 4u * 16u);
  const std::set<RowBlock> h = blocks_of(half), q = blocks_of(quarter);
  EXPECT_TRUE(std::includes(h.begin(), h.end(), q.begin(), q.end())) << "a smaller sample's row blocks are among a larger one's";
  // Whole row blocks: every event of a picked block is in.
  EXPECT_EQ(quarter.size(), q.size() * 4);
  // Reaching across batches and heads.
  std::set<int32_t> batches, heads;
  for (const RowBlock& rb : q) {
    batches.insert(rb.batch);
    heads.insert(rb.head);
  }
  EXPECT_EQ(batches.size(), 2u);
  EXPECT_EQ(heads.size(), 4u);
  // The row-block budget alone also samples; a list off the lattice still gives its first block.
  EXPECT_LT(sample_row_blocks(events, headers, {1u << 20, 16 * 8}, sampled).size(), events.size());
  const std::vector<size_t> one = {1};  // batch 0 head 0 query tile 0... on the lattice; take one off it
  const std::vector<size_t> off = {4};  // query tile 1
  EXPECT_EQ(sample_row_blocks(off, headers, {1, 1}, sampled), off);
  EXPECT_FALSE(sample_row_blocks(one, headers, {1, 1}, sampled).empty());
}

}  // namespace
}  // namespace ts
