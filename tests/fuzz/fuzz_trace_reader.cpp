// libFuzzer target: the trace reader (formats 2 and 1) on arbitrary bytes. Every input must
// either open (and then every event and missing event must index the stage table, every
// payload, tensor and input be readable in bounds) or be refused with a TraceFormatError. Any other exception, a crash, a sanitizer report, a leak or a hang is a
// bug. Built with -fsanitize=fuzzer,address,undefined in the `fuzz` preset; tests/fuzz/
// CMakeLists.txt runs it for a bounded time from a corpus written by make_fuzz_corpus.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "instrumentation/trace/trace_file.h"

namespace {

volatile float g_sink;  // keeps the reads that ASan checks from being optimised away

void read_every_byte(const ts::SafetensorsFile& file) {
  float acc = 0.0f;
  for (const ts::TensorInfo& t : file.tensors()) {
    const auto bytes = file.bytes(t);
    for (std::byte b : bytes) acc += static_cast<float>(std::to_integer<int>(b));
    if (t.type == ts::ElemType::F32) {
      const ts::TensorView<float> v = file.view<float>(t);
      for (float x : v.span()) acc += x;
    }
  }
  g_sink = acc;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size heap copy: ASan reports any read past the input's end.
  std::vector<std::byte> bytes(size);
  if (size > 0) std::memcpy(bytes.data(), data, size);
  const auto source = std::make_shared<ts::MemoryBytes>(std::move(bytes));

  try {
    const ts::SafetensorsFile file = ts::SafetensorsFile::parse(source, "fuzz-input");
    read_every_byte(file);
  } catch (const ts::TraceFormatError&) {
  }

  try {
    const ts::TraceFile trace = ts::TraceFile::parse(source, "fuzz-input");
    float acc = 0.0f;
    // Every header the reader accepted indexes its stage table and its payload rows.
    const auto read_header = [&](const ts::EventHeader& h) {
      acc += static_cast<float>(trace.stages().at(static_cast<size_t>(h.stage)).name.size());
      // In 64 bits: valid fields reach 2^31 - 1 each (kMaxSeq), their int sum would overflow.
      acc += static_cast<float>(int64_t{h.rows} + h.q_begin + h.kv_head + h.split + h.step);
      for (int32_t k = 0; k < h.num_key_ranges; ++k) acc += static_cast<float>(int64_t{h.keys[k].end} - h.keys[k].begin);
    };
    for (size_t i = 0; i < trace.num_events(); ++i) {
      const ts::EventHeader& h = trace.header(i);
      read_header(h);
      const std::span<const float> m = trace.m(i), l = trace.l(i), o = trace.o(i);
      for (int r = 0; r < h.rows; ++r) acc += m[static_cast<size_t>(r)] + l[static_cast<size_t>(r)];
      for (float x : o) acc += x;
    }
    for (const ts::EventHeader& h : trace.missing()) read_header(h);
    for (size_t c : trace.events_per_stage()) acc += static_cast<float>(c);
    acc += static_cast<float>(trace.attention().batch * trace.attention().heads_q);
    if (auto in = trace.read_inputs())
      acc += static_cast<float>(in->q.numel() + in->k.numel() + in->q_pairs.size() + in->kv_pairs.size());
    if (auto out = trace.read_output()) acc += static_cast<float>(out->numel());
    if (auto lse = trace.read_output_lse()) acc += static_cast<float>(lse->size());
    acc += static_cast<float>(trace.to_captured_events().size());
    g_sink = acc;
  } catch (const ts::TraceFormatError&) {
  }
  return 0;
}
