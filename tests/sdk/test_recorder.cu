// The recorder (tilescope/recorder.h over libtilescope_recorder) and the probe API on tilescope's
// CPU path, as a user's program drives them: the three ways of writing an event and the
// `__device__` symbol, slot plans, full buffers and filters, the tensor layouts real code uses
// (bhsd, bshd, strided, GQA), output and base-2 LSE, names; and the errors a user meets, each
// naming what to change. Traces are read back with tilescope's own reader.
#define TILESCOPE_TRACE 1  // probes compiled in (probes_compiled_out.cu has them out)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <tilescope/portable.h>
#include <tilescope/probe.h>
#include <tilescope/recorder.h>

#include "instrumentation/trace/trace_file.h"
#include "tests/support/temp_dir.h"
#include "tests/sdk/probes_compiled_out.h"

TILESCOPE_TRACE_SYMBOL(g_test_trace);

namespace {

constexpr int kHeadDim = 64;

// Each thread of a (32, 2) block records its own row (path 1); each warp records two rows held by
// its lanes (path 2). Values encode where they came from: m = 1000 * block + linear thread.
__global__ void record_paths(tilescope::TraceView view) {
  const int linear = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  const int block = static_cast<int>(blockIdx.x);
  const int q = block * 64 + linear;  // 4 blocks x 64 rows = seq_q 256
  float o[kHeadDim];
  for (int c = 0; c < kHeadDim; ++c) o[c] = static_cast<float>(c);
  tilescope::record(view, tilescope::state(0, 0, 0, q, 1).keys(0, 128).step(0), 1000.0f * block + linear, 1.0f, o);

  const int warp = linear / 32, lane = linear % 32;
  const tilescope::StateDesc desc = tilescope::state(1, 0, 1, block * 64 + warp * 2, 2).keys(0, 64).keys(128, 192).step(warp);
  if (const tilescope::Event ev = tilescope::open_warp(view, desc)) {
    for (int r = 0; r < 2; ++r) {
      ev.o_row(r)[lane] = static_cast<float>(lane);
      ev.o_row(r)[lane + 32] = static_cast<float>(lane + 32);
    }
    if (lane == 0) {
      for (int r = 0; r < 2; ++r) {
        ev.m()[r] = static_cast<float>(block);
        ev.l()[r] = static_cast<float>(warp);
      }
      ev.commit(desc);
    }
  }
}

// Each block records `per_block` events at planned slots (path 3), all threads calling.
__global__ void record_planned(tilescope::TraceView view, int per_block) {
  for (int i = 0; i < per_block; ++i) {
    const tilescope::StateDesc desc = tilescope::state(0, 0, 0, static_cast<int>(blockIdx.x), 1).keys(0, 8).step(i);
    const tilescope::Event ev = tilescope::open_planned(view, desc, i);
    if (ev) {
      ev.o_row(0)[threadIdx.x] = static_cast<float>(i);
      if (threadIdx.x == 0) {
        ev.m()[0] = 0.0f;
        ev.l()[0] = 1.0f;
        ev.commit(desc);
      }
    }
  }
}

// The kernel keeps its signature: the view comes from g_test_trace.
__global__ void record_through_symbol() {
  float o[kHeadDim] = {};
  tilescope::record(g_test_trace, tilescope::state(0, 0, 0, static_cast<int>(threadIdx.x), 1).keys(0, 8), 0.0f, 1.0f, o);
}

// One thread records a description the recorder must refuse.
__global__ void record_one(tilescope::TraceView view, int stage, int rows, int key_ranges) {
  float m[4] = {}, l[4] = {}, o[4 * kHeadDim] = {};
  tilescope::StateDesc desc = tilescope::state(stage, 0, 0, 0, rows);
  for (int k = 0; k < key_ranges; ++k) desc.keys(k, k + 1);
  tilescope::record(view, desc, m, l, o, kHeadDim);
}

tilescope::Attention small_attention() {
  tilescope::Attention a;
  a.batch = 1;
  a.heads_q = 2;
  a.seq_q = 256;
  a.seq_kv = 256;
  a.head_dim = kHeadDim;
  return a;
}

std::vector<tilescope::Stage> two_stages() {
  return {{"per_thread", tilescope::StageKind::state}, {"per_warp", tilescope::StageKind::merge}};
}

// Q, K, V of the attention as one contiguous [batch, heads, seq, dim] float array each.
struct Inputs {
  std::vector<float> q, k, v;
  explicit Inputs(const tilescope::Attention& a) {
    const int64_t hkv = a.heads_kv == 0 ? a.heads_q : a.heads_kv;
    q.resize(static_cast<size_t>(a.batch * a.heads_q * a.seq_q * a.head_dim));
    k.resize(static_cast<size_t>(a.batch * hkv * a.seq_kv * a.head_dim));
    v.resize(k.size());
    for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i % 97) * 0.01f;
    for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(i % 89) * 0.01f;
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 83) * 0.01f;
  }
};

void set_bhsd_inputs(tilescope::Recorder& rec, const Inputs& in, const tilescope::Attention& a) {
  const int64_t hkv = a.heads_kv == 0 ? a.heads_q : a.heads_kv;
  rec.set_inputs(tilescope::bhsd(in.q.data(), a.batch, a.heads_q, a.seq_q, a.head_dim),
                 tilescope::bhsd(in.k.data(), a.batch, hkv, a.seq_kv, a.head_dim),
                 tilescope::bhsd(in.v.data(), a.batch, hkv, a.seq_kv, a.head_dim));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tilescope::RecorderError& e) {
    return e.what();
  }
  return "(no RecorderError)";
}

class RecorderTest : public ::testing::Test {
 protected:
  std::string path(const char* name) const { return (dir_.path() / name).string(); }
  ts::test::TempDir dir_;
};

TEST_F(RecorderTest, RecordsEveryPathInTheKernelsOwnOrder) {
  const tilescope::Attention a = small_attention();
  // The first stage says how it computes its states (the yardstick computes them the same way).
  std::vector<tilescope::Stage> stages = two_stages();
  stages[0].p_rounded = stages[0].exp2_folded = true;
  tilescope::Recorder rec(a, stages);
  rec.set_names("record_paths", "every path");
  const tilescope::TraceView view = rec.start({.capacity = 1024, .max_rows = 2});
  TILESCOPE_LAUNCH(record_paths, 4, dim3(32, 2))(view);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const Inputs in(a);
  set_bhsd_inputs(rec, in, a);
  rec.write(path("paths.trace.safetensors"));
  EXPECT_EQ(rec.num_events(), 4 * 64 + 4 * 2);
  EXPECT_EQ(rec.dropped_events(), 0u);

  const ts::TraceFile t = ts::TraceFile::open(path("paths.trace.safetensors"));
  ASSERT_EQ(t.num_events(), 264u);
  ASSERT_EQ(t.stages().size(), 2u);
  EXPECT_EQ(t.stages()[0].name, "per_thread");
  EXPECT_EQ(t.stages()[1].pass, 1);  // a merge's default
  EXPECT_TRUE(t.stages()[0].p_rounded && t.stages()[0].exp2_folded);
  EXPECT_FALSE(t.stages()[1].p_rounded || t.stages()[1].exp2_folded);
  EXPECT_EQ(t.requested_events(), 264u);
  EXPECT_EQ(*t.metadata_value("kernel"), "record_paths");
  EXPECT_EQ(*t.metadata_value("run"), "every path");
  EXPECT_EQ(*t.metadata_value("backend"), "cpu");
  EXPECT_NE(t.metadata_value("tool_version")->find("tilescope recorder"), std::string::npos);
  // Kernel order: the pass-0 stage first, by block then rows; then the merges by block, step.
  for (size_t i = 0; i < 256; ++i) {
    const tilescope::EventHeader& h = t.header(i);
    ASSERT_EQ(h.stage, 0) << i;
    EXPECT_EQ(h.q_begin, static_cast<int32_t>(i));
    EXPECT_EQ(h.block, static_cast<int32_t>(i / 64));
    EXPECT_EQ(t.m(i)[0], 1000.0f * static_cast<float>(i / 64) + static_cast<float>(i % 64));
    EXPECT_EQ(t.o(i)[63], 63.0f);
    EXPECT_GE(h.where, 0);
  }
  for (size_t i = 256; i < 264; ++i) {
    const tilescope::EventHeader& h = t.header(i);
    ASSERT_EQ(h.stage, 1) << i;
    const int32_t block = static_cast<int32_t>((i - 256) / 2), warp = static_cast<int32_t>((i - 256) % 2);
    EXPECT_EQ(h.block, block);
    EXPECT_EQ(h.step, warp);
    EXPECT_EQ(h.rows, 2);
    EXPECT_EQ(h.num_key_ranges, 2);
    EXPECT_EQ(h.keys[1].begin, 128);
    // Both warps of the 2-D block took their own slot and wrote every lane's columns.
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(t.m(i)[static_cast<size_t>(r)], static_cast<float>(block));
      EXPECT_EQ(t.l(i)[static_cast<size_t>(r)], static_cast<float>(warp));
      for (int c = 0; c < kHeadDim; ++c) EXPECT_EQ(t.o(i)[static_cast<size_t>(r * kHeadDim + c)], static_cast<float>(c));
    }
  }
}

TEST_F(RecorderTest, PlannedSlotsKeepTheirPlanAndCountWhatExceedsIt) {
  tilescope::Attention a = small_attention();
  a.heads_q = 1;
  tilescope::Recorder rec(a, {{"planned", tilescope::StageKind::state}});
  const tilescope::TraceView view = rec.start({.capacity = 16, .max_rows = 1, .events_per_block = 2});
  TILESCOPE_LAUNCH(record_planned, 8, kHeadDim)(view, 3);  // one event more than planned, per block
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const Inputs in(a);
  set_bhsd_inputs(rec, in, a);
  rec.write(path("planned.trace.safetensors"));
  const ts::TraceFile t = ts::TraceFile::open(path("planned.trace.safetensors"));
  ASSERT_EQ(t.num_events(), 16u);
  EXPECT_EQ(t.dropped_events(), 8u);
  EXPECT_EQ(t.requested_events(), 24u);
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(t.header(i).block, static_cast<int32_t>(i / 2));
    EXPECT_EQ(t.header(i).step, static_cast<int32_t>(i % 2));
    EXPECT_EQ(t.o(i)[5], static_cast<float>(i % 2));
  }
}

TEST_F(RecorderTest, AFullBufferKeepsTheFirstEventsAndCountsTheRestExactly) {
  const tilescope::Attention a = small_attention();
  tilescope::Recorder rec(a, two_stages());
  const tilescope::TraceView view = rec.start({.capacity = 5, .max_rows = 2});
  TILESCOPE_LAUNCH(record_paths, 4, dim3(32, 2))(view);
  const Inputs in(a);
  set_bhsd_inputs(rec, in, a);
  rec.write(path("full.trace.safetensors"));
  const ts::TraceFile t = ts::TraceFile::open(path("full.trace.safetensors"));
  EXPECT_EQ(t.num_events(), 5u);
  EXPECT_EQ(t.dropped_events(), 264u - 5u);
  EXPECT_EQ(t.requested_events(), 264u);
}

TEST_F(RecorderTest, FiltersApplyWhereEventsAreMadeAndChooseTheStoredInputs) {
  tilescope::Attention a = small_attention();
  a.heads_q = 4;
  a.heads_kv = 2;
  tilescope::Recorder rec(a, two_stages());
  tilescope::BufferOptions options{.capacity = 1024, .max_rows = 2};
  options.filter.head_begin = 1;  // head 0's per-thread events and inputs are not kept
  options.filter.query_end = 64;  // rows of block 0 only
  const tilescope::TraceView view = rec.start(options);
  TILESCOPE_LAUNCH(record_paths, 4, dim3(32, 2))(view);
  const Inputs in(a);
  set_bhsd_inputs(rec, in, a);
  rec.write(path("filtered.trace.safetensors"));
  const ts::TraceFile t = ts::TraceFile::open(path("filtered.trace.safetensors"));
  // Head 0 records stage 0, head 1 stage 1: only head 1's events of block 0 remain.
  ASSERT_EQ(t.num_events(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(t.header(i).head, 1);
    EXPECT_LT(t.header(i).q_begin, 64);
  }
  const std::optional<ts::HeadInputs> inputs = t.read_inputs();
  ASSERT_TRUE(inputs.has_value());
  EXPECT_EQ(inputs->q_pairs.size(), 3u);   // heads 1, 2, 3
  EXPECT_EQ(inputs->kv_pairs.size(), 2u);  // kv heads 0 (of head 1) and 1
  EXPECT_EQ(inputs->q_index(0, 0), -1);
}

TEST_F(RecorderTest, EveryLayoutStoresTheSameInputsAndGqaKeepsKvHeadsOnce) {
  tilescope::Attention a;
  a.batch = 2;
  a.heads_q = 4;
  a.heads_kv = 2;
  a.seq_q = 3;
  a.seq_kv = 5;
  a.head_dim = 8;
  // One logical tensor x[b][h][s][d] = value(b, h, s, d), stored three ways.
  const auto value = [](int64_t b, int64_t h, int64_t s, int64_t d) {
    return static_cast<float>(b * 1000 + h * 100 + s * 10 + d);
  };
  struct Stored {
    std::vector<float> bhsd, bshd, padded;  // padded: [b][s][h][d + 3 spare], a view of it
  };
  const auto store = [&](int64_t heads, int64_t seq) {
    Stored st;
    st.bhsd.resize(static_cast<size_t>(a.batch * heads * seq * a.head_dim));
    st.bshd.resize(st.bhsd.size());
    st.padded.assign(static_cast<size_t>(a.batch * seq * heads * (a.head_dim + 3)), -1.0f);
    for (int64_t b = 0; b < a.batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t s = 0; s < seq; ++s)
          for (int64_t d = 0; d < a.head_dim; ++d) {
            const float x = value(b, h, s, d);
            st.bhsd[static_cast<size_t>(((b * heads + h) * seq + s) * a.head_dim + d)] = x;
            st.bshd[static_cast<size_t>(((b * seq + s) * heads + h) * a.head_dim + d)] = x;
            st.padded[static_cast<size_t>(((b * seq + s) * heads + h) * (a.head_dim + 3) + d)] = x;
          }
    return st;
  };
  const Stored q = store(a.heads_q, a.seq_q), kv = store(a.heads_kv, a.seq_kv);
  const auto padded = [&](const std::vector<float>& data, int64_t heads, int64_t seq) {
    const int64_t row = a.head_dim + 3;
    return tilescope::strided(data.data(), {a.batch, heads, seq, a.head_dim},
                              {seq * heads * row, row, heads * row, 1});
  };
  std::vector<std::vector<std::byte>> stored;
  for (int layout = 0; layout < 3; ++layout) {
    tilescope::Recorder rec(a, {{"s", tilescope::StageKind::state}});
    rec.start({.capacity = 1});
    if (layout == 0)
      rec.set_inputs(tilescope::bhsd(q.bhsd.data(), 2, 4, 3, 8), tilescope::bhsd(kv.bhsd.data(), 2, 2, 5, 8),
                     tilescope::bhsd(kv.bhsd.data(), 2, 2, 5, 8));
    else if (layout == 1)
      rec.set_inputs(tilescope::bshd(q.bshd.data(), 2, 3, 4, 8), tilescope::bshd(kv.bshd.data(), 2, 5, 2, 8),
                     tilescope::bshd(kv.bshd.data(), 2, 5, 2, 8));
    else
      rec.set_inputs(padded(q.padded, 4, 3), padded(kv.padded, 2, 5), padded(kv.padded, 2, 5));
    const std::string p = path(("layout" + std::to_string(layout) + ".trace.safetensors").c_str());
    rec.write(p);
    const ts::HeadInputs in = *ts::TraceFile::open(p).read_inputs();
    ASSERT_EQ(in.q_pairs.size(), 8u);
    ASSERT_EQ(in.kv_pairs.size(), 4u);  // 2 batches x 2 kv heads, each once
    EXPECT_EQ(in.k.shape, (std::vector<int64_t>{4, 5, 8}));
    const int32_t qi = in.q_index(1, 3), ki = in.kv_index(1, 1);
    EXPECT_EQ(in.q.get_float(int64_t{qi} * 3 * 8 + 2 * 8 + 7), value(1, 3, 2, 7));
    EXPECT_EQ(in.k.get_float(int64_t{ki} * 5 * 8 + 4 * 8 + 1), value(1, 1, 4, 1));
    std::vector<std::byte> all = in.q.bytes;
    all.insert(all.end(), in.k.bytes.begin(), in.k.bytes.end());
    stored.push_back(std::move(all));
  }
  EXPECT_EQ(stored[0], stored[1]);
  EXPECT_EQ(stored[0], stored[2]);
}

TEST_F(RecorderTest, OutputsKeepTheirDtypeAndABase2LseIsStoredInNaturalLog) {
  tilescope::Attention a = small_attention();
  a.seq_q = 4;
  a.seq_kv = 4;
  tilescope::Recorder rec(a, {{"s", tilescope::StageKind::state}});
  rec.start({.capacity = 1});
  std::vector<__nv_bfloat16> q(2 * 4 * kHeadDim), out(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = __float2bfloat16(static_cast<float>(i % 7));
    out[i] = __float2bfloat16(static_cast<float>(i % 5));
  }
  std::vector<float> lse2 = {1, 2, 3, 4, 5, 6, 7, 8};  // [1, 2, 4]
  rec.set_inputs(tilescope::bshd(q.data(), 1, 4, 2, kHeadDim), tilescope::bshd(q.data(), 1, 4, 2, kHeadDim),
                 tilescope::bshd(q.data(), 1, 4, 2, kHeadDim));
  rec.set_output(tilescope::bshd(out.data(), 1, 4, 2, kHeadDim),
                 tilescope::lse_bhs(lse2.data(), 1, 2, 4, tilescope::LseBase::base2));
  rec.write(path("output.trace.safetensors"));
  const ts::TraceFile t = ts::TraceFile::open(path("output.trace.safetensors"));
  EXPECT_EQ(t.attention().dtype, ts::DType::bf16);
  const ts::HostTensor o = *t.read_output();
  EXPECT_EQ(o.dtype, ts::DType::bf16);
  EXPECT_EQ(o.shape, (std::vector<int64_t>{1, 2, 4, kHeadDim}));
  // [b, h, s, d] from the bshd source: element (0, 1, 3, 5) was out[(3 * 2 + 1) * 64 + 5].
  EXPECT_EQ(o.get_float((1 * 4 + 3) * kHeadDim + 5), static_cast<float>(((3 * 2 + 1) * kHeadDim + 5) % 5));
  const std::vector<float> lse = *t.read_output_lse();
  ASSERT_EQ(lse.size(), 8u);
  EXPECT_NEAR(lse[5], 6.0 * std::log(2.0), 1e-6);
}

// A kernel that rounds P to the input dtype before P V says so in its stage table; the trace
// carries it to the analysis (the stage's yardstick rounds P too), and stages that do not say so
// read false.
TEST_F(RecorderTest, AStageDeclaresThatItRoundsP) {
  tilescope::Attention a = small_attention();
  tilescope::Recorder rec(a, {{"step", tilescope::StageKind::state, -1, true}, {"out", tilescope::StageKind::final}});
  rec.start({.capacity = 1});
  const Inputs in(a);
  set_bhsd_inputs(rec, in, a);
  rec.write(path("p_rounded.trace.safetensors"));
  const ts::TraceFile t = ts::TraceFile::open(path("p_rounded.trace.safetensors"));
  ASSERT_EQ(t.stages().size(), 2u);
  EXPECT_TRUE(t.stages()[0].p_rounded);
  EXPECT_EQ(t.stages()[0].pass, 0);
  EXPECT_FALSE(t.stages()[1].p_rounded);
}

TEST_F(RecorderTest, TheSymbolIsSetForTheRecordingAndClearedAtItsEnd) {
  tilescope::Attention a = small_attention();
  a.heads_q = 1;
  {
    tilescope::Recorder rec(a, {{"s", tilescope::StageKind::state}});
    EXPECT_NE(error_of([&] { rec.bind_symbol(g_test_trace); }).find("bind_symbol before start()"), std::string::npos);
    rec.start({.capacity = 64});
    rec.bind_symbol(g_test_trace);
    EXPECT_NE(g_test_trace.headers, nullptr);
    TILESCOPE_LAUNCH(record_through_symbol, 1, 32)();
    const Inputs in(a);
    set_bhsd_inputs(rec, in, a);
    rec.collect();
    EXPECT_EQ(rec.num_events(), 32);
  }
  EXPECT_EQ(g_test_trace.headers, nullptr);  // tracing off: no kernel writes into a freed buffer
  TILESCOPE_LAUNCH(record_through_symbol, 1, 32)();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(RecorderTest, ProbesCompiledOutRecordNothing) {
  tilescope::Recorder rec(small_attention(), two_stages());
  const tilescope::TraceView view = rec.start({.capacity = 64});
  EXPECT_EQ(tilescope_test::records_with_probes_compiled_out(view), 0);
  rec.collect();
  EXPECT_EQ(rec.num_events(), 0);
}

TEST_F(RecorderTest, EventsItCannotStoreAreRefusedWithWhatToChange) {
  const tilescope::Attention a = small_attention();
  const Inputs in(a);
  const auto refusal = [&](int stage, int rows, int key_ranges) {
    tilescope::Recorder rec(a, two_stages());
    const tilescope::TraceView view = rec.start({.capacity = 4, .max_rows = 2});
    TILESCOPE_LAUNCH(record_one, 1, 1)(view, stage, rows, key_ranges);
    set_bhsd_inputs(rec, in, a);
    return error_of([&] { rec.write(path("refused.trace.safetensors")); });
  };
  EXPECT_NE(refusal(0, 3, 1).find("BufferOptions::max_rows >= 3"), std::string::npos) << refusal(0, 3, 1);
  EXPECT_NE(refusal(5, 1, 1).find("declare every stage the kernel writes"), std::string::npos) << refusal(5, 1, 1);
  EXPECT_NE(refusal(0, 1, 9).find("at most 8 key ranges"), std::string::npos) << refusal(0, 1, 9);
  EXPECT_FALSE(std::filesystem::exists(path("refused.trace.safetensors")));  // nothing written
  EXPECT_EQ(refusal(0, 1, 8), "(no RecorderError)");
}

TEST_F(RecorderTest, DescriptionsAndTensorsItCannotUseAreRefusedWithWhatToChange) {
  tilescope::Attention a = small_attention();
  const Inputs in(a);
  const auto message = [&](const std::function<void(tilescope::Recorder&)>& f) {
    return error_of([&] {
      tilescope::Recorder rec(a, two_stages());
      f(rec);
    });
  };
  const auto contains = [](const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
  };
  // The tensors' dims are checked against the attention, named in attention order.
  std::string m = message([&](tilescope::Recorder& r) {
    r.set_inputs(tilescope::bhsd(in.q.data(), 1, 3, 256, kHeadDim), tilescope::bhsd(in.k.data(), 1, 2, 256, kHeadDim),
                 tilescope::bhsd(in.v.data(), 1, 2, 256, kHeadDim));
  });
  EXPECT_TRUE(contains(m, "Q has heads = 3 but the Attention says 2")) << m;
  std::vector<__half> half_k(in.k.size());
  m = message([&](tilescope::Recorder& r) {
    r.set_inputs(tilescope::bhsd(in.q.data(), 1, 2, 256, kHeadDim), tilescope::bhsd(half_k.data(), 1, 2, 256, kHeadDim),
                 tilescope::bhsd(in.v.data(), 1, 2, 256, kHeadDim));
  });
  EXPECT_TRUE(contains(m, "Q, K and V must have one dtype")) << m;
  m = message([&](tilescope::Recorder& r) {
    r.start({.capacity = 4});
    r.collect();
    r.write(path("no_inputs.trace.safetensors"));
  });
  EXPECT_TRUE(contains(m, "call set_inputs(Q, K, V) before write")) << m;
  m = message([&](tilescope::Recorder& r) { r.start({.capacity = 0}); });
  EXPECT_TRUE(contains(m, "capacity = 0")) << m;
  m = message([&](tilescope::Recorder& r) { r.set_metadata("stages", "x"); });
  EXPECT_TRUE(contains(m, "written by tilescope itself")) << m;
  m = message([&](tilescope::Recorder& r) { r.collect(); });
  EXPECT_TRUE(contains(m, "collect() before start()")) << m;

  a.heads_kv = 3;  // does not divide heads_q = 2
  m = message([](tilescope::Recorder&) {});
  EXPECT_TRUE(contains(m, "the Attention description is invalid")) << m;
  a.heads_kv = 0;
  m = error_of([&] { tilescope::Recorder rec(a, {{"same", tilescope::StageKind::state}, {"same", tilescope::StageKind::merge}}); });
  EXPECT_TRUE(contains(m, "declared twice")) << m;
  m = error_of([&] { tilescope::Recorder rec(a, {}); });
  EXPECT_TRUE(contains(m, "no stages declared")) << m;
}

}  // namespace
