// The GPU path of the float64 reference (kernels/reference_gpu.h): one CUDA block per work item
// (up to kItemRows rows of one row block against the keys of one piece), streaming the piece's
// keys in tiles of kTileKeys through shared memory with an online softmax in float64. The host
// side cuts the row blocks into items, sends them in batches of bounded device memory, and
// hands each row block's piece states to row_block_from_pieces.
#include "kernels/reference_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace ts {
namespace {

constexpr int kThreads = 128;
constexpr int kItemRows = 8;   // rows of an item: kItemRows x kTileKeys scores, one per thread
constexpr int kTileKeys = 16;
static_assert(kItemRows * kTileKeys == kThreads, "one score per thread and tile");
constexpr int kColumnsPerThread = (kGpuReferenceMaxHeadDim + kThreads - 1) / kThreads;

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw GpuReferenceError(std::string("GPU reference: CUDA error in ") + what + ": " + cudaGetErrorString(err));
}

// One allocation, freed on every path.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t count) : count_(count) {
    if (count > 0) check(cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T)), "cudaMalloc");
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : ptr_(o.ptr_), count_(o.count_) { o.ptr_ = nullptr; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  ~DeviceArray() {
    if (ptr_) cudaFree(ptr_);
  }
  T* get() const { return ptr_; }
  void upload(const T* src, size_t count, size_t at = 0) const {
    if (count > 0) check(cudaMemcpy(ptr_ + at, src, count * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  void download(T* dst, size_t count) const {
    if (count > 0) check(cudaMemcpy(dst, ptr_, count * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
  }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// A work item: rows [row0, row0 + rows) of a row group against keys [key_begin, key_end).
struct Item {
  int64_t key_begin, key_end;  // the piece, clipped to the keys some row of the item sees
  int64_t kv_offset;           // first float of the kv pair's keys (and values)
  int64_t row_offset;          // first row of the item in the batch's row arrays
  int64_t out_offset;          // first double of the item's output: m[rows], l[rows], o[rows][d]
  int32_t rows;
  double alibi_slope;          // 0 without ALiBi
};

// Per row of the batch: its scaled query (d doubles), the keys it sees [begin, end), and
// i + offset for ALiBi's distance.
struct RowArrays {
  const double* q;
  const int64_t* visible_begin;
  const int64_t* visible_end;
  const int64_t* diagonal;
};

__global__ void __launch_bounds__(kThreads) piece_states_kernel(const Item* items, RowArrays rows, const float* keys,
                                                                const float* values, int32_t d, double softcap,
                                                                int alibi, double* out) {
  extern __shared__ double shared[];
  const Item item = items[blockIdx.x];
  const int tid = static_cast<int>(threadIdx.x);
  const int k_stride = d + 1;  // padded: the 16 keys of a tile fall in different banks
  double* q = shared;                                 // [kItemRows][d]
  double* s = q + kItemRows * d;                      // [kItemRows][kTileKeys]: scores, then weights
  double* row_m = s + kItemRows * kTileKeys;          // [kItemRows]
  double* row_l = row_m + kItemRows;                  // [kItemRows]
  double* row_alpha = row_l + kItemRows;              // [kItemRows]
  float* k_tile = reinterpret_cast<float*>(row_alpha + kItemRows);  // [kTileKeys][d + 1]
  float* v_tile = k_tile + kTileKeys * k_stride;                     // [kTileKeys][d]

  for (int e = tid; e < item.rows * d; e += kThreads) q[e] = rows.q[(item.row_offset + e / d) * d + e % d];
  if (tid < kItemRows) {
    row_m[tid] = -INFINITY;
    row_l[tid] = 0.0;
  }
  double acc[kItemRows][kColumnsPerThread];
#pragma unroll
  for (int r = 0; r < kItemRows; ++r)
#pragma unroll
    for (int j = 0; j < kColumnsPerThread; ++j) acc[r][j] = 0.0;

  const int score_row = tid / kTileKeys, score_key = tid % kTileKeys;
  int64_t seen_begin = 0, seen_end = 0;
  double diagonal = 0.0;
  if (score_row < item.rows) {
    seen_begin = rows.visible_begin[item.row_offset + score_row];
    seen_end = rows.visible_end[item.row_offset + score_row];
    diagonal = static_cast<double>(rows.diagonal[item.row_offset + score_row]);
  }
  const float* item_keys = keys + item.kv_offset;
  const float* item_values = values + item.kv_offset;
  for (int64_t tile = item.key_begin; tile < item.key_end; tile += kTileKeys) {
    const int64_t tile_keys = item.key_end - tile < kTileKeys ? item.key_end - tile : kTileKeys;
    __syncthreads();  // the previous tile's readers are done
    for (int e = tid; e < kTileKeys * d; e += kThreads) {
      const int j = e / d, c = e % d;
      const bool in = j < tile_keys;
      k_tile[j * k_stride + c] = in ? item_keys[(tile + j) * d + c] : 0.0f;
      v_tile[j * d + c] = in ? item_values[(tile + j) * d + c] : 0.0f;
    }
    __syncthreads();
    // One score per thread: softcap, then ALiBi (the spec's order); keys the row does not see
    // are -inf.
    if (score_row < item.rows) {
      const int64_t key = tile + score_key;
      double x = -INFINITY;
      if (score_key < tile_keys && key >= seen_begin && key < seen_end) {
        const double* qr = q + score_row * d;
        const float* kr = k_tile + score_key * k_stride;
        double dot = 0.0;
        for (int c = 0; c < d; ++c) dot += qr[c] * static_cast<double>(kr[c]);
        if (softcap > 0.0) dot = softcap * tanh(dot / softcap);
        if (alibi) dot -= item.alibi_slope * fabs(diagonal - static_cast<double>(key));
        x = dot;
      }
      s[score_row * kTileKeys + score_key] = x;
    }
    __syncthreads();
    // The online softmax, one thread per row: the new max, the old state's factor, the weights.
    if (tid < item.rows) {
      double* sr = s + tid * kTileKeys;
      double mx = row_m[tid];
      for (int j = 0; j < kTileKeys; ++j) mx = fmax(mx, sr[j]);
      if (mx == -INFINITY) {  // nothing seen yet: the state stays (-inf, 0, 0)
        row_alpha[tid] = 1.0;
        for (int j = 0; j < kTileKeys; ++j) sr[j] = 0.0;
      } else {
        const double alpha = exp(row_m[tid] - mx);  // 0 when the row had seen nothing
        double sum = 0.0;
        for (int j = 0; j < kTileKeys; ++j) {
          sr[j] = exp(sr[j] - mx);  // 0 for unseen keys
          sum += sr[j];
        }
        row_l[tid] = row_l[tid] * alpha + sum;
        row_m[tid] = mx;
        row_alpha[tid] = alpha;
      }
    }
    __syncthreads();
    // O = O * alpha + sum_j w_j v_j, a thread per column.
#pragma unroll
    for (int j = 0; j < kColumnsPerThread; ++j) {
      const int c = tid + j * kThreads;
      if (c < d) {
        double v[kTileKeys];
#pragma unroll
        for (int k = 0; k < kTileKeys; ++k) v[k] = static_cast<double>(v_tile[k * d + c]);
#pragma unroll
        for (int r = 0; r < kItemRows; ++r)
          if (r < item.rows) {
            double o = acc[r][j] * row_alpha[r];
#pragma unroll
            for (int k = 0; k < kTileKeys; ++k) o += s[r * kTileKeys + k] * v[k];
            acc[r][j] = o;
          }
      }
    }
  }
  __syncthreads();
  double* m_out = out + item.out_offset;
  double* l_out = m_out + item.rows;
  double* o_out = l_out + item.rows;
  if (tid < item.rows) {
    m_out[tid] = row_m[tid];
    l_out[tid] = row_l[tid];
  }
#pragma unroll
  for (int j = 0; j < kColumnsPerThread; ++j) {
    const int c = tid + j * kThreads;
    if (c < d) {
#pragma unroll
      for (int r = 0; r < kItemRows; ++r)
        if (r < item.rows) o_out[r * d + c] = acc[r][j];
    }
  }
}

size_t shared_bytes(int32_t d) {
  return sizeof(double) * (kItemRows * d + kItemRows * kTileKeys + 3 * kItemRows) +
         sizeof(float) * (kTileKeys * (d + 1) + kTileKeys * d);
}

// Output doubles a batch may hold (256 MiB), and rows / items per batch.
constexpr size_t kBatchOutputDoubles = size_t{32} << 20;

}  // namespace

struct GpuReference::Device {
  int32_t head_dim = 0;
  DeviceArray<float> keys, values;  // [kv pair][seq_kv][head_dim]
};

bool gpu_reference_available(std::string* reason) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    if (reason) *reason = std::string("no CUDA device: ") + (err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    return false;
  }
  return true;
}

GpuReference::GpuReference(const ReferenceInputs& inputs) : inputs_(inputs), device_(std::make_unique<Device>()) {
  const AttentionSpec& spec = inputs.spec();
  if (spec.head_dim > kGpuReferenceMaxHeadDim)
    throw GpuReferenceError("GPU reference: head dim " + std::to_string(spec.head_dim) + " is over its " +
                            std::to_string(kGpuReferenceMaxHeadDim));
  std::string reason;
  if (!gpu_reference_available(&reason)) throw GpuReferenceError("GPU reference: " + reason);
  check(cudaFuncSetAttribute(piece_states_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(shared_bytes(static_cast<int32_t>(spec.head_dim)))),
        "cudaFuncSetAttribute (shared memory)");
  const HeadInputs& in = inputs.inputs();
  device_->head_dim = static_cast<int32_t>(spec.head_dim);
  const size_t per_pair = static_cast<size_t>(spec.seq_kv * spec.head_dim);
  const size_t count = in.kv_pairs.size() * per_pair;
  device_->keys = DeviceArray<float>(count);
  device_->values = DeviceArray<float>(count);
  // The converted keys and values (float32, exact), a pair at a time through host buffers.
  std::vector<float> k(per_pair), v(per_pair);
  for (size_t p = 0; p < in.kv_pairs.size(); ++p) {
    inputs.copy_keys(p, k.data(), v.data());
    device_->keys.upload(k.data(), per_pair, p * per_pair);
    device_->values.upload(v.data(), per_pair, p * per_pair);
  }
}

GpuReference::~GpuReference() = default;

std::vector<std::shared_ptr<const RowBlockReference>> GpuReference::compute(
    std::span<const RowBlock> blocks, std::span<const std::vector<int64_t>> boundaries) const {
  if (blocks.size() != boundaries.size())
    throw std::invalid_argument("GpuReference::compute: one boundary list per row block");
  const AttentionSpec& spec = inputs_.spec();
  const HeadInputs& in = inputs_.inputs();
  const int32_t d = device_->head_dim;
  const double scale = spec.effective_scale();
  std::vector<std::shared_ptr<const RowBlockReference>> out(blocks.size());

  // What one row block needs from a batch.
  struct Planned {
    size_t block;
    std::vector<int64_t> cuts;
    int64_t row_offset;                   // its first row in the batch's row arrays
    std::vector<int64_t> item_out;        // per (row group, piece): output offset
  };
  size_t next = 0;
  while (next < blocks.size()) {
    std::vector<Planned> planned;
    std::vector<Item> items;
    std::vector<double> q;
    std::vector<int64_t> vis_begin, vis_end, diag;
    size_t out_doubles = 0;
    // Fill a batch: whole row blocks until the output would pass the bound (at least one).
    while (next < blocks.size()) {
      const RowBlock& rb = blocks[next];
      if (rb.batch < 0 || rb.batch >= spec.batch || rb.head < 0 || rb.head >= spec.heads_q || rb.rows < 1 ||
          rb.q_begin < 0 || int64_t{rb.q_begin} + rb.rows > spec.seq_q)
        throw std::invalid_argument("row block outside the attention");  // compute_row_block's check, early
      std::vector<int64_t> cuts = normalized_boundaries(spec, boundaries[next]);
      const size_t pieces = cuts.size() - 1;
      const size_t need = pieces * static_cast<size_t>(rb.rows) * static_cast<size_t>(d + 2);
      if (!planned.empty() && out_doubles + need > kBatchOutputDoubles) break;
      const int32_t qi = in.q_index(rb.batch, rb.head);
      const int64_t kv_head = spec.kv_head_of(rb.head);
      const int32_t ki = in.kv_index(rb.batch, kv_head);
      if (qi < 0 || ki < 0)
        throw std::invalid_argument("the inputs hold no query rows or keys of (batch " + std::to_string(rb.batch) +
                                    ", head " + std::to_string(rb.head) + ")");
      Planned p{next, std::move(cuts), static_cast<int64_t>(vis_begin.size()), {}};
      for (int32_t r = 0; r < rb.rows; ++r) {
        const int64_t i = int64_t{rb.q_begin} + r;
        const size_t at = q.size();
        q.resize(at + static_cast<size_t>(d));
        in.q.copy_doubles((int64_t{qi} * spec.seq_q + i) * d, d, q.data() + at);
        for (size_t c = 0; c < static_cast<size_t>(d); ++c) q[at + c] *= scale;
        const AttentionSpec::KeySpan span = spec.visible_keys(rb.batch, i);
        vis_begin.push_back(span.begin);
        vis_end.push_back(span.end);
        diag.push_back(i + spec.offset(rb.batch));
      }
      const double slope = spec.alibi_slopes.empty() ? 0.0 : spec.alibi_slopes[static_cast<size_t>(rb.head)];
      for (int32_t g = 0; g < rb.rows; g += kItemRows) {
        const int32_t rows = std::min(kItemRows, rb.rows - g);
        // The keys any row of the group sees: a piece outside them needs no work.
        int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
        for (int32_t r = 0; r < rows; ++r) {
          const size_t at = static_cast<size_t>(p.row_offset + g + r);
          if (vis_begin[at] >= vis_end[at]) continue;
          lo = std::min(lo, vis_begin[at]);
          hi = std::max(hi, vis_end[at]);
        }
        for (size_t piece = 0; piece < pieces; ++piece) {
          Item it{};
          it.key_begin = std::max(p.cuts[piece], lo);
          it.key_end = std::min(p.cuts[piece + 1], hi);
          if (it.key_end < it.key_begin) it.key_end = it.key_begin;
          it.kv_offset = int64_t{ki} * spec.seq_kv * d;
          it.row_offset = p.row_offset + g;
          it.out_offset = static_cast<int64_t>(out_doubles);
          it.rows = rows;
          it.alibi_slope = slope;
          p.item_out.push_back(it.out_offset);
          out_doubles += static_cast<size_t>(rows) * static_cast<size_t>(d + 2);
          items.push_back(it);
        }
      }
      planned.push_back(std::move(p));
      ++next;
    }

    DeviceArray<Item> d_items(items.size());
    d_items.upload(items.data(), items.size());
    DeviceArray<double> d_q(q.size()), d_out(out_doubles);
    DeviceArray<int64_t> d_begin(vis_begin.size()), d_end(vis_end.size()), d_diag(diag.size());
    d_q.upload(q.data(), q.size());
    d_begin.upload(vis_begin.data(), vis_begin.size());
    d_end.upload(vis_end.data(), vis_end.size());
    d_diag.upload(diag.data(), diag.size());
    const RowArrays rows{d_q.get(), d_begin.get(), d_end.get(), d_diag.get()};
    // Grids of at most 2^31 - 1 blocks: items in launches of at most that many.
    constexpr size_t kMaxGrid = 0x7fffffff;
    for (size_t first = 0; first < items.size(); first += kMaxGrid) {
      const unsigned count = static_cast<unsigned>(std::min(kMaxGrid, items.size() - first));
      piece_states_kernel<<<count, kThreads, shared_bytes(d)>>>(d_items.get() + first, rows, device_->keys.get(),
                                                                device_->values.get(), d, spec.softcap,
                                                                spec.alibi_slopes.empty() ? 0 : 1, d_out.get());
      check(cudaGetLastError(), "the piece_states kernel's launch");
    }
    check(cudaDeviceSynchronize(), "the piece_states kernel");
    std::vector<double> host(out_doubles);
    d_out.download(host.data(), host.size());

    const auto assemble_block = [&](const Planned& p) {
      const RowBlock& rb = blocks[p.block];
      const size_t pieces = p.cuts.size() - 1, n = static_cast<size_t>(rb.rows), dd = static_cast<size_t>(d);
      PieceStates states;
      states.m.resize(pieces * n);
      states.l.resize(pieces * n);
      states.o.resize(pieces * n * dd);
      size_t item = 0;
      for (size_t g = 0; g < n; g += kItemRows) {
        const size_t rows = std::min<size_t>(kItemRows, n - g);
        for (size_t piece = 0; piece < pieces; ++piece, ++item) {
          const double* src = host.data() + p.item_out[item];
          for (size_t r = 0; r < rows; ++r) {
            states.m[piece * n + g + r] = src[r];
            states.l[piece * n + g + r] = src[rows + r];
            std::copy_n(src + 2 * rows + r * dd, dd, states.o.data() + (piece * n + g + r) * dd);
          }
        }
      }
      out[p.block] = row_block_from_pieces(inputs_, rb, p.cuts, std::move(states));
    };
    // The host's part (each row block's pieces gathered, its prefixes merged) on every core: on
    // one it took longer than the device's.
    std::atomic<size_t> next_planned{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    const auto assemble = [&] {
      try {
        for (size_t k; (k = next_planned.fetch_add(1)) < planned.size();) assemble_block(planned[k]);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        next_planned = planned.size();
      }
    };
    const unsigned threads = std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()),
                                                static_cast<unsigned>(planned.size()));
    std::vector<std::thread> helpers;
    for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(assemble);
    assemble();
    for (auto& t : helpers) t.join();
    if (error) std::rethrow_exception(error);
  }
  return out;
}

}  // namespace ts
