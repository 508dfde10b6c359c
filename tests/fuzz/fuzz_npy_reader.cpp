// libFuzzer target: the .npy reader on arbitrary bytes: a parsed array or an NpyFormatError,
// nothing else (see fuzz_trace_reader.cpp for how it runs).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "instrumentation/trace/npy.h"

namespace {
volatile size_t g_sink;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::byte> bytes(size);  // exact size: ASan sees reads past the end
  if (size > 0) std::memcpy(bytes.data(), data, size);
  try {
    const ts::NpyArray a = ts::parse_npy(bytes, "fuzz-input");
    size_t acc = a.shape.size();
    for (std::byte b : a.bytes) acc += std::to_integer<size_t>(b);
    g_sink = acc + static_cast<size_t>(a.numel());
  } catch (const ts::NpyFormatError&) {
  }
  return 0;
}
