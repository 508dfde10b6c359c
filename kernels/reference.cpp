#include "kernels/reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <mutex>
#include <numbers>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "base/config_error.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ts {

// One kv head's keys [first, first + count), exact in float32 (the loops widen them to float64
// as they load them), laid out for the two loops that read them: K in groups of kScoreKeys
// keys, each group transposed ([head_dim][kScoreKeys], the last one padded with zeros), so that
// a row's scores against a group are kScoreKeys independent sums side by side; V row-major
// [key - first][head_dim].
// V is read through v_rows: the converted copy in `v`, or float32 values read in place where the
// inputs hold them, kept alive by `owner` (ReferenceInputs' inputs_owner): a decode trace's V is
// half a GiB of fresh pages to copy for nothing.
struct ReferenceKeys {
  int64_t first = 0, count = 0;
  int32_t head_dim = 0;
  std::vector<float> k_groups, v;
  const float* v_rows = nullptr;       // [key - first][head_dim]
  std::shared_ptr<const void> owner;   // keeps v_rows alive when it is not v's
  size_t bytes() const { return sizeof(*this) + (k_groups.capacity() + v.capacity()) * sizeof(float); }
};

// What the range computations read about a row block's rows.
struct RowBlockReference::Rows {
  int32_t count = 0, head_dim = 0;
  std::vector<double> q;                         // [row][c], times the scale
  std::vector<AttentionSpec::KeySpan> visible;   // the keys each row sees
  std::vector<int64_t> diagonal;                 // i + offset: ALiBi's distance is |diagonal - j|
  double softcap = 0.0;                          // 0: off
  double alibi_slope = 0.0;
  bool alibi = false;
  size_t bytes() const {
    return sizeof(*this) + q.capacity() * sizeof(double) +
           visible.capacity() * sizeof(AttentionSpec::KeySpan) + diagonal.capacity() * sizeof(int64_t);
  }
};

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Keys whose scores one row computes side by side (a group of transposed K: 16 sums held in
// vector registers, each summed over the head dim in order).
constexpr int kScoreKeys = 16;
// Bytes of V one pass of the weighted sums reads for every row of the block: a chunk that
// stays in the L1 cache from one row to the next (64 KiB chunks, from L2, made the weighted
// sums L2-bound and 30% slower).
constexpr int64_t kValueChunkBytes = 16 << 10;
// Rows per row block when computing the whole output.
constexpr int32_t kOutputRows = 64;

unsigned worker_count(unsigned requested) {
  return requested ? requested : std::max(1u, std::thread::hardware_concurrency());
}

// Runs body(i) for i in [0, n) on `workers` threads; the first exception stops the loop and is
// rethrown in the caller's thread.
template <typename Body>
void parallel_for(int64_t n, unsigned workers, Body&& body) {
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&] {
    try {
      for (int64_t i; (i = next.fetch_add(1)) < n;) body(i);
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(n);
    }
  };
  const int64_t w = std::min<int64_t>(worker_count(workers), std::max<int64_t>(n, 1));
  std::vector<std::thread> threads;
  for (int64_t t = 1; t < w; ++t) threads.emplace_back(run);
  run();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

std::string pair_text(int64_t a, int64_t b) { return "(" + std::to_string(a) + ", " + std::to_string(b) + ")"; }

RefState empty_state(int32_t rows, int32_t head_dim) {
  RefState s;
  s.rows = rows;
  s.head_dim = head_dim;
  s.m.assign(static_cast<size_t>(rows), kNegInf);
  s.l.assign(static_cast<size_t>(rows), 0.0);
  s.o.assign(static_cast<size_t>(rows) * static_cast<size_t>(head_dim), 0.0);
  return s;
}

// Merges the unnormalised row state (bm, bl, bo) into (am, al, ao).
void merge_row(double& am, double& al, double* ao, double bm, double bl, const double* bo, int32_t d) {
  const double mx = std::max(am, bm);
  if (mx == kNegInf) return;  // neither side has seen a key: stays (-inf, 0, 0)
  const double fa = std::exp(am - mx);
  const double fb = std::exp(bm - mx);
  am = mx;
  al = al * fa + bl * fb;
  for (int32_t c = 0; c < d; ++c) ao[c] = ao[c] * fa + bo[c] * fb;
}

// The two loops that hold the reference's arithmetic, for one or two rows at a time: the scores
// of a group of kScoreKeys keys, and the weighted sum of V. Written plainly (any CPU), and with
// AVX2 and FMA (chosen at run time; TILESCOPE_NO_AVX2=1 in the environment forces the plain loops, so
// that tests check both): there the two rows share each load of K or V and the sums stay in
// registers, which GCC's vectoriser did not achieve with the plain loops. Keys and values are
// stored as float32 (exact: inputs are fp32, fp16 or bf16) and widened as they are loaded: half
// the memory traffic of doubles, which bounded row blocks of few rows. Every element is one sum
// in a fixed order, each term a fused multiply-add written out (std::fma, _mm256_fmadd_pd; the
// compiler contracts nothing else: kernels/CMakeLists.txt), so both versions give the same bits.

// s[r * kScoreKeys + j] = sum over c of q_r[c] * k[c][j] (q_r = q + r * q_stride), in c's order.
void scores_plain(const double* q, size_t q_stride, int rows, const float* k_group, int32_t d, double* s) {
  for (int r = 0; r < rows; ++r) {
    double acc[kScoreKeys] = {};
    const double* qr = q + static_cast<size_t>(r) * q_stride;
    for (int32_t c = 0; c < d; ++c) {
      const float* k = k_group + static_cast<size_t>(c) * kScoreKeys;
      for (int j = 0; j < kScoreKeys; ++j) acc[j] = std::fma(qr[c], static_cast<double>(k[j]), acc[j]);
    }
    std::copy_n(acc, kScoreKeys, s + static_cast<size_t>(r) * kScoreKeys);
  }
}

// o_r[c] += sum over keys j in [0, n) of p_r[j] * v[j][c] for the columns [c0, d) (p_r = p + r *
// p_stride, o_r = o + r * o_stride), each sum in j's order.
void weighted_columns_plain(const double* p, size_t p_stride, int rows, const float* v, int64_t n, int32_t d,
                            int32_t c0, double* o, size_t o_stride) {
  for (int r = 0; r < rows; ++r) {
    const double* pr = p + static_cast<size_t>(r) * p_stride;
    double* orow = o + static_cast<size_t>(r) * o_stride;
    for (int64_t j = 0; j < n; ++j) {
      const float* vj = v + j * d;
      for (int32_t c = c0; c < d; ++c) orow[c] = std::fma(pr[j], static_cast<double>(vj[c]), orow[c]);
    }
  }
}

void weighted_sum_plain(const double* p, size_t p_stride, int rows, const float* v, int64_t n, int32_t d, double* o,
                        size_t o_stride) {
  weighted_columns_plain(p, p_stride, rows, v, n, d, 0, o, o_stride);
}

struct Loops {
  void (*scores)(const double* q, size_t q_stride, int rows, const float* k_group, int32_t d, double* s);
  void (*weighted_sum)(const double* p, size_t p_stride, int rows, const float* v, int64_t n, int32_t d, double* o,
                       size_t o_stride);
};

#if defined(__x86_64__)
#define TS_REFERENCE_AVX2 1

template <int Rows>
__attribute__((target("avx2,fma"))) inline void scores_avx2_rows(const double* q, size_t q_stride, const float* k_group,
                                                             int32_t d, double* s) {
  constexpr int kVecs = kScoreKeys / 4;
  __m256d acc[Rows][kVecs];
  for (int r = 0; r < Rows; ++r)
    for (int k = 0; k < kVecs; ++k) acc[r][k] = _mm256_setzero_pd();
  for (int32_t c = 0; c < d; ++c) {
    const float* kc = k_group + static_cast<size_t>(c) * kScoreKeys;
    __m256d keys[kVecs];
    for (int k = 0; k < kVecs; ++k) keys[k] = _mm256_cvtps_pd(_mm_loadu_ps(kc + 4 * k));
    for (int r = 0; r < Rows; ++r) {
      const __m256d qc = _mm256_broadcast_sd(q + static_cast<size_t>(r) * q_stride + static_cast<size_t>(c));
      for (int k = 0; k < kVecs; ++k) acc[r][k] = _mm256_fmadd_pd(qc, keys[k], acc[r][k]);
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int k = 0; k < kVecs; ++k) _mm256_storeu_pd(s + static_cast<size_t>(r) * kScoreKeys + 4 * k, acc[r][k]);
}

__attribute__((target("avx2,fma"))) void scores_avx2(const double* q, size_t q_stride, int rows, const float* k_group,
                                                 int32_t d, double* s) {
  if (rows == 2) scores_avx2_rows<2>(q, q_stride, k_group, d, s);
  else scores_avx2_rows<1>(q, q_stride, k_group, d, s);
}

// The columns from c0 on, Vecs vectors of 4 columns per row at a time; returns the first column
// left (fewer than 4 * Vecs).
template <int Rows, int Vecs>
__attribute__((target("avx2,fma"))) inline int32_t weighted_columns_avx2(const double* p, size_t p_stride, const float* v,
                                                                     int64_t n, int32_t d, int32_t c0, double* o,
                                                                     size_t o_stride) {
  int32_t c = c0;
  for (; c + 4 * Vecs <= d; c += 4 * Vecs) {
    __m256d acc[Rows][Vecs];
    for (int r = 0; r < Rows; ++r)
      for (int k = 0; k < Vecs; ++k) acc[r][k] = _mm256_loadu_pd(o + r * o_stride + static_cast<size_t>(c + 4 * k));
    for (int64_t j = 0; j < n; ++j) {
      const float* vj = v + j * d + c;
      __m256d values[Vecs];
      for (int k = 0; k < Vecs; ++k) values[k] = _mm256_cvtps_pd(_mm_loadu_ps(vj + 4 * k));
      for (int r = 0; r < Rows; ++r) {
        const __m256d pj = _mm256_broadcast_sd(p + r * p_stride + static_cast<size_t>(j));
        for (int k = 0; k < Vecs; ++k) acc[r][k] = _mm256_fmadd_pd(pj, values[k], acc[r][k]);
      }
    }
    for (int r = 0; r < Rows; ++r)
      for (int k = 0; k < Vecs; ++k) _mm256_storeu_pd(o + r * o_stride + static_cast<size_t>(c + 4 * k), acc[r][k]);
  }
  return c;
}

__attribute__((target("avx2,fma"))) void weighted_sum_avx2(const double* p, size_t p_stride, int rows, const float* v,
                                                       int64_t n, int32_t d, double* o, size_t o_stride) {
  int32_t c = 0;
  if (rows == 2) {
    c = weighted_columns_avx2<2, 4>(p, p_stride, v, n, d, c, o, o_stride);
    c = weighted_columns_avx2<2, 1>(p, p_stride, v, n, d, c, o, o_stride);
  } else {
    c = weighted_columns_avx2<1, 8>(p, p_stride, v, n, d, c, o, o_stride);
    c = weighted_columns_avx2<1, 1>(p, p_stride, v, n, d, c, o, o_stride);
  }
  weighted_columns_plain(p, p_stride, rows, v, n, d, c, o, o_stride);  // the last columns of an odd head dim
}
#endif

const Loops& loops() {
  static const Loops chosen = [] {
#ifdef TS_REFERENCE_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !std::getenv("TILESCOPE_NO_AVX2"))
      return Loops{scores_avx2, weighted_sum_avx2};
#endif
    return Loops{scores_plain, weighted_sum_plain};
  }();
  return chosen;
}

// Buffers of one thread's range computations, reused from range to range.
struct Scratch {
  std::vector<double> scores;        // [row][key - lo]: scores, then exp(s - m)
  std::vector<int64_t> from, to;     // per row: the keys [from, to) it sees in the range
};

// The unnormalised states of every row over the keys of [begin, end) it sees: m, l [rows] and
// o [rows][head_dim], overwritten. Each row's scores are computed once, its max taken, then
// exp(s - m) summed and V weighted in key order.
void range_states(const RowBlockReference::Rows& rows, const ReferenceKeys& keys, int64_t begin, int64_t end,
                  Scratch& s, double* m, double* l, double* o) {
  const int32_t n = rows.count, d = rows.head_dim;
  std::fill(m, m + n, kNegInf);
  std::fill(l, l + n, 0.0);
  std::fill(o, o + static_cast<size_t>(n) * static_cast<size_t>(d), 0.0);
  s.from.resize(static_cast<size_t>(n));
  s.to.resize(static_cast<size_t>(n));
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (int32_t r = 0; r < n; ++r) {
    int64_t f = std::max(begin, rows.visible[static_cast<size_t>(r)].begin);
    int64_t t = std::min(end, rows.visible[static_cast<size_t>(r)].end);
    if (f < t) {
      lo = std::min(lo, f);
      hi = std::max(hi, t);
    } else {
      f = t = 0;
    }
    s.from[static_cast<size_t>(r)] = f;
    s.to[static_cast<size_t>(r)] = t;
  }
  if (lo >= hi) return;
  if (lo < keys.first || hi > keys.first + keys.count)
    throw std::logic_error("reference: keys [" + std::to_string(lo) + ", " + std::to_string(hi) +
                           ") are outside the converted keys");
  const int64_t width = hi - lo;
  s.scores.resize(static_cast<size_t>(n) * static_cast<size_t>(width));
  double* const scores = s.scores.data();
  auto row_scores = [&](int32_t r) { return scores + static_cast<size_t>(r) * static_cast<size_t>(width); };

  // Scores, a group of keys at a time for every row that sees one of them (the group stays in
  // cache from row to row).
  const int64_t g_begin = (lo - keys.first) / kScoreKeys;
  const int64_t g_end = (hi - keys.first + kScoreKeys - 1) / kScoreKeys;
  const Loops& loop = loops();
  double group[2 * kScoreKeys];
  for (int64_t g = g_begin; g < g_end; ++g) {
    const int64_t key0 = keys.first + g * kScoreKeys;
    const float* k_group = keys.k_groups.data() + static_cast<size_t>(g) * static_cast<size_t>(d) * kScoreKeys;
    auto sees_group = [&](int32_t r) {
      return std::max(s.from[static_cast<size_t>(r)], key0) < std::min(s.to[static_cast<size_t>(r)], key0 + kScoreKeys);
    };
    for (int32_t r = 0; r < n;) {
      if (!sees_group(r)) {
        ++r;
        continue;
      }
      const int pair = r + 1 < n && sees_group(r + 1) ? 2 : 1;
      loop.scores(rows.q.data() + static_cast<size_t>(r) * static_cast<size_t>(d), static_cast<size_t>(d), pair,
                  k_group, d, group);
      for (int k = 0; k < pair; ++k, ++r) {
        const int64_t f = std::max(s.from[static_cast<size_t>(r)], key0);
        const int64_t t = std::min(s.to[static_cast<size_t>(r)], key0 + kScoreKeys);
        double* out = row_scores(r);
        for (int64_t j = f; j < t; ++j) out[j - lo] = group[k * kScoreKeys + (j - key0)];
      }
    }
  }

  // Softcap, then ALiBi (the spec's order); the max; exp(s - m) in place and its sum.
  for (int32_t r = 0; r < n; ++r) {
    const int64_t f = s.from[static_cast<size_t>(r)], t = s.to[static_cast<size_t>(r)];
    if (f >= t) continue;
    double* x = row_scores(r) + (f - lo);
    const int64_t count = t - f;
    if (rows.softcap > 0.0) {
      const double cap = rows.softcap;
      for (int64_t k = 0; k < count; ++k) x[k] = cap * std::tanh(x[k] / cap);
    }
    if (rows.alibi) {
      const int64_t diagonal = rows.diagonal[static_cast<size_t>(r)];
      for (int64_t k = 0; k < count; ++k)
        x[k] -= rows.alibi_slope * static_cast<double>(std::abs(diagonal - (f + k)));
    }
    double mx = kNegInf;
    for (int64_t k = 0; k < count; ++k) mx = std::max(mx, x[k]);
    double sum = 0.0;
    for (int64_t k = 0; k < count; ++k) {
      x[k] = std::exp(x[k] - mx);
      sum += x[k];
    }
    m[r] = mx;
    l[r] = sum;
  }

  // O = sum of exp(s - m) v, a chunk of keys at a time for every row (the chunk of V stays in
  // cache from row to row).
  const int64_t chunk = std::max<int64_t>(1, kValueChunkBytes / (d * static_cast<int64_t>(sizeof(float))));
  for (int64_t c0 = lo; c0 < hi; c0 += chunk) {
    const int64_t c1 = std::min(hi, c0 + chunk);
    auto keys_of = [&](int32_t r) {
      return std::pair{std::max(s.from[static_cast<size_t>(r)], c0), std::min(s.to[static_cast<size_t>(r)], c1)};
    };
    for (int32_t r = 0; r < n;) {
      const auto [f, t] = keys_of(r);
      if (f >= t) {
        ++r;
        continue;
      }
      const int pair = r + 1 < n && keys_of(r + 1) == std::pair{f, t} ? 2 : 1;  // rows that see the same keys
      loop.weighted_sum(row_scores(r) + (f - lo), static_cast<size_t>(width), pair,
                        keys.v_rows + static_cast<size_t>(f - keys.first) * static_cast<size_t>(d), t - f, d,
                        o + static_cast<size_t>(r) * static_cast<size_t>(d), static_cast<size_t>(d));
      r += pair;
    }
  }
}

// Keys [first, first + count) of kv pair `kv_index` converted (see ReferenceKeys); float32
// values read in place when `owner` keeps them alive.
std::shared_ptr<const ReferenceKeys> convert_keys(const HostTensor& k, const HostTensor& v, int64_t kv_index,
                                                  int64_t seq_kv, int32_t d, int64_t first, int64_t count,
                                                  const std::shared_ptr<const void>& owner = nullptr) {
  auto keys = std::make_shared<ReferenceKeys>();
  keys->first = first;
  keys->count = count;
  keys->head_dim = d;
  if (count <= 0) return keys;
  const int64_t groups = (count + kScoreKeys - 1) / kScoreKeys;
  const size_t dd = static_cast<size_t>(d);
  keys->k_groups.assign(static_cast<size_t>(groups) * dd * kScoreKeys, 0.0f);
  const int64_t base = (kv_index * seq_kv + first) * d;
  if (owner && v.dtype == DType::f32) {
    keys->v_rows = v.data_as<float>() + base;
    keys->owner = owner;
  } else {
    keys->v.resize(static_cast<size_t>(count) * dd);
    v.copy_floats(base, count * d, keys->v.data());
    keys->v_rows = keys->v.data();
  }
  std::vector<float> rows(dd * kScoreKeys);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t n = std::min<int64_t>(kScoreKeys, count - g * kScoreKeys);
    k.copy_floats(base + g * kScoreKeys * d, n * d, rows.data());
    float* out = keys->k_groups.data() + static_cast<size_t>(g) * dd * kScoreKeys;
    for (int64_t j = 0; j < n; ++j)
      for (size_t c = 0; c < dd; ++c)
        out[c * kScoreKeys + static_cast<size_t>(j)] = rows[static_cast<size_t>(j) * dd + c];
  }
  return keys;
}

void check_block(const AttentionSpec& spec, const RowBlock& b) {
  if (b.batch < 0 || b.batch >= spec.batch || b.head < 0 || b.head >= spec.heads_q || b.rows < 1 || b.q_begin < 0 ||
      int64_t{b.q_begin} + b.rows > spec.seq_q)
    throw std::invalid_argument("row block (batch " + std::to_string(b.batch) + ", head " + std::to_string(b.head) +
                                ", rows [" + std::to_string(b.q_begin) + ", " +
                                std::to_string(int64_t{b.q_begin} + b.rows) + ")) is outside the attention (" +
                                std::to_string(spec.batch) + " batches, " + std::to_string(spec.heads_q) +
                                " query heads, " + std::to_string(spec.seq_q) + " query rows; at least one row)");
}

int32_t query_index(const HeadInputs& inputs, const RowBlock& b) {
  const int32_t i = inputs.q_index(b.batch, b.head);
  if (i < 0)
    throw std::invalid_argument("the inputs hold no query rows of (batch, head) " + pair_text(b.batch, b.head));
  return i;
}

int32_t key_index(const AttentionSpec& spec, const HeadInputs& inputs, const RowBlock& b) {
  const int64_t kv_head = spec.kv_head_of(b.head);
  const int32_t i = inputs.kv_index(b.batch, kv_head);
  if (i < 0)
    throw std::invalid_argument("the inputs hold no keys of (batch, kv head) " + pair_text(b.batch, kv_head) +
                                ", which query head " + std::to_string(b.head) + " reads");
  return i;
}

std::unique_ptr<RowBlockReference::Rows> make_rows(const AttentionSpec& spec, const HostTensor& q, int32_t q_index,
                                                   const RowBlock& b) {
  auto rows = std::make_unique<RowBlockReference::Rows>();
  rows->count = b.rows;
  rows->head_dim = static_cast<int32_t>(spec.head_dim);
  const size_t n = static_cast<size_t>(b.rows), d = static_cast<size_t>(spec.head_dim);
  rows->q.resize(n * d);
  q.copy_doubles((int64_t{q_index} * spec.seq_q + b.q_begin) * spec.head_dim, b.rows * spec.head_dim, rows->q.data());
  const double scale = spec.effective_scale();
  for (double& x : rows->q) x *= scale;
  rows->visible.resize(n);
  rows->diagonal.resize(n);
  for (int32_t r = 0; r < b.rows; ++r) {
    const int64_t i = int64_t{b.q_begin} + r;
    rows->visible[static_cast<size_t>(r)] = spec.visible_keys(b.batch, i);
    rows->diagonal[static_cast<size_t>(r)] = i + spec.offset(b.batch);
  }
  rows->softcap = spec.softcap;
  rows->alibi = !spec.alibi_slopes.empty();
  if (rows->alibi) rows->alibi_slope = spec.alibi_slopes[static_cast<size_t>(b.head)];
  return rows;
}

// The keys any of the rows sees: [lo, hi), empty when none sees one.
std::pair<int64_t, int64_t> seen_keys(const RowBlockReference::Rows& rows) {
  int64_t lo = 0, hi = 0;
  bool any = false;
  for (const auto& span : rows.visible) {
    if (span.empty()) continue;
    lo = any ? std::min(lo, span.begin) : span.begin;
    hi = any ? std::max(hi, span.end) : span.end;
    any = true;
  }
  return {lo, hi};
}

// The union of `ranges` clipped to [0, seq_kv], as sorted, disjoint, non-adjacent ranges.
std::vector<std::pair<int64_t, int64_t>> key_union(std::span<const KeyRange> ranges, int64_t seq_kv) {
  std::vector<std::pair<int64_t, int64_t>> in;
  for (const KeyRange& r : ranges) {
    const int64_t a = std::clamp<int64_t>(r.begin, 0, seq_kv), b = std::clamp<int64_t>(r.end, 0, seq_kv);
    if (a < b) in.emplace_back(a, b);
  }
  std::sort(in.begin(), in.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& r : in) {
    if (!out.empty() && r.first <= out.back().second) out.back().second = std::max(out.back().second, r.second);
    else out.push_back(r);
  }
  return out;
}

}  // namespace

std::vector<int64_t> normalized_boundaries(const AttentionSpec& spec, std::vector<int64_t> boundaries) {
  for (int64_t& x : boundaries) x = std::clamp<int64_t>(x, 0, spec.seq_kv);
  boundaries.push_back(0);
  boundaries.push_back(spec.seq_kv);
  std::sort(boundaries.begin(), boundaries.end());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()), boundaries.end());
  return boundaries;
}

// Builds RowBlockReference (a friend: its constructor is private).
struct RowBlockBuilder {
  // The pieces' states computed here, on the CPU.
  static std::shared_ptr<const RowBlockReference> build(const AttentionSpec& spec, const RowBlock& block,
                                                        std::unique_ptr<RowBlockReference::Rows> rows,
                                                        std::shared_ptr<const ReferenceKeys> keys, bool owns_keys,
                                                        std::vector<int64_t> boundaries) {
    boundaries = normalized_boundaries(spec, std::move(boundaries));
    PieceStates states = piece_states(*rows, *keys, boundaries);
    return assemble(spec, block, std::move(rows), std::move(keys), owns_keys, std::move(boundaries),
                    std::move(states));
  }

  // The states of every row over each piece between the (normalized) boundaries.
  static PieceStates piece_states(const RowBlockReference::Rows& rows, const ReferenceKeys& keys,
                                  const std::vector<int64_t>& boundaries) {
    const size_t pieces = boundaries.size() - 1;
    const size_t n = static_cast<size_t>(rows.count), d = static_cast<size_t>(rows.head_dim);
    PieceStates states;
    states.m.resize(pieces * n);
    states.l.resize(pieces * n);
    states.o.resize(pieces * n * d);
    Scratch scratch;
    for (size_t p = 0; p < pieces; ++p)
      range_states(rows, keys, boundaries[p], boundaries[p + 1], scratch, states.m.data() + p * n,
                   states.l.data() + p * n, states.o.data() + p * n * d);
    return states;
  }

  // The pieces' states given (normalized boundaries), the prefixes merged here.
  static std::shared_ptr<const RowBlockReference> assemble(const AttentionSpec& spec, const RowBlock& block,
                                                           std::unique_ptr<RowBlockReference::Rows> rows,
                                                           std::shared_ptr<const ReferenceKeys> keys, bool owns_keys,
                                                           std::vector<int64_t> boundaries, PieceStates states) {
    std::shared_ptr<RowBlockReference> ref(new RowBlockReference());
    ref->block_ = block;
    ref->head_dim_ = static_cast<int32_t>(spec.head_dim);
    ref->boundaries_ = std::move(boundaries);
    const size_t pieces = ref->boundaries_.size() - 1;
    const size_t n = static_cast<size_t>(block.rows), d = static_cast<size_t>(spec.head_dim);
    ref->piece_m_ = std::move(states.m);
    ref->piece_l_ = std::move(states.l);
    ref->piece_o_ = std::move(states.o);
    ref->prefix_m_ = ref->piece_m_;
    ref->prefix_l_ = ref->piece_l_;
    ref->prefix_o_ = ref->piece_o_;
    for (size_t p = 1; p < pieces; ++p)
      for (size_t r = 0; r < n; ++r) {
        const size_t at = p * n + r, before = (p - 1) * n + r;
        double* o = ref->prefix_o_.data() + at * d;
        std::copy_n(ref->prefix_o_.data() + before * d, d, o);  // the prefix before, then this piece merged in
        double m = ref->prefix_m_[before], l = ref->prefix_l_[before];
        merge_row(m, l, o, ref->piece_m_[at], ref->piece_l_[at], ref->piece_o_.data() + at * d,
                  static_cast<int32_t>(d));
        ref->prefix_m_[at] = m;
        ref->prefix_l_[at] = l;
      }
    ref->rows_ = std::move(rows);
    ref->keys_ = std::move(keys);
    ref->owns_keys_ = owns_keys;
    return ref;
  }
};

void merge_states(RefState& a, const RefState& b) {
  if (a.rows != b.rows || a.head_dim != b.head_dim || a.normalized || b.normalized ||
      a.m.size() < static_cast<size_t>(a.rows) || b.m.size() < static_cast<size_t>(b.rows))
    throw std::invalid_argument("merge_states: the states must be unnormalised and of the same shape (" +
                                std::to_string(a.rows) + " x " + std::to_string(a.head_dim) + " and " +
                                std::to_string(b.rows) + " x " + std::to_string(b.head_dim) + ")");
  const int32_t d = a.head_dim;
  for (int32_t r = 0; r < a.rows; ++r)
    merge_row(a.m[static_cast<size_t>(r)], a.l[static_cast<size_t>(r)], a.o.data() + static_cast<size_t>(r) * d,
              b.m[static_cast<size_t>(r)], b.l[static_cast<size_t>(r)], b.o.data() + static_cast<size_t>(r) * d, d);
}

RefState express(const RefState& canonical, int32_t bits, double scale) {
  using namespace tilescope;
  if ((bits & ~kConventionMask) != 0)
    throw std::invalid_argument("convention " + std::to_string(bits) + " has bits outside the known ones (" +
                                std::to_string(kConventionMask) + ")");
  const bool normalize = (bits & kNormalized) != 0;
  const bool base2 = (bits & kLogBase2) != 0;
  const bool unscaled = (bits & kUnscaledMax) != 0 && !normalize;
  if (canonical.normalized && !normalize)
    throw std::invalid_argument("a normalised state (an output) has no unnormalised form");
  if (unscaled && !(std::isfinite(scale) && scale > 0.0))
    throw std::invalid_argument("kUnscaledMax needs the softmax scale (finite, > 0; got " + std::to_string(scale) +
                                ")");
  RefState out = canonical;
  out.normalized = normalize;
  const size_t d = static_cast<size_t>(canonical.head_dim);
  for (size_t r = 0; r < static_cast<size_t>(canonical.rows); ++r) {
    double& m = out.m[r];
    double& l = out.l[r];
    double* o = out.o.data() + r * d;
    if (m == kNegInf || l == 0.0) {  // no key seen: -inf / 0 / 0 in every convention
      m = kNegInf;
      l = 0.0;
      std::fill(o, o + d, 0.0);
      continue;
    }
    if (normalize && !canonical.normalized) {
      for (size_t c = 0; c < d; ++c) o[c] /= l;
      m += std::log(l);
      l = 1.0;
    }
    if (base2) m *= std::numbers::log2e;
    if (unscaled) m /= scale;
  }
  return out;
}

void check_head_inputs(const AttentionSpec& spec, const HeadInputs& in) {
  auto check_tensor = [&](const char* name, const HostTensor& t, size_t pairs, int64_t seq) {
    const std::vector<int64_t> want{static_cast<int64_t>(pairs), seq, spec.head_dim};
    if (!(t.shape == want || (pairs == 0 && t.numel() == 0)))
      throw std::invalid_argument(std::string("inputs.") + name + " has shape " + shape_string(t.shape) +
                                  "; the attention needs " + shape_string(want));
    if (t.dtype != spec.dtype)
      throw std::invalid_argument(std::string("inputs.") + name + " is " + std::string(to_string(t.dtype)) +
                                  "; the attention is " + std::string(to_string(spec.dtype)));
    if (t.bytes.size() != static_cast<size_t>(t.numel()) * t.element_size())
      throw std::invalid_argument(std::string("inputs.") + name + " holds " + std::to_string(t.bytes.size()) +
                                  " bytes; its shape needs " +
                                  std::to_string(static_cast<size_t>(t.numel()) * t.element_size()));
  };
  check_tensor("q", in.q, in.q_pairs.size(), spec.seq_q);
  check_tensor("k", in.k, in.kv_pairs.size(), spec.seq_kv);
  check_tensor("v", in.v, in.kv_pairs.size(), spec.seq_kv);
  auto check_pairs = [&](const char* name, const std::vector<std::array<int32_t, 2>>& pairs, int64_t heads) {
    std::set<std::array<int32_t, 2>> seen;
    for (const auto& p : pairs) {
      if (p[0] < 0 || p[0] >= spec.batch || p[1] < 0 || p[1] >= heads)
        throw std::invalid_argument(std::string("inputs.") + name + " holds " + pair_text(p[0], p[1]) +
                                    ", outside the attention's " + std::to_string(spec.batch) + " batches x " +
                                    std::to_string(heads) + " heads");
      if (!seen.insert(p).second)
        throw std::invalid_argument(std::string("inputs.") + name + " lists " + pair_text(p[0], p[1]) + " twice");
    }
  };
  check_pairs("q_pairs", in.q_pairs, spec.heads_q);
  check_pairs("kv_pairs", in.kv_pairs, spec.heads_kv);
}

ReferenceInputs::ReferenceInputs(AttentionSpec spec, const HeadInputs& inputs, unsigned workers,
                                 std::shared_ptr<const void> inputs_owner)
    : spec_(std::move(spec)) {
  validate(spec_);
  check_head_inputs(spec_, inputs);
  inputs_.q_pairs = inputs.q_pairs;
  inputs_.kv_pairs = inputs.kv_pairs;
  inputs_.q = inputs.q;
  inputs_.k.dtype = inputs_.v.dtype = inputs.k.dtype;
  keys_.resize(inputs_.kv_pairs.size());
  parallel_for(static_cast<int64_t>(keys_.size()), workers, [&](int64_t i) {
    keys_[static_cast<size_t>(i)] = convert_keys(inputs.k, inputs.v, i, spec_.seq_kv,
                                                 static_cast<int32_t>(spec_.head_dim), 0, spec_.seq_kv, inputs_owner);
  });
}

void ReferenceInputs::copy_keys(size_t kv_index, float* k, float* v) const {
  const ReferenceKeys& keys = *keys_.at(kv_index);
  const size_t d = static_cast<size_t>(keys.head_dim), n = static_cast<size_t>(keys.count);
  std::copy_n(keys.v_rows, n * d, v);
  for (size_t j = 0; j < n; ++j) {
    const float* group = keys.k_groups.data() + (j / kScoreKeys) * d * kScoreKeys;
    for (size_t c = 0; c < d; ++c) k[j * d + c] = group[c * kScoreKeys + j % kScoreKeys];
  }
}

ReferenceInputs::~ReferenceInputs() = default;
ReferenceInputs::ReferenceInputs(ReferenceInputs&&) noexcept = default;
ReferenceInputs& ReferenceInputs::operator=(ReferenceInputs&&) noexcept = default;

std::shared_ptr<const ReferenceKeys> ReferenceInputs::keys(int64_t batch, int64_t kv_head) const {
  const int32_t i = inputs_.kv_index(batch, kv_head);
  return i < 0 ? nullptr : keys_[static_cast<size_t>(i)];
}

size_t ReferenceInputs::bytes() const {
  size_t n = sizeof(*this) + inputs_.q.bytes.capacity() + inputs_.k.bytes.capacity() + inputs_.v.bytes.capacity();
  for (const auto& k : keys_) n += k->bytes();
  return n;
}

RowBlockReference::RowBlockReference() = default;
RowBlockReference::~RowBlockReference() = default;

void RowBlockReference::add_range(int64_t begin, int64_t end, RefState& out, bool& started) const {
  const size_t n = static_cast<size_t>(block_.rows), d = static_cast<size_t>(head_dim_);
  auto absorb = [&](const double* m, const double* l, const double* o) {
    if (!started) {
      std::copy_n(m, n, out.m.data());
      std::copy_n(l, n, out.l.data());
      std::copy_n(o, n * d, out.o.data());
      started = true;
      return;
    }
    for (size_t r = 0; r < n; ++r)
      merge_row(out.m[r], out.l[r], out.o.data() + r * d, m[r], l[r], o + r * d, head_dim_);
  };
  auto direct = [&](int64_t a, int64_t b) {
    Scratch scratch;
    std::vector<double> m(n), l(n), o(n * d);
    range_states(*rows_, *keys_, a, b, scratch, m.data(), l.data(), o.data());
    absorb(m.data(), l.data(), o.data());
  };
  // Boundaries inside [begin, end]: the first at or after begin, the last at or before end
  // (0 <= begin < end <= seq_kv, and 0 and seq_kv are boundaries: both exist).
  const auto& bs = boundaries_;
  const size_t first = static_cast<size_t>(std::lower_bound(bs.begin(), bs.end(), begin) - bs.begin());
  const size_t last = static_cast<size_t>(std::upper_bound(bs.begin(), bs.end(), end) - bs.begin()) - 1;
  if (first >= last) {  // no whole piece inside
    direct(begin, end);
    return;
  }
  if (begin < bs[first]) direct(begin, bs[first]);
  if (first == 0 && !started) {
    const size_t at = (last - 1) * n;  // prefix [0, bs[last])
    absorb(prefix_m_.data() + at, prefix_l_.data() + at, prefix_o_.data() + at * d);
  } else {
    for (size_t p = first; p < last; ++p)
      absorb(piece_m_.data() + p * n, piece_l_.data() + p * n, piece_o_.data() + p * n * d);
  }
  if (bs[last] < end) direct(bs[last], end);
}

RefState RowBlockReference::state(std::span<const KeyRange> ranges) const {
  RefState out = empty_state(block_.rows, head_dim_);
  bool started = false;
  for (const auto& [a, b] : key_union(ranges, boundaries_.back())) add_range(a, b, out, started);
  return out;
}

RefState RowBlockReference::output() const {
  const size_t n = static_cast<size_t>(block_.rows), d = static_cast<size_t>(head_dim_);
  const size_t at = (boundaries_.size() - 2) * n;  // the prefix over every key
  RefState s;
  s.normalized = true;
  s.rows = block_.rows;
  s.head_dim = head_dim_;
  s.m.assign(prefix_m_.begin() + static_cast<ptrdiff_t>(at), prefix_m_.begin() + static_cast<ptrdiff_t>(at + n));
  s.l.assign(prefix_l_.begin() + static_cast<ptrdiff_t>(at), prefix_l_.begin() + static_cast<ptrdiff_t>(at + n));
  s.o.assign(prefix_o_.begin() + static_cast<ptrdiff_t>(at * d),
             prefix_o_.begin() + static_cast<ptrdiff_t>((at + n) * d));
  for (size_t r = 0; r < n; ++r) {
    double* o = s.o.data() + r * d;
    if (s.l[r] > 0.0) {
      for (size_t c = 0; c < d; ++c) o[c] /= s.l[r];
      s.m[r] += std::log(s.l[r]);
      s.l[r] = 1.0;
    } else {
      std::fill(o, o + d, 0.0);
      s.m[r] = kNegInf;
      s.l[r] = 0.0;
    }
  }
  return s;
}

std::vector<int64_t> RowBlockReference::visible_keys(std::span<const KeyRange> ranges) const {
  const auto u = key_union(ranges, boundaries_.back());
  std::vector<int64_t> out(static_cast<size_t>(block_.rows), 0);
  for (size_t r = 0; r < out.size(); ++r) {
    const auto& span = rows_->visible[r];
    for (const auto& [a, b] : u) out[r] += std::max<int64_t>(0, std::min(b, span.end) - std::max(a, span.begin));
  }
  return out;
}

std::vector<int64_t> RowBlockReference::visible_keys() const {
  std::vector<int64_t> out(static_cast<size_t>(block_.rows));
  for (size_t r = 0; r < out.size(); ++r)
    out[r] = std::max<int64_t>(0, rows_->visible[r].end - rows_->visible[r].begin);
  return out;
}

size_t RowBlockReference::bytes() const {
  size_t n = sizeof(*this) + boundaries_.capacity() * sizeof(int64_t) + rows_->bytes();
  n += (piece_m_.capacity() + piece_l_.capacity() + piece_o_.capacity() + prefix_m_.capacity() +
        prefix_l_.capacity() + prefix_o_.capacity()) *
       sizeof(double);
  if (owns_keys_) n += keys_->bytes();
  return n;
}

std::shared_ptr<const RowBlockReference> compute_row_block(const ReferenceInputs& inputs, const RowBlock& block,
                                                          std::vector<int64_t> boundaries) {
  const AttentionSpec& spec = inputs.spec();
  check_block(spec, block);
  const int32_t qi = query_index(inputs.inputs(), block);
  key_index(spec, inputs.inputs(), block);  // throws when absent
  auto rows = make_rows(spec, inputs.inputs().q, qi, block);
  return RowBlockBuilder::build(spec, block, std::move(rows), inputs.keys(block.batch, spec.kv_head_of(block.head)),
                                false, std::move(boundaries));
}

std::vector<std::shared_ptr<const RowBlockReference>> compute_row_blocks(const ReferenceInputs& inputs,
                                                                       std::span<const RowBlock> blocks,
                                                                       std::vector<int64_t> boundaries) {
  if (blocks.empty()) return {};
  const AttentionSpec& spec = inputs.spec();
  RowBlock all = blocks.front();
  for (size_t i = 1; i < blocks.size(); ++i) {
    if (blocks[i].batch != all.batch || blocks[i].head != all.head || blocks[i].q_begin != all.q_begin + all.rows)
      throw std::invalid_argument("compute_row_blocks: the row blocks must be of one (batch, head) and each begin "
                                  "where the one before it ends");
    all.rows += blocks[i].rows;
  }
  for (const RowBlock& b : blocks) check_block(spec, b);
  check_block(spec, all);
  const int32_t qi = query_index(inputs.inputs(), all);
  key_index(spec, inputs.inputs(), all);  // throws when absent
  const std::shared_ptr<const ReferenceKeys> keys = inputs.keys(all.batch, spec.kv_head_of(all.head));
  boundaries = normalized_boundaries(spec, std::move(boundaries));
  const size_t pieces = boundaries.size() - 1, n = static_cast<size_t>(all.rows);
  const size_t d = static_cast<size_t>(spec.head_dim);
  // Every row's pieces in one pass over each piece's keys; then each block's rows taken out.
  const PieceStates merged =
      RowBlockBuilder::piece_states(*make_rows(spec, inputs.inputs().q, qi, all), *keys, boundaries);
  std::vector<std::shared_ptr<const RowBlockReference>> out;
  out.reserve(blocks.size());
  for (const RowBlock& b : blocks) {
    const size_t first = static_cast<size_t>(b.q_begin - all.q_begin), k = static_cast<size_t>(b.rows);
    PieceStates own;
    own.m.resize(pieces * k);
    own.l.resize(pieces * k);
    own.o.resize(pieces * k * d);
    for (size_t p = 0; p < pieces; ++p) {
      std::copy_n(merged.m.data() + p * n + first, k, own.m.data() + p * k);
      std::copy_n(merged.l.data() + p * n + first, k, own.l.data() + p * k);
      std::copy_n(merged.o.data() + (p * n + first) * d, k * d, own.o.data() + p * k * d);
    }
    out.push_back(RowBlockBuilder::assemble(spec, b, make_rows(spec, inputs.inputs().q, qi, b), keys, false,
                                            boundaries, std::move(own)));
  }
  return out;
}

std::shared_ptr<const RowBlockReference> row_block_from_pieces(const ReferenceInputs& inputs, const RowBlock& block,
                                                              std::vector<int64_t> boundaries, PieceStates states) {
  const AttentionSpec& spec = inputs.spec();
  check_block(spec, block);
  const int32_t qi = query_index(inputs.inputs(), block);
  key_index(spec, inputs.inputs(), block);  // throws when absent
  if (boundaries != normalized_boundaries(spec, boundaries))
    throw std::invalid_argument("row_block_from_pieces: the boundaries must be sorted, unique, within [0, seq_kv] "
                                "and include both ends");
  const size_t pieces = boundaries.size() - 1, n = static_cast<size_t>(block.rows);
  const size_t d = static_cast<size_t>(spec.head_dim);
  if (states.m.size() != pieces * n || states.l.size() != pieces * n || states.o.size() != pieces * n * d)
    throw std::invalid_argument("row_block_from_pieces: the piece states do not match " + std::to_string(pieces) +
                                " pieces of " + std::to_string(n) + " rows");
  return RowBlockBuilder::assemble(spec, block, make_rows(spec, inputs.inputs().q, qi, block),
                                   inputs.keys(block.batch, spec.kv_head_of(block.head)), false, std::move(boundaries),
                                   std::move(states));
}

std::shared_ptr<const RowBlockReference> compute_row_block(const AttentionSpec& spec, const HeadInputs& inputs,
                                                          const RowBlock& block, std::vector<int64_t> boundaries) {
  validate(spec);
  check_head_inputs(spec, inputs);
  check_block(spec, block);
  const int32_t qi = query_index(inputs, block);
  const int32_t ki = key_index(spec, inputs, block);
  auto rows = make_rows(spec, inputs.q, qi, block);
  const auto [lo, hi] = seen_keys(*rows);
  auto keys = convert_keys(inputs.k, inputs.v, ki, spec.seq_kv, static_cast<int32_t>(spec.head_dim), lo, hi - lo);
  return RowBlockBuilder::build(spec, block, std::move(rows), std::move(keys), true, std::move(boundaries));
}

ReferenceOutput reference_output(const AttentionSpec& spec, const HeadInputs& inputs, unsigned workers) {
  validate(spec);
  check_head_inputs(spec, inputs);
  const int64_t d = spec.head_dim, sq = spec.seq_q;
  ReferenceOutput out;
  out.o.assign(static_cast<size_t>(spec.batch * spec.heads_q * sq * d), 0.0);
  out.lse.assign(static_cast<size_t>(spec.batch * spec.heads_q * sq), kNegInf);

  // Row blocks ordered by kv pair, so that each kv pair is converted once, when its first row
  // block starts, and released when its last one ends (a few converted at a time).
  struct Item {
    int32_t kv, q;
    RowBlock block;
  };
  std::vector<Item> items;
  for (size_t qi = 0; qi < inputs.q_pairs.size(); ++qi) {
    const auto [b, h] = inputs.q_pairs[qi];
    const RowBlock whole{b, h, 0, 1};
    const int32_t ki = key_index(spec, inputs, whole);
    for (int64_t q0 = 0; q0 < sq; q0 += kOutputRows) {
      const int32_t rows = static_cast<int32_t>(std::min<int64_t>(kOutputRows, sq - q0));
      items.push_back({ki, static_cast<int32_t>(qi), {b, h, static_cast<int32_t>(q0), rows}});
    }
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.kv < b.kv; });
  struct KvEntry {
    std::mutex mutex;
    std::shared_ptr<const ReferenceKeys> keys;
    int64_t remaining = 0;
  };
  std::vector<KvEntry> entries(inputs.kv_pairs.size());
  for (const Item& it : items) ++entries[static_cast<size_t>(it.kv)].remaining;

  parallel_for(static_cast<int64_t>(items.size()), workers, [&](int64_t i) {
    const Item& it = items[static_cast<size_t>(i)];
    KvEntry& entry = entries[static_cast<size_t>(it.kv)];
    std::shared_ptr<const ReferenceKeys> keys;
    {
      std::lock_guard lock(entry.mutex);
      if (!entry.keys)
        entry.keys = convert_keys(inputs.k, inputs.v, it.kv, spec.seq_kv, static_cast<int32_t>(d), 0, spec.seq_kv);
      keys = entry.keys;
    }
    const auto ref = RowBlockBuilder::build(spec, it.block, make_rows(spec, inputs.q, it.q, it.block), keys, false, {});
    const RefState f = ref->output();
    const int64_t row0 = (int64_t{it.block.batch} * spec.heads_q + it.block.head) * sq + it.block.q_begin;
    std::copy(f.o.begin(), f.o.end(), out.o.begin() + row0 * d);
    std::copy(f.m.begin(), f.m.end(), out.lse.begin() + row0);
    std::lock_guard lock(entry.mutex);
    if (--entry.remaining == 0) entry.keys.reset();
  });
  return out;
}

}  // namespace ts
