// The kernels on the GPU, beside PyTorch SDPA (scripts/bench_sdpa.py runs both and prints one
// table): Split-K decode (B=8, H=32, Sq=1, Skv=32768, D=128, bf16; splits from the heuristic)
// and FA-1 and FA-2 prefill (B=4, H=16, S=2048, D=64, bf16): the plain kernels (no probes), tracing
// on with nothing recorded (the plain build runs), tracing one head, (prefill) tracing one query
// row (one block records: the rest run the traced build's kernel of blocks that record nothing),
// and (decode) tracing everything; and the decode
// with GQA (32 query heads on 8 kv heads), plain and with a window of 4096 keys and softcap 50.
// Reported: time per run (every kernel of a run; CUDA events; inputs resident on the device;
// mean of 20 runs after 3 warm-up runs; the median of --rounds such means), GB/s (Q read, O
// written, and the K, V rows some query sees read once per kv head, in the dtype) and TFLOP/s
// (4 * B * H * D * visible (query, key) pairs). Each plain shape is checked against the float64
// reference before its time is reported (llm.c's habit); a wrong result is reported, not timed.
//
// A plain program rather than Google Benchmark: Debian ships libbenchmark only as a shared
// library, and this binary must run on a GPU machine without Debian's packages.
//
//   bench_kernels_gpu [--filter SUBSTRING] [--rounds N] [--json FILE] [--no-check]
//   (--rounds N: the benchmarks of one config, its builds and trace modes, timed in turn N rounds
//   over, each reported as the median of its rounds; 1 by default)
//   bench_kernels_gpu --dump DIR    # inputs + outputs as .npy for bench_sdpa.py --check DIR
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "instrumentation/trace/npy.h"
#include "kernels/gpu_timing.h"
#include "kernels/naive_attention.h"
#include "base/random_inputs.h"
#include "kernels/reference.h"
#include "kernels/tiling.h"

namespace ts {
namespace {

AttentionConfig decode_config() {
  AttentionConfig c;
  c.kernel = KernelKind::splitk;
  c.batch = 8;
  c.heads = 32;
  c.seq_q = 1;
  c.seq_kv = 32768;
  c.head_dim = 128;
  c.dtype = DType::bf16;
  return c;
}

// The decode of a GQA model (Llama 3 8B's 32 query heads on 8 kv heads): a quarter of the K/V.
AttentionConfig gqa_decode_config() {
  AttentionConfig c = decode_config();
  c.heads_kv = 8;
  return c;
}

// The same with a causal sliding window of 4096 keys and Gemma 2's softcap of 50.
AttentionConfig gqa_window_softcap_decode_config() {
  AttentionConfig c = gqa_decode_config();
  c.causal = true;
  c.window_left = 4096;
  c.window_right = 0;
  c.softcap = 50.0;
  return c;
}

AttentionConfig prefill_config() {
  AttentionConfig c;
  c.kernel = KernelKind::fa1;
  c.batch = 4;
  c.heads = 16;
  c.seq_q = c.seq_kv = 2048;
  c.head_dim = 64;
  c.dtype = DType::bf16;
  return c;
}

// The same prefill on tensor cores (kernels/fa2_forward.cuh).
AttentionConfig fa2_prefill_config() {
  AttentionConfig c = prefill_config();
  c.kernel = KernelKind::fa2;
  return c;
}

// The same prefill cut into 4 kv splits: Split-K 2 (FA-2's partial pass, kernels/splitk2_partial.cuh)
// and Split-K (its partial on CUDA cores, 8 query rows a tile), each with Split-K's reduce.
AttentionConfig split_prefill_config(KernelKind kernel) {
  AttentionConfig c = prefill_config();
  c.kernel = kernel;
  c.num_splits = 4;
  return c;
}

// The keys some query row sees (the K and V rows read), and (row, key) pairs that count.
KeySpan keys_read(const AttentionConfig& c) {
  return make_tiling(c, kCpuNominalSmCount).mask().rows_keys(0, c.seq_q);
}
double visible_pairs(const AttentionConfig& c) {
  const KernelMask mask = make_tiling(c, kCpuNominalSmCount).mask();
  double n = 0;
  for (int64_t i = 0; i < c.seq_q; ++i) n += double(mask.row_keys(i).end - mask.row_keys(i).begin);
  return n;
}

double bytes_moved(const AttentionConfig& c) {
  const double e = double(dtype_size(c.dtype)), d = double(c.head_dim);
  const KeySpan keys = keys_read(c);
  return double(c.batch) * d * e *
         (2.0 * double(c.heads * c.seq_q) + 2.0 * double(c.kv_heads() * (keys.end - keys.begin)));
}

double flops(const AttentionConfig& c) {
  return 4.0 * double(c.batch * c.heads * c.head_dim) * visible_pairs(c);
}

double max_error(const std::vector<double>& a, const std::vector<double>& ref) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i])) return INFINITY;
    if (a[i] != ref[i]) m = std::max(m, std::abs(a[i] - ref[i]));
  }
  return m;
}

enum class TraceMode { plain, traced_nothing, one_head, one_row, everything };

struct Bench {
  std::string name;
  AttentionConfig config;
  TraceMode mode;
};

// The inputs as the reference reads them: every (batch, query head) and (batch, kv head) pair.
HeadInputs head_inputs(const AttentionConfig& c, const AttentionInputs& in) {
  HeadInputs h;
  for (int32_t b = 0; b < c.batch; ++b) {
    for (int32_t hd = 0; hd < c.heads; ++hd) h.q_pairs.push_back({b, hd});
    for (int32_t hd = 0; hd < c.kv_heads(); ++hd) h.kv_pairs.push_back({b, hd});
  }
  h.q = in.q;
  h.k = in.k;
  h.v = in.v;
  h.q.shape = {c.batch * c.heads, c.seq_q, c.head_dim};
  h.k.shape = h.v.shape = {c.batch * c.kv_heads(), c.seq_kv, c.head_dim};
  return h;
}

const AttentionInputs& inputs_for(const AttentionConfig& c) {
  static std::map<std::string, AttentionInputs> cache;
  const std::string key = nlohmann::json(c).dump();
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_random_inputs(c, {.seed = 2024})).first;
  return it->second;
}

LaunchRequest bench_request(const Bench& b) {
  LaunchRequest req;
  req.config = b.config;
  req.backend = Backend::gpu;
  switch (b.mode) {
    case TraceMode::plain: break;
    case TraceMode::traced_nothing:  // tracing on, every stage filtered out (the plan then
      req.trace.enabled = true;       // launches the plain build: PlannedKernel::variant)
      req.trace.filter.stage_mask = 0;
      break;
    case TraceMode::one_row:  // one block of the grid records: the others' cost in the
      req.trace.enabled = true;  // traced build's kernel of blocks that record nothing
      req.trace.filter.batch_end = 1;
      req.trace.filter.head_end = 1;
      req.trace.filter.query_begin = static_cast<int32_t>(b.config.seq_q / 2);
      req.trace.filter.query_end = req.trace.filter.query_begin + 1;
      break;
    case TraceMode::one_head:
      req.trace.enabled = true;
      req.trace.filter.batch_end = 1;
      req.trace.filter.head_end = 1;
      break;
    case TraceMode::everything:
      req.trace.enabled = true;
      break;
  }
  return req;
}

// Benchmarks of one config (its builds and trace modes), timed in turn (time_in_turn_on_gpu) over
// `rounds` rounds of 20 runs after 3 warm-up runs; a result per benchmark.
std::vector<nlohmann::json> run_benches(const std::vector<const Bench*>& group, bool check, int rounds) {
  const AttentionInputs& in = inputs_for(group.front()->config);
  std::vector<LaunchRequest> requests;
  for (const Bench* b : group) requests.push_back(bench_request(*b));
  const std::vector<GpuTiming> timings = time_in_turn_on_gpu(requests, in, 3, 20, rounds);
  std::vector<nlohmann::json> results;
  for (size_t i = 0; i < group.size(); ++i) {
    const Bench& b = *group[i];
    const GpuTiming& t = timings[i];
    nlohmann::json r;
    r["name"] = b.name;
    r["config"] = b.config;
    r["device"] = t.outcome.device;
    r["num_splits"] = t.outcome.config.num_splits;
    r["events"] = t.outcome.events.size();
    r["dropped"] = t.outcome.events.dropped;
    if (check && b.mode == TraceMode::plain) {
      const AttentionSpec spec = attention_spec(t.outcome.config);
      const HeadInputs heads = head_inputs(t.outcome.config, in);
      const ReferenceOutput ref = reference_output(spec, heads);
      const double err = max_error(t.outcome.o.to_double(), ref.o);
      const double naive = max_error(naive_attention(spec, heads).o.to_double(), ref.o);
      r["max_error"] = err;
      r["naive_error"] = naive;
      if (!(err <= 2.0 * naive + 1e-4)) {
        r["error"] = "wrong result (max |O - ref64| " + std::to_string(err) + " > 2 x naive " +
                     std::to_string(naive) + "): not timed";
        results.push_back(r);
        continue;
      }
    }
    r["ms"] = t.ms_per_run;
    r["ms_rounds"] = t.round_ms;
    r["GB/s"] = bytes_moved(b.config) / (t.ms_per_run / 1e3) / 1e9;
    r["TFLOP/s"] = flops(b.config) / (t.ms_per_run / 1e3) / 1e12;
    results.push_back(r);
  }
  return results;
}

// --dump DIR: a few configs' inputs and outputs for bench_sdpa.py --check (bf16 inputs are
// stored as their uint16 bit patterns, numpy having no bf16).
int dump(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  struct Case {
    const char* name;
    KernelKind kernel;
    DType dtype;
    int64_t b, h, sq, skv, d;
    bool causal;
  };
  const Case cases[] = {
      {"decode_bf16", KernelKind::splitk, DType::bf16, 2, 4, 1, 4096, 128, false},
      {"splitk_fp16_causal", KernelKind::splitk, DType::f16, 1, 2, 100, 1000, 64, true},
      {"prefill_bf16", KernelKind::fa1, DType::bf16, 1, 2, 512, 512, 64, false},
      {"prefill_fp32_causal", KernelKind::fa1, DType::f32, 1, 2, 300, 700, 128, true},
      {"prefill_fp16_d256", KernelKind::fa1, DType::f16, 1, 1, 200, 200, 256, false},
      {"fa1_bf16_d32_causal_sq_gt_skv", KernelKind::fa1, DType::bf16, 1, 2, 150, 100, 32, true},
      {"fa2_prefill_bf16", KernelKind::fa2, DType::bf16, 1, 2, 512, 512, 64, false},
      {"fa2_fp16_d128_causal", KernelKind::fa2, DType::f16, 1, 2, 300, 700, 128, true},
  };
  nlohmann::json index = nlohmann::json::array();
  for (const Case& k : cases) {
    AttentionConfig c;
    c.kernel = k.kernel;
    c.dtype = k.dtype;
    c.batch = k.b;
    c.heads = k.h;
    c.seq_q = k.sq;
    c.seq_kv = k.skv;
    c.head_dim = k.d;
    c.causal = k.causal;
    const AttentionInputs in = make_random_inputs(c, {.seed = 7});
    LaunchRequest req;
    req.config = c;
    req.backend = Backend::gpu;
    const LaunchOutcome out = launch_attention(req, in);
    const ElemType input_type = k.dtype == DType::f32 ? ElemType::F32
                                : k.dtype == DType::f16 ? ElemType::F16
                                                        : ElemType::U16;
    const std::string base = (dir / k.name).string();
    write_npy(base + ".q.npy", input_type, in.q.shape, in.q.bytes.data());
    write_npy(base + ".k.npy", input_type, in.k.shape, in.k.bytes.data());
    write_npy(base + ".v.npy", input_type, in.v.shape, in.v.bytes.data());
    const std::vector<float> o = out.o.to_float();
    write_npy(base + ".o.npy", ElemType::F32, out.o.shape, o.data());
    const std::vector<int64_t> lse_shape{c.batch, c.heads, c.seq_q};
    write_npy(base + ".lse.npy", ElemType::F32, lse_shape, out.lse.data());
    nlohmann::json entry = out.config;
    entry["name"] = k.name;
    entry["device"] = out.device;
    index.push_back(entry);
    std::printf("dumped %s (%s)\n", k.name, out.device.c_str());
  }
  std::ofstream(dir / "cases.json") << index.dump(2) << "\n";
  return 0;
}

int run(int argc, char** argv) {
  std::string filter, json_path;
  bool check = true;
  int rounds = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dump" && i + 1 < argc) return dump(argv[++i]);
    if (a == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
      if (rounds < 1) {
        std::fprintf(stderr, "bench_kernels_gpu: --rounds takes a count of 1 or more\n");
        return 2;
      }
    } else if (a == "--no-check") {
      check = false;
    } else {
      std::fprintf(stderr,
                   "usage: bench_kernels_gpu [--filter SUBSTRING] [--rounds N] [--json FILE] [--no-check] | --dump DIR\n");
      return 2;
    }
  }
  std::string why;
  if (!gpu_available(&why)) {
    std::fprintf(stderr, "bench_kernels_gpu: %s\n", why.c_str());
    return 1;
  }
  const Bench benches[] = {
      {"splitk_decode_B8_H32_Skv32768_D128_bf16", decode_config(), TraceMode::plain},
      {"splitk_decode (tracing on, nothing recorded)", decode_config(), TraceMode::traced_nothing},
      {"splitk_decode (tracing batch 0 head 0)", decode_config(), TraceMode::one_head},
      {"splitk_decode (tracing everything)", decode_config(), TraceMode::everything},
      {"splitk_decode_gqa_H32_on_8", gqa_decode_config(), TraceMode::plain},
      {"splitk_decode_gqa (window 4096, softcap 50)", gqa_window_softcap_decode_config(), TraceMode::plain},
      {"fa1_prefill_B4_H16_S2048_D64_bf16", prefill_config(), TraceMode::plain},
      {"fa1_prefill (tracing on, nothing recorded)", prefill_config(), TraceMode::traced_nothing},
      {"fa1_prefill (tracing batch 0 head 0)", prefill_config(), TraceMode::one_head},
      {"fa1_prefill (tracing one query row)", prefill_config(), TraceMode::one_row},
      {"fa2_prefill_B4_H16_S2048_D64_bf16", fa2_prefill_config(), TraceMode::plain},
      {"fa2_prefill (tracing on, nothing recorded)", fa2_prefill_config(), TraceMode::traced_nothing},
      {"fa2_prefill (tracing batch 0 head 0)", fa2_prefill_config(), TraceMode::one_head},
      {"fa2_prefill (tracing one query row)", fa2_prefill_config(), TraceMode::one_row},
      {"splitk2_prefill_B4_H16_S2048_D64_bf16_4splits", split_prefill_config(KernelKind::splitk2), TraceMode::plain},
      {"splitk_prefill_B4_H16_S2048_D64_bf16_4splits", split_prefill_config(KernelKind::splitk), TraceMode::plain},
  };
  // The selected benchmarks in groups of one config (consecutive in the list), each group timed in
  // turn: a kernel's builds and trace modes are measured round after round beside each other.
  std::vector<std::vector<const Bench*>> groups;
  for (const Bench& b : benches) {
    if (!filter.empty() && b.name.find(filter) == std::string::npos) continue;
    if (groups.empty() || !(groups.back().front()->config == b.config)) groups.emplace_back();
    groups.back().push_back(&b);
  }
  std::vector<nlohmann::json> results;
  std::printf("%-48s %10s %9s %9s %7s %8s%s\n", "benchmark", "ms", "GB/s", "TFLOP/s", "splits", "events",
              rounds > 1 ? "  rounds: min-max ms" : "");
  for (const auto& group : groups) {
    std::vector<nlohmann::json> rs;
    try {
      rs = run_benches(group, check, rounds);
    } catch (const std::exception& e) {
      for (const Bench* b : group) rs.push_back({{"name", b->name}, {"error", e.what()}});
    }
    for (const nlohmann::json& r : rs) {
      const std::string name = r["name"].get<std::string>();
      if (r.contains("error")) {
        std::printf("%-48s ERROR: %s\n", name.c_str(), r["error"].get<std::string>().c_str());
      } else {
        std::printf("%-48s %10.4f %9.1f %9.3f %7d %8zu", name.c_str(), r["ms"].get<double>(),
                    r["GB/s"].get<double>(), r["TFLOP/s"].get<double>(), r["num_splits"].get<int>(),
                    r["events"].get<size_t>());
        if (rounds > 1) {
          const std::vector<double> ms = r["ms_rounds"].get<std::vector<double>>();
          std::printf("  %.4f-%.4f", *std::min_element(ms.begin(), ms.end()), *std::max_element(ms.begin(), ms.end()));
        }
        std::printf("\n");
      }
      std::fflush(stdout);
      results.push_back(r);
    }
  }
  if (!results.empty() && results[0].contains("device"))
    std::printf("device: %s\n", results[0]["device"].get<std::string>().c_str());
  if (!json_path.empty()) std::ofstream(json_path) << nlohmann::json(results).dump(2) << "\n";
  for (const auto& r : results)
    if (r.contains("error")) return 1;
  return 0;
}

}  // namespace
}  // namespace ts

int main(int argc, char** argv) {
  try {
    return ts::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_kernels_gpu: %s\n", e.what());
    return 1;
  }
}
