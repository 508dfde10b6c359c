// The configurations the correctness tests sweep, on the CPU and on the GPU alike. Hand-picked
// so that every value of every axis appears with few heavy cases (a full product would take
// hours on the CPU backend): S in {1, 7, 64, 65, 128, 1000} for queries and keys, seq_q !=
// seq_kv (both ways), causal and not (including rows that see no key), splits in {1, 3, 8,
// more than the kv tiles, 0 = the heuristic}, every dtype and head dim, for fa1 and splitk (fa2:
// every dtype and head dim it runs; splitk2 likewise, with one split, more splits than kv tiles
// and an empty split); and GQA (MQA, 32 query heads on 8 kv heads), sliding windows
// (left only, two-sided, with and without causal) and logit softcaps on all three.
#pragma once

#include <string>
#include <vector>

#include "base/attention_config.h"

namespace ts::test {

std::vector<AttentionConfig> correctness_sweep();
std::string case_name(const AttentionConfig& c);  // a valid gtest name
uint64_t seed_of(const AttentionConfig& c);       // a fixed seed per case, different per case

}  // namespace ts::test
