// Parsing and checking a safetensors JSON header (internal to the safetensors reader; split
// out because it is where hostile input is handled, and the fuzz target aims at it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "instrumentation/trace/safetensors.h"

namespace ts {

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;
};

// `json` is the header's bytes; `buffer_size` the size of the data buffer that follows it.
// Checks: a JSON object (valid UTF-8, no duplicate keys at any level), entries with exactly
// dtype / shape / data_offsets of the right JSON types, known dtypes, shapes whose byte size
// does not overflow and equals end - begin, offsets within the buffer, the buffer covered
// without overlap or hole, metadata values strings. Throws TraceFormatError whose message
// begins with `file_name`.
SafetensorsHeader parse_safetensors_header(std::string_view json, uint64_t buffer_size,
                                           const std::string& file_name);

// The header of the safetensors file at `path`, checked as above, without reading its data (a
// file that claims more than it holds, or gigabytes of garbage, is refused before more is read).
// Throws FileReadError (cannot open: not a regular file, unreadable) or TraceFormatError.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

}  // namespace ts
