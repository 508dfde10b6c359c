#include "kernels/reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

namespace ts {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

RefState empty_state(int32_t rows, int32_t head_dim) {
  RefState s;
  s.rows = rows;
  s.head_dim = head_dim;
  s.m.assign(static_cast<size_t>(rows), kNegInf);
  s.l.assign(static_cast<size_t>(rows), 0.0);
  s.o.assign(static_cast<size_t>(rows) * static_cast<size_t>(head_dim), 0.0);
  return s;
}

// Four independent sums: a little instruction-level parallelism for the hot loop.
double dot(const double* a, const double* b, int n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int c = 0;
  for (; c + 4 <= n; c += 4) {
    s0 += a[c] * b[c];
    s1 += a[c + 1] * b[c + 1];
    s2 += a[c + 2] * b[c + 2];
    s3 += a[c + 3] * b[c + 3];
  }
  for (; c < n; ++c) s0 += a[c] * b[c];
  return (s0 + s1) + (s2 + s3);
}

unsigned worker_count(unsigned requested) {
  return requested ? requested : std::max(1u, std::thread::hardware_concurrency());
}

// Runs body(i) for i in [0, n) on `workers` threads.
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
  const unsigned w = static_cast<unsigned>(std::min<int64_t>(worker_count(workers), std::max<int64_t>(n, 1)));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < w; ++t) threads.emplace_back(run);
  run();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

void merge_states(RefState& a, const RefState& b) {
  const int32_t d = a.head_dim;
  for (int32_t r = 0; r < a.rows; ++r) {
    const double mx = std::max(a.m[r], b.m[r]);
    if (mx == kNegInf) continue;  // neither side has seen a key: stays (-inf, 0, 0)
    const double fa = std::exp(a.m[r] - mx);
    const double fb = std::exp(b.m[r] - mx);
    a.m[r] = mx;
    a.l[r] = a.l[r] * fa + b.l[r] * fb;
    double* oa = a.o.data() + static_cast<size_t>(r) * d;
    const double* ob = b.o.data() + static_cast<size_t>(r) * d;
    for (int32_t c = 0; c < d; ++c) oa[c] = oa[c] * fa + ob[c] * fb;
  }
}

TileReference::TileReference(int32_t rows, int32_t head_dim, int32_t num_kv_tiles)
    : rows_(rows), head_dim_(head_dim), num_kv_tiles_(num_kv_tiles) {
  const size_t n = static_cast<size_t>(num_kv_tiles) * static_cast<size_t>(rows);
  tile_m_.assign(n, kNegInf);
  tile_l_.assign(n, 0.0);
  tile_o_.assign(n * static_cast<size_t>(head_dim), 0.0);
}

void TileReference::merge_tile_into(RefState& s, int32_t tile) const {
  RefState t;
  t.rows = rows_;
  t.head_dim = head_dim_;
  const size_t r0 = static_cast<size_t>(tile) * rows_;
  t.m.assign(tile_m_.begin() + r0, tile_m_.begin() + r0 + rows_);
  t.l.assign(tile_l_.begin() + r0, tile_l_.begin() + r0 + rows_);
  t.o.assign(tile_o_.begin() + r0 * head_dim_, tile_o_.begin() + (r0 + rows_) * head_dim_);
  merge_states(s, t);
}

void TileReference::finish() {
  prefix_.clear();
  prefix_.reserve(static_cast<size_t>(num_kv_tiles_) + 1);
  prefix_.push_back(empty_state(rows_, head_dim_));
  for (int32_t t = 0; t < num_kv_tiles_; ++t) {
    RefState s = prefix_.back();
    merge_tile_into(s, t);
    prefix_.push_back(std::move(s));
  }
}

RefState TileReference::kv_range(int32_t begin, int32_t end) const {
  if (begin < 0 || end < begin || end > num_kv_tiles_)
    throw std::out_of_range("kv tile range [" + std::to_string(begin) + ", " +
                            std::to_string(end) + ") is outside the run's " +
                            std::to_string(num_kv_tiles_) + " kv tiles");
  if (begin == 0 && static_cast<size_t>(end) < prefix_.size()) return prefix_[end];
  RefState s = empty_state(rows_, head_dim_);
  for (int32_t t = begin; t < end; ++t) merge_tile_into(s, t);
  return s;
}

RefState TileReference::final_output() const {
  RefState s = kv_range(0, num_kv_tiles_);
  s.convention = Convention::normalized;
  for (int32_t r = 0; r < rows_; ++r) {
    const double l = s.l[r];
    double* o = s.o.data() + static_cast<size_t>(r) * head_dim_;
    if (l > 0.0) {
      for (int32_t c = 0; c < head_dim_; ++c) o[c] /= l;
      s.m[r] = s.m[r] + std::log(l);
    } else {
      std::fill(o, o + head_dim_, 0.0);
      s.m[r] = kNegInf;
    }
    s.l[r] = 1.0;
  }
  return s;
}

size_t TileReference::bytes() const {
  size_t n = tile_m_.size() + tile_l_.size() + tile_o_.size();
  for (const auto& p : prefix_) n += p.m.size() + p.l.size() + p.o.size();
  return n * sizeof(double);
}

Reference::Reference(const AttentionConfig& config, const Tiling& tiling, AttentionInputs inputs,
                     size_t cache_bytes)
    : config_(config), tiling_(tiling), scale_(config.effective_scale()), cache_bytes_(cache_bytes) {
  validate(config);
  check_inputs(config, inputs);
  q_ = std::move(inputs.q);
  k_ = std::move(inputs.k);
  v_ = std::move(inputs.v);
  if (tiling.kernel != config.kernel || tiling.seq_q != config.seq_q ||
      tiling.seq_kv != config.seq_kv || tiling.causal != config.causal)
    throw ConfigError("tiling", "the tiling was made for a different config (kernel, sizes or causal)");
}

std::shared_ptr<TileReference> Reference::compute(int64_t b, int64_t h, int64_t q_tile) const {
  if (b < 0 || b >= config_.batch || h < 0 || h >= config_.heads || q_tile < 0 ||
      q_tile >= tiling_.num_q_tiles)
    throw std::out_of_range("no query tile (batch " + std::to_string(b) + ", head " +
                            std::to_string(h) + ", q_tile " + std::to_string(q_tile) +
                            ") in this run");
  const int32_t d = static_cast<int32_t>(config_.head_dim);
  const int32_t rows = tiling_.rows_in_q_tile(q_tile);
  const int64_t q0 = q_tile * tiling_.block_m;
  const int64_t sq = config_.seq_q, skv = config_.seq_kv;
  const int64_t bh = b * config_.heads + h;

  std::vector<double> q(static_cast<size_t>(rows) * d);
  q_.copy_doubles((bh * sq + q0) * d, static_cast<int64_t>(rows) * d, q.data());
  for (double& x : q) x *= scale_;

  auto tile = std::make_shared<TileReference>(rows, d, tiling_.num_kv_tiles);
  std::vector<double> kt(static_cast<size_t>(tiling_.block_n) * d), vt(kt.size()),
      s(static_cast<size_t>(tiling_.block_n));
  for (int32_t t = 0; t < tiling_.num_kv_tiles; ++t) {
    const int64_t j0 = static_cast<int64_t>(t) * tiling_.block_n;
    const int64_t keys = std::min<int64_t>(tiling_.block_n, skv - j0);
    k_.copy_doubles((bh * skv + j0) * d, keys * d, kt.data());
    v_.copy_doubles((bh * skv + j0) * d, keys * d, vt.data());
    for (int32_t r = 0; r < rows; ++r) {
      const int64_t i = q0 + r;
      // Keys this row sees in the tile: j <= i + skv - sq under causal masking.
      int64_t visible = keys;
      if (config_.causal) visible = std::clamp<int64_t>(i + skv - sq - j0 + 1, 0, keys);
      if (visible == 0) continue;  // (-inf, 0, 0) as initialised
      double mx = kNegInf;
      for (int64_t j = 0; j < visible; ++j) {
        s[j] = dot(q.data() + static_cast<size_t>(r) * d, kt.data() + j * d, d);
        mx = std::max(mx, s[j]);
      }
      const size_t at = static_cast<size_t>(t) * rows + r;
      double l = 0.0;
      double* o = tile->tile_o().data() + at * d;
      for (int64_t j = 0; j < visible; ++j) {
        const double p = std::exp(s[j] - mx);
        l += p;
        const double* vr = vt.data() + j * d;
        for (int32_t c = 0; c < d; ++c) o[c] += p * vr[c];
      }
      tile->tile_m()[at] = mx;
      tile->tile_l()[at] = l;
    }
  }
  tile->finish();
  return tile;
}

bool Reference::has_cached(int64_t b, int64_t h, int64_t q_tile) const {
  const int64_t key = (b * config_.heads + h) * tiling_.num_q_tiles + q_tile;
  std::lock_guard lock(mutex_);
  return cache_.count(key) != 0;
}

std::shared_ptr<const TileReference> Reference::tile(int64_t b, int64_t h, int64_t q_tile) const {
  const int64_t key = (b * config_.heads + h) * tiling_.num_q_tiles + q_tile;
  {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.tile;
    }
  }
  std::shared_ptr<const TileReference> computed = compute(b, h, q_tile);
  const size_t bytes = computed->bytes();
  std::lock_guard lock(mutex_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second.tile;  // another thread was faster
  if (bytes > cache_bytes_) return computed;
  while (cached_bytes_ + bytes > cache_bytes_ && !lru_.empty()) {
    auto victim = cache_.find(lru_.back());
    cached_bytes_ -= victim->second.tile->bytes();
    cache_.erase(victim);
    lru_.pop_back();
  }
  lru_.push_front(key);
  cache_.emplace(key, Cached{computed, lru_.begin()});
  cached_bytes_ += bytes;
  return computed;
}

RefState Reference::expected(const EventHeader& e) const {
  auto t = tile(e.batch, e.head, e.q_tile);
  switch (static_cast<Stage>(e.stage)) {
    case Stage::fa1_step:
    case Stage::splitk_partial:
    case Stage::splitk_reduce: return t->kv_range(e.kv_tile_begin, e.kv_tile_end);
    case Stage::final_output: return t->final_output();
  }
  throw std::out_of_range("event stage " + std::to_string(e.stage) + " is not a known stage");
}

void Reference::precompute(std::span<const TileKey> tiles, unsigned workers) const {
  parallel_for(static_cast<int64_t>(tiles.size()), workers, [&](int64_t i) {
    const TileKey& k = tiles[static_cast<size_t>(i)];
    tile(k.batch, k.head, k.q_tile);
  });
}

Reference::Output Reference::output(unsigned workers) const {
  Output out;
  const int64_t d = config_.head_dim, sq = config_.seq_q;
  const int64_t pairs = config_.batch * config_.heads;
  out.o.assign(static_cast<size_t>(pairs * sq * d), 0.0);
  out.lse.assign(static_cast<size_t>(pairs * sq), 0.0);
  const int64_t items = pairs * tiling_.num_q_tiles;
  parallel_for(items, workers, [&](int64_t item) {
    const int64_t bh = item / tiling_.num_q_tiles, qt = item % tiling_.num_q_tiles;
    const RefState f = compute(bh / config_.heads, bh % config_.heads, qt)->final_output();
    const int64_t row0 = bh * sq + qt * tiling_.block_m;
    std::copy(f.o.begin(), f.o.end(), out.o.begin() + row0 * d);
    std::copy(f.m.begin(), f.m.end(), out.lse.begin() + row0);
  });
  return out;
}

}  // namespace ts
