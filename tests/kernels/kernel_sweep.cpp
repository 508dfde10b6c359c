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
  };
  std::vector<AttentionConfig> out;
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
  return out;
}

std::string case_name(const AttentionConfig& c) {
  std::string s = std::string(to_string(c.kernel)) + "_" + std::string(to_string(c.dtype)) + "_d" +
                  std::to_string(c.head_dim) + "_b" + std::to_string(c.batch) + "h" +
                  std::to_string(c.heads) + "_q" + std::to_string(c.seq_q) + "_kv" +
                  std::to_string(c.seq_kv) + (c.causal ? "_causal" : "");
  if (c.kernel == KernelKind::splitk)
    s += c.num_splits ? "_splits" + std::to_string(c.num_splits) : "_heuristic";
  return s;
}

uint64_t seed_of(const AttentionConfig& c) {  // FNV-1a of the name: the same on every platform
  uint64_t h = 0xcbf29ce484222325ull;
  for (char ch : case_name(c)) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  return h;
}

}  // namespace ts::test
