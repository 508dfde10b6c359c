#include "tests/kernels/kernel_sweep.h"


namespace ts::test {

std::vector<AttentionConfig> correctness_sweep() {
  struct Row {
    KernelKind kernel;
    DType dtype;
    int64_t d, batch, heads, sq, skv;
    bool causal;
    int64_t splits;
  };
  using K = KernelKind;
  using T = DType;
  const Row rows[] = {
      // FA-1: every dtype x head dim once.
      {K::fa1, T::f32, 32, 2, 1, 1000, 1000, true, 0},
      {K::fa1, T::f16, 32, 1, 2, 65, 7, true, 0},  // queries 0..57 see no key
      {K::fa1, T::bf16, 32, 1, 1, 7, 1000, false, 0},
      {K::fa1, T::f32, 64, 2, 2, 128, 65, true, 0},
      {K::fa1, T::f16, 64, 1, 1, 1000, 128, false, 0},
      {K::fa1, T::bf16, 64, 1, 3, 64, 64, true, 0},
      {K::fa1, T::f32, 128, 1, 1, 65, 1000, true, 0},
      {K::fa1, T::f16, 128, 2, 1, 1, 128, false, 0},
      {K::fa1, T::bf16, 128, 1, 2, 7, 64, true, 0},
      {K::fa1, T::f32, 256, 1, 1, 64, 7, false, 0},
      {K::fa1, T::f16, 256, 1, 1, 65, 128, true, 0},
      {K::fa1, T::bf16, 256, 1, 1, 128, 1000, false, 0},
      // Split-K: every dtype x head dim once; splits 1, 3, 8, more than the tiles, heuristic.
      {K::splitk, T::f32, 32, 1, 2, 1, 1000, false, 3},
      {K::splitk, T::f16, 32, 1, 1, 1000, 65, true, 8},   // 1 kv tile: 7 empty splits
      {K::splitk, T::bf16, 32, 2, 1, 7, 128, true, 1},
      {K::splitk, T::f32, 64, 1, 1, 65, 1000, true, 0},
      {K::splitk, T::f16, 64, 1, 2, 64, 7, false, 3},
      {K::splitk, T::bf16, 64, 1, 1, 1, 65, false, 8},
      {K::splitk, T::f32, 128, 1, 1, 128, 1000, true, 8},
      {K::splitk, T::f16, 128, 2, 2, 1, 1000, false, 0},
      {K::splitk, T::bf16, 128, 1, 1, 7, 1, true, 3},     // query 0..5 see no key
      {K::splitk, T::f32, 256, 1, 1, 1000, 128, true, 3}, // 4 kv tiles in 3 splits: one empty
      {K::splitk, T::f16, 256, 1, 1, 65, 64, false, 1},
      {K::splitk, T::bf16, 256, 2, 1, 1, 1000, true, 0},
      // FA-2 (tensor cores: fp16 and bf16, head dims 64 and 128): every dtype x head dim, sequences
      // off the 64-row tiles, causal with rows that see no key.
      {K::fa2, T::f16, 64, 1, 2, 65, 7, true, 0},  // queries 0..57 see no key
      {K::fa2, T::bf16, 64, 2, 1, 200, 333, true, 0},
      {K::fa2, T::f16, 128, 1, 1, 130, 1000, false, 0},
      {K::fa2, T::bf16, 128, 1, 2, 7, 64, true, 0},
      {K::fa2, T::bf16, 64, 1, 1, 1, 300, false, 0},
      // Split-K 2 (FA-2's tiles: 128 query rows at head dim 64, 64 at 128; 64 keys): every dtype x
      // head dim, query counts off the tiles, one split, more splits than kv tiles, an empty split,
      // the heuristic.
      {K::splitk2, T::f16, 64, 1, 2, 200, 333, true, 3},
      {K::splitk2, T::bf16, 64, 1, 1, 65, 1000, false, 1},
      {K::splitk2, T::bf16, 128, 1, 2, 130, 200, true, 8},  // 4 kv tiles: 4 empty splits
      {K::splitk2, T::f16, 128, 2, 1, 7, 700, false, 0},
      {K::splitk2, T::bf16, 64, 1, 1, 300, 250, true, 3},   // 4 kv tiles in 3 splits: one empty; rows see none
  };
  // GQA / MQA, sliding windows and the logit softcap, on both kernels: query heads on fewer kv
  // heads (MQA, and the decode shape 32 on 8 at a small size), windows left-only and two-sided,
  // with and without causal (and rows or whole query tiles that see no key), softcaps small
  // enough to change the scores.
  struct ModelRow {
    Row row;
    int64_t heads_kv, window_left, window_right;
    double softcap;
  };
  const ModelRow model_rows[] = {
      {{K::fa1, T::f16, 64, 1, 4, 65, 200, true, 0}, 2, -1, -1, 0.0},      // GQA 4 on 2
      {{K::fa1, T::bf16, 32, 2, 3, 100, 90, false, 0}, 1, -1, -1, 0.0},    // MQA
      {{K::fa1, T::f32, 64, 1, 2, 200, 300, true, 0}, 0, 70, -1, 0.0},     // left window + causal
      {{K::fa1, T::f16, 128, 1, 1, 130, 140, false, 0}, 0, 32, 16, 0.0},   // two-sided window
      {{K::fa1, T::f32, 32, 1, 2, 100, 70, false, 0}, 0, 0, 0, 0.0},       // the diagonal only
      {{K::fa1, T::bf16, 64, 1, 2, 64, 200, false, 0}, 0, -1, -1, 5.0},    // softcap
      {{K::fa1, T::f16, 256, 1, 4, 70, 150, true, 0}, 2, 40, -1, 30.0},    // all of them
      {{K::fa2, T::f16, 64, 1, 4, 65, 200, true, 0}, 2, -1, -1, 0.0},      // GQA 4 on 2
      {{K::fa2, T::bf16, 128, 2, 3, 100, 90, false, 0}, 1, -1, -1, 0.0},   // MQA
      {{K::fa2, T::f16, 64, 1, 2, 200, 300, true, 0}, 0, 70, -1, 0.0},     // left window + causal
      {{K::fa2, T::bf16, 128, 1, 1, 130, 140, false, 0}, 0, 32, 16, 0.0},  // two-sided window
      {{K::fa2, T::bf16, 64, 1, 2, 64, 200, false, 0}, 0, -1, -1, 5.0},    // softcap
      {{K::fa2, T::f16, 128, 1, 4, 70, 150, true, 0}, 2, 40, -1, 30.0},    // all of them
      {{K::splitk, T::bf16, 128, 2, 32, 1, 1000, false, 0}, 8, -1, -1, 0.0},  // decode 32 on 8
      {{K::splitk, T::f16, 64, 1, 4, 1, 700, true, 3}, 1, -1, -1, 0.0},       // MQA decode
      {{K::splitk, T::f32, 64, 1, 2, 7, 1000, true, 4}, 0, 100, -1, 0.0},     // left window: tiles skipped
      {{K::splitk, T::f16, 32, 1, 1, 65, 300, false, 3}, 0, 50, 30, 0.0},     // two-sided window
      {{K::splitk, T::bf16, 64, 1, 2, 40, 30, false, 5}, 0, -1, 3, 0.0},      // right only: rows see none
      {{K::splitk, T::f32, 256, 1, 1, 13, 500, false, 2}, 0, -1, -1, 2.0},    // softcap
      {{K::splitk, T::bf16, 128, 1, 4, 1, 2000, true, 0}, 2, 256, 0, 30.0},   // all of them, decode
      {{K::splitk2, T::f16, 64, 1, 4, 65, 200, true, 2}, 2, -1, -1, 0.0},      // GQA 4 on 2
      {{K::splitk2, T::bf16, 128, 1, 2, 200, 300, true, 3}, 0, 70, -1, 0.0},   // left window + causal
      {{K::splitk2, T::f16, 64, 1, 1, 130, 400, false, 4}, 0, 32, 16, 0.0},    // two-sided window
      {{K::splitk2, T::bf16, 64, 1, 2, 64, 200, false, 2}, 0, -1, -1, 5.0},    // softcap
      {{K::splitk2, T::f16, 128, 1, 4, 70, 150, true, 3}, 2, 40, -1, 30.0},    // all of them
  };
  std::vector<AttentionConfig> out;
  const auto add_model_rows = [&] {
    for (const ModelRow& m : model_rows) {
      AttentionConfig c;
      c.kernel = m.row.kernel;
      c.dtype = m.row.dtype;
      c.head_dim = m.row.d;
      c.batch = m.row.batch;
      c.heads = m.row.heads;
      c.heads_kv = m.heads_kv;
      c.seq_q = m.row.sq;
      c.seq_kv = m.row.skv;
      c.causal = m.row.causal;
      c.window_left = m.window_left;
      c.window_right = m.window_right;
      c.softcap = m.softcap;
      c.num_splits = m.row.splits;
      out.push_back(c);
    }
  };
  for (const Row& r : rows) {
    AttentionConfig c;
    c.kernel = r.kernel;
    c.dtype = r.dtype;
    c.head_dim = r.d;
    c.batch = r.batch;
    c.heads = r.heads;
    c.seq_q = r.sq;
    c.seq_kv = r.skv;
    c.causal = r.causal;
    c.num_splits = r.splits;
    out.push_back(c);
  }
  add_model_rows();
  return out;
}

std::string case_name(const AttentionConfig& c) {
  std::string s = std::string(to_string(c.kernel)) + "_" + std::string(to_string(c.dtype)) + "_d" +
                  std::to_string(c.head_dim) + "_b" + std::to_string(c.batch) + "h" +
                  std::to_string(c.heads) + "_q" + std::to_string(c.seq_q) + "_kv" +
                  std::to_string(c.seq_kv) + (c.causal ? "_causal" : "");
  if (c.kv_heads() != c.heads) s += "_hkv" + std::to_string(c.kv_heads());
  const auto bound = [](int64_t b) { return b < 0 ? std::string("inf") : std::to_string(b); };
  if (c.has_window()) s += "_window" + bound(c.window_left) + "_" + bound(c.window_right);
  if (c.softcap > 0) s += "_softcap" + std::to_string(static_cast<int>(c.softcap));
  if (splits_kv(c.kernel))
    s += c.num_splits ? "_splits" + std::to_string(c.num_splits) : "_heuristic";
  return s;
}

uint64_t seed_of(const AttentionConfig& c) {  // FNV-1a of the name: the same on every platform
  uint64_t h = 0xcbf29ce484222325ull;
  for (char ch : case_name(c)) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  return h;
}

}  // namespace ts::test
