// The Python-literal dictionary of a .npy header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// parsed by a small grammar that accepts exactly what numpy writes (internal to npy.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ts {

struct NpyHeaderDict {
  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;
};

// Throws NpyFormatError whose message begins with `file_name`.
NpyHeaderDict parse_npy_header_dict(std::string_view text, const std::string& file_name);

}  // namespace ts
