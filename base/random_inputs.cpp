#include "base/random_inputs.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "base/dtype_conversion.h"

namespace ts {
namespace {

// SplitMix64's finaliser: a bijective 64-bit mix, good enough to turn counters into bits.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The key of one tensor's counter stream.
uint64_t stream_key(uint64_t seed, InputTensor which) {
  return mix64(seed ^ mix64(static_cast<uint64_t>(which) + 0x632be59bd9b4e019ull));
}

inline float as_float(uint32_t bits) { return std::bit_cast<float>(bits); }
inline uint32_t as_bits(float x) { return std::bit_cast<uint32_t>(x); }

// The generator, two values per counter value (docs/trace-format.md states it once more, for
// numpy). Every step is an integer operation or one correctly rounded float32 operation in the
// written order (this file is compiled with -ffp-contract=off and without -ffast-math, so no
// step is fused or reordered): any vector width gives the same bits, and so does numpy. The
// selections are written with masks, not branches, so that the loops vectorise.
//
// normal: Box-Muller. u = (2a + 1) / 2^24 from 23 bits of x, in (0, 1); ln u = (e - 24) ln 2 +
// ln m with n = 2a + 1 = m 2^e, m in [sqrt(1/2), sqrt(2)), and ln m = 2 atanh(s) with
// s = (m - 1) / (m + 1) as a series to s^9; r = sqrt(-2 ln u). The angle 2 pi v from 24 more bits:
// its quadrant from the top 2, the angle within it phi = f pi / 2 from the other 22, and sin phi,
// cos phi as Taylor polynomials (to phi^11 and phi^12). The pair is (r cos, r sin) of the angle.
__attribute__((always_inline)) inline void normal_pairs(uint64_t key, uint64_t first_pair, int64_t pairs,
                                                        float scale, float* out) {
  // Coefficients: float32(1) / float32(k) and float32(1) / float32(k!), correctly rounded.
  constexpr float c3 = 1.0f / 3.0f, c5 = 1.0f / 5.0f, c7 = 1.0f / 7.0f, c9 = 1.0f / 9.0f;
  constexpr float s3 = 1.0f / 6.0f, s5 = 1.0f / 120.0f, s7 = 1.0f / 5040.0f, s9 = 1.0f / 362880.0f,
                  s11 = 1.0f / 39916800.0f;
  constexpr float k2 = 1.0f / 2.0f, k4 = 1.0f / 24.0f, k6 = 1.0f / 720.0f, k8 = 1.0f / 40320.0f,
                  k10 = 1.0f / 3628800.0f, k12 = 1.0f / 479001600.0f;
  constexpr float kSqrt2 = 0x1.6a09e6p+0f, kLn2 = 0x1.62e430p-1f, kHalfPi = 0x1.921fb6p+0f;
  for (int64_t j = 0; j < pairs; ++j) {
    const uint64_t x = mix64(key + first_pair + static_cast<uint64_t>(j));
    // r = sqrt(-2 ln u).
    const float n = static_cast<float>(static_cast<int32_t>(((x >> 41) << 1) | 1u));  // odd, < 2^24: exact
    const uint32_t nb = as_bits(n);
    const uint32_t big = as_float((nb & 0x007FFFFFu) | 0x3F800000u) > kSqrt2 ? 1u : 0u;
    const int32_t e = static_cast<int32_t>(nb >> 23) - 127 + static_cast<int32_t>(big);
    const float m = as_float((nb & 0x007FFFFFu) | ((127u - big) << 23));  // n / 2^e
    const float s = (m - 1.0f) / (m + 1.0f);
    const float s2 = s * s;
    float p = c9;
    p = p * s2 + c7;
    p = p * s2 + c5;
    p = p * s2 + c3;
    p = p * s2 + 1.0f;
    const float ln_u = static_cast<float>(e - 24) * kLn2 + (2.0f * s) * p;
    const float r = std::sqrt(-2.0f * ln_u);
    // The angle.
    const uint32_t b = static_cast<uint32_t>(x >> 17) & 0x00FFFFFFu;
    const uint32_t quadrant = b >> 22;
    const float phi = static_cast<float>(static_cast<int32_t>(b & 0x003FFFFFu)) * 0x1p-22f * kHalfPi;
    const float p2 = phi * phi;
    float t = -s11;
    t = t * p2 + s9;
    t = t * p2 - s7;
    t = t * p2 + s5;
    t = t * p2 - s3;
    const float sin_phi = phi + phi * p2 * t;
    float c = k12;
    c = c * p2 - k10;
    c = c * p2 + k8;
    c = c * p2 - k6;
    c = c * p2 + k4;
    c = c * p2 - k2;
    const float cos_phi = 1.0f + p2 * c;
    // Quadrants 0..3: (cos, sin) = (c, s), (-s, c), (-c, -s), (s, -c).
    const uint32_t odd = 0u - (quadrant & 1u);
    const uint32_t sb = as_bits(sin_phi), cb = as_bits(cos_phi);
    const float cos_a = as_float(((sb & odd) | (cb & ~odd)) ^ (((quadrant + 1u) & 2u) << 30));
    const float sin_a = as_float(((cb & odd) | (sb & ~odd)) ^ ((quadrant & 2u) << 30));
    out[2 * j] = r * cos_a * scale;
    out[2 * j + 1] = r * sin_a * scale;
  }
}

// uniform: two values of 24 bits each, (2k + 1 - 2^24) / 2^24 in (-1, 1) (exact in float32).
__attribute__((always_inline)) inline void uniform_pairs(uint64_t key, uint64_t first_pair, int64_t pairs,
                                                         float scale, float* out) {
  for (int64_t j = 0; j < pairs; ++j) {
    const uint64_t x = mix64(key + first_pair + static_cast<uint64_t>(j));
    const int32_t k0 = static_cast<int32_t>(x >> 40), k1 = static_cast<int32_t>((x >> 16) & 0x00FFFFFFu);
    out[2 * j] = static_cast<float>(2 * k0 + 1 - (1 << 24)) * 0x1p-24f * scale;
    out[2 * j + 1] = static_cast<float>(2 * k1 + 1 - (1 << 24)) * 0x1p-24f * scale;
  }
}

using PairsFn = void (*)(uint64_t key, uint64_t first_pair, int64_t pairs, float scale, float* out);

void normal_plain(uint64_t k, uint64_t f, int64_t n, float s, float* o) { normal_pairs(k, f, n, s, o); }
void uniform_plain(uint64_t k, uint64_t f, int64_t n, float s, float* o) { uniform_pairs(k, f, n, s, o); }
#if defined(__x86_64__) && defined(__GNUC__)
#define TS_RANDOM_WIDE 1
// The same loops compiled for wider vectors (2x and 4x the plain loop's speed here); chosen at
// run time, same bits.
__attribute__((target("avx2"))) void normal_avx2(uint64_t k, uint64_t f, int64_t n, float s, float* o) {
  normal_pairs(k, f, n, s, o);
}
__attribute__((target("avx2"))) void uniform_avx2(uint64_t k, uint64_t f, int64_t n, float s, float* o) {
  uniform_pairs(k, f, n, s, o);
}
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw"))) void normal_avx512(uint64_t k, uint64_t f, int64_t n,
                                                                                   float s, float* o) {
  normal_pairs(k, f, n, s, o);
}
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw"))) void uniform_avx512(uint64_t k, uint64_t f,
                                                                                    int64_t n, float s, float* o) {
  uniform_pairs(k, f, n, s, o);
}
#endif

// The widest loops the CPU has; TILESCOPE_NO_AVX2=1 in the environment forces the plain ones
// (the tests run both ways). Asked per call (a piece of up to a million values), so that a
// test can switch within one process.
PairsFn pairs_fn(InputDistribution d) {
  const int which = d == InputDistribution::uniform ? 1 : 0;
#ifdef TS_RANDOM_WIDE
  if (!std::getenv("TILESCOPE_NO_AVX2")) {
    static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx512) return which ? uniform_avx512 : normal_avx512;
    if (avx2) return which ? uniform_avx2 : normal_avx2;
  }
#endif
  return which ? uniform_plain : normal_plain;
}

// Elements [first, first + count) of one stream, counter pairs (2j, 2j + 1) sharing a value x.
void stream_values(PairsFn fn, uint64_t key, float scale, int64_t first, int64_t count, float* out) {
  if (count <= 0) return;
  float edge[2];
  if (first & 1) {  // the second value of a pair
    fn(key, static_cast<uint64_t>(first >> 1), 1, scale, edge);
    *out++ = edge[1];
    ++first;
    --count;
  }
  const int64_t pairs = count >> 1;
  fn(key, static_cast<uint64_t>(first >> 1), pairs, scale, out);
  if (count & 1) {
    fn(key, static_cast<uint64_t>((first >> 1) + pairs), 1, scale, edge);
    out[count - 1] = edge[0];
  }
}

unsigned worker_count(unsigned requested) {
  return requested ? requested : std::max(1u, std::thread::hardware_concurrency());
}

// A piece of work: elements [first, first + count) of tensor `which` into `out` (dtype).
struct Piece {
  InputTensor which;
  int64_t first, count;
  std::byte* out;
};

// Elements a piece holds at most: 4 MiB of float32, small enough to balance the threads and
// report progress often.
constexpr int64_t kPieceElements = int64_t{1} << 20;
// float32 values made at a time before a narrow dtype's rounding (stays in L1/L2).
constexpr int64_t kScratchElements = 4096;

void add_pieces(std::vector<Piece>& pieces, InputTensor which, int64_t first, int64_t count, std::byte* out,
                size_t element_size) {
  for (int64_t at = 0; at < count; at += kPieceElements)
    pieces.push_back({which, first + at, std::min(kPieceElements, count - at), out + static_cast<size_t>(at) * element_size});
}

// In-order hand-over of one tensor's pieces to the sink: whichever thread finishes a piece hands
// over every finished piece from the next one on, if no other thread is doing so (try_lock), so
// that each piece goes out right after it is made, in order, by one thread at a time.
struct SinkQueue {
  std::vector<size_t> pieces;              // this tensor's pieces (indices into the list), in order
  std::unique_ptr<std::atomic<bool>[]> done;  // by position in `pieces`
  std::atomic<size_t> next{0};             // the first not handed over (written under `mutex`)
  std::mutex mutex;
};

// Makes every piece on `workers` threads; the first exception is rethrown here. With a sink,
// each tensor's pieces are handed to it in order as they are made.
void make_pieces(const RandomInputSpec& spec, DType dtype, int64_t head_dim, int64_t seq_kv,
                 const std::vector<Piece>& pieces, unsigned workers, const GenerationProgress& progress,
                 const InputBytesSink* sink = nullptr) {
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  const size_t element = dtype_size(dtype);
  std::array<SinkQueue, 3> queues;
  std::vector<size_t> position(pieces.size());  // a piece's place in its tensor's queue
  if (sink) {
    for (size_t i = 0; i < pieces.size(); ++i) {
      SinkQueue& q = queues[static_cast<size_t>(pieces[i].which)];
      position[i] = q.pieces.size();
      q.pieces.push_back(i);
    }
    for (SinkQueue& q : queues) {
      q.done = std::make_unique<std::atomic<bool>[]>(q.pieces.size());
      for (size_t j = 0; j < q.pieces.size(); ++j) q.done[j].store(false);
    }
  }
  // Hands over what is ready of tensor `t`; returns when another thread holds it or nothing is.
  auto drain = [&](size_t t) {
    SinkQueue& q = queues[t];
    for (;;) {
      {
        std::unique_lock lock(q.mutex, std::try_to_lock);
        if (!lock.owns_lock()) return;
        size_t at = q.next.load();
        while (at < q.pieces.size() && q.done[at].load(std::memory_order_acquire)) {
          const Piece& p = pieces[q.pieces[at]];
          (*sink)(p.which, std::span<const std::byte>(p.out, static_cast<size_t>(p.count) * element));
          q.next.store(++at);
        }
      }
      // A piece finished after the check above and before the unlock would wait for the next
      // one: look once more.
      const size_t at = q.next.load();
      if (at >= q.pieces.size() || !q.done[at].load(std::memory_order_acquire)) return;
    }
  };
  auto run = [&] {
    try {
      std::vector<float> scratch(dtype == DType::f32 ? 0 : kScratchElements);
      for (size_t i; (i = next.fetch_add(1)) < pieces.size();) {
        const Piece& p = pieces[i];
        if (dtype == DType::f32) {
          random_input_values(spec, p.which, head_dim, seq_kv, p.first, p.count, reinterpret_cast<float*>(p.out));
        } else {
          for (int64_t at = 0; at < p.count; at += kScratchElements) {
            const int64_t n = std::min(kScratchElements, p.count - at);
            random_input_values(spec, p.which, head_dim, seq_kv, p.first + at, n, scratch.data());
            store_as_dtype(dtype, scratch.data(), static_cast<size_t>(n),
                           p.out + static_cast<size_t>(at) * dtype_size(dtype));
          }
        }
        if (progress) progress(p.count);
        if (sink) {
          const size_t t = static_cast<size_t>(p.which);
          queues[t].done[position[i]].store(true, std::memory_order_release);
          drain(t);
        }
      }
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(pieces.size());
    }
  };
  const size_t w = std::min<size_t>(worker_count(workers), std::max<size_t>(pieces.size(), 1));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < w; ++t) threads.emplace_back(run);
  run();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  if (sink)  // whatever a race left behind (every piece is made by now)
    for (size_t t = 0; t < queues.size(); ++t) {
      drain(t);
      if (queues[t].next.load() != queues[t].pieces.size()) throw std::logic_error("make_pieces: a piece was never handed over");
    }
}

// A zeroed tensor in fresh memory. The first touch of fresh memory is most of the cost (here
// about half a second per GiB, where zeroing memory already touched takes a tenth of that); a
// large tensor's pages are made in one call first, rather than one page fault per 4 KiB as the
// zeroing touches them (a fifth less system time for a decode capture's GiB of K and V). The
// call is advice: where the kernel lacks it, the zeroing faults the pages in as before.
HostTensor fresh_zeros(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  const size_t size = static_cast<size_t>(t.numel()) * t.element_size();
  t.bytes.reserve(size);  // allocated, not yet touched
#ifdef MADV_POPULATE_WRITE
  constexpr size_t kPopulateFrom = size_t{1} << 20;
  if (size >= kPopulateFrom) {
    // Whole pages: from the one holding the first byte to the one holding the last.
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<uintptr_t>(t.bytes.data());
    const uintptr_t first = begin & ~(page - 1), end = (begin + size + page - 1) & ~(page - 1);
    ::madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_WRITE);
  }
#endif
  t.bytes.assign(size, std::byte{0});
  return t;
}

// Q, K and V zeroed, K on a thread of its own beside Q and V (K and V are the bulk).
void allocate_inputs(DType dtype, std::vector<int64_t> q_shape, std::vector<int64_t> kv_shape, HostTensor& q,
                     HostTensor& k, HostTensor& v) {
  std::exception_ptr k_error;
  std::thread k_thread([&] {
    try {
      k = fresh_zeros(dtype, kv_shape);
    } catch (...) {
      k_error = std::current_exception();
    }
  });
  try {
    q = fresh_zeros(dtype, std::move(q_shape));
    v = fresh_zeros(dtype, kv_shape);
  } catch (...) {
    k_thread.join();
    throw;
  }
  k_thread.join();
  if (k_error) std::rethrow_exception(k_error);
}

}  // namespace

void check_random_spec(const RandomInputSpec& spec) {
  if (!std::isfinite(spec.scale) || spec.scale <= 0.0)
    throw ConfigError("scale", "the random inputs' scale must be finite and > 0 (got " +
                                   std::to_string(spec.scale) + ")");
}

void random_input_values(const RandomInputSpec& spec, InputTensor which, int64_t head_dim, int64_t seq_kv,
                         int64_t first, int64_t count, float* out) {
  const double factor = spec.preset == InputPreset::large_logits && which != InputTensor::v ? 4.0 : 1.0;
  const float scale = static_cast<float>(spec.scale * factor);
  const PairsFn fn = pairs_fn(spec.distribution);
  const uint64_t key = stream_key(spec.seed, which);
  if (which != InputTensor::k || spec.preset != InputPreset::all_equal_scores) {
    stream_values(fn, key, scale, first, count, out);
    return;
  }
  // Every key row of a (batch, kv head) is its first row: element i takes the value of element
  // (i / per_head) * per_head + i % head_dim.
  const int64_t per_head = seq_kv * head_dim;
  for (int64_t i = first; i < first + count;) {
    const int64_t in_row = i % head_dim;
    const int64_t n = std::min(head_dim - in_row, first + count - i);
    stream_values(fn, key, scale, (i / per_head) * per_head + in_row, n, out + (i - first));
    i += n;
  }
}

AttentionInputs make_random_inputs(const AttentionConfig& config, const RandomInputSpec& spec, unsigned workers,
                                   const GenerationProgress& progress) {
  validate(config);
  check_random_spec(spec);
  AttentionInputs in;
  allocate_inputs(config.dtype, {config.batch, config.heads, config.seq_q, config.head_dim},
                  {config.batch, config.kv_heads(), config.seq_kv, config.head_dim}, in.q, in.k, in.v);
  std::vector<Piece> pieces;
  const size_t size = dtype_size(config.dtype);
  add_pieces(pieces, InputTensor::q, 0, in.q.numel(), in.q.bytes.data(), size);
  add_pieces(pieces, InputTensor::k, 0, in.k.numel(), in.k.bytes.data(), size);
  add_pieces(pieces, InputTensor::v, 0, in.v.numel(), in.v.bytes.data(), size);
  make_pieces(spec, config.dtype, config.head_dim, config.seq_kv, pieces, workers, progress);
  return in;
}

HeadInputs make_random_head_inputs(const AttentionSpec& a, const RandomInputSpec& spec,
                                   std::vector<std::array<int32_t, 2>> q_pairs,
                                   std::vector<std::array<int32_t, 2>> kv_pairs, unsigned workers,
                                   const GenerationProgress& progress) {
  return make_random_head_inputs(a, spec, std::move(q_pairs), std::move(kv_pairs), workers, progress, {});
}

HeadInputs make_random_head_inputs(const AttentionSpec& a, const RandomInputSpec& spec,
                                   std::vector<std::array<int32_t, 2>> q_pairs,
                                   std::vector<std::array<int32_t, 2>> kv_pairs, unsigned workers,
                                   const GenerationProgress& progress, const InputBytesSink& sink) {
  validate(a);
  check_random_spec(spec);
  const auto check = [&](const std::array<int32_t, 2>& p, int64_t heads, const char* what) {
    if (p[0] < 0 || p[0] >= a.batch || p[1] < 0 || p[1] >= heads)
      throw std::invalid_argument(std::string(what) + " (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) +
                                  ") is outside the attention");
  };
  for (const auto& p : q_pairs) check(p, a.heads_q, "query pair");
  for (const auto& p : kv_pairs) check(p, a.heads_kv, "kv pair");
  HeadInputs in;
  allocate_inputs(a.dtype, {static_cast<int64_t>(q_pairs.size()), a.seq_q, a.head_dim},
                  {static_cast<int64_t>(kv_pairs.size()), a.seq_kv, a.head_dim}, in.q, in.k, in.v);
  std::vector<Piece> pieces;
  const size_t size = dtype_size(a.dtype);
  const int64_t q_len = a.seq_q * a.head_dim, kv_len = a.seq_kv * a.head_dim;
  for (size_t i = 0; i < q_pairs.size(); ++i)
    add_pieces(pieces, InputTensor::q, (q_pairs[i][0] * a.heads_q + q_pairs[i][1]) * q_len, q_len,
               in.q.bytes.data() + i * static_cast<size_t>(q_len) * size, size);
  // K and V pair by pair, side by side, so that with a sink both tensors' hand-overs advance
  // together (each is one thread's sequential stream).
  for (size_t i = 0; i < kv_pairs.size(); ++i)
    for (InputTensor t : {InputTensor::k, InputTensor::v}) {
      HostTensor& out = t == InputTensor::k ? in.k : in.v;
      add_pieces(pieces, t, (kv_pairs[i][0] * a.heads_kv + kv_pairs[i][1]) * kv_len, kv_len,
                 out.bytes.data() + i * static_cast<size_t>(kv_len) * size, size);
    }
  make_pieces(spec, a.dtype, a.head_dim, a.seq_kv, pieces, workers, progress, sink ? &sink : nullptr);
  in.q_pairs = std::move(q_pairs);
  in.kv_pairs = std::move(kv_pairs);
  return in;
}

std::string_view to_string(InputDistribution d) {
  return d == InputDistribution::uniform ? "uniform" : "normal";
}

std::string_view to_string(InputPreset p) {
  switch (p) {
    case InputPreset::none: return "none";
    case InputPreset::large_logits: return "large_logits";
    case InputPreset::all_equal_scores: return "all_equal_scores";
  }
  return "?";
}

std::optional<InputDistribution> distribution_from_name(std::string_view name) {
  if (name == "normal") return InputDistribution::normal;
  if (name == "uniform") return InputDistribution::uniform;
  return std::nullopt;
}

std::optional<InputPreset> preset_from_name(std::string_view name) {
  for (InputPreset p : {InputPreset::none, InputPreset::large_logits, InputPreset::all_equal_scores})
    if (to_string(p) == name) return p;
  return std::nullopt;
}

}  // namespace ts
