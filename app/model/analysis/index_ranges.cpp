#include "app/model/analysis/index_ranges.h"

#include <cmath>
#include <cstdio>
#include <vector>

namespace ts {
namespace {

template <typename T>
std::string ranges(std::span<const T> v, size_t max_runs) {
  std::string out;
  size_t runs = 0;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (runs == max_runs) {
      out += ", ...";
      break;
    }
    if (!out.empty()) out += ", ";
    out += std::to_string(v[i]);
    if (j > i) out += "-" + std::to_string(v[j]);
    ++runs;
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string format_ranges(std::span<const int64_t> v, size_t max_runs) { return ranges(v, max_runs); }
std::string format_ranges(std::span<const int32_t> v, size_t max_runs) { return ranges(v, max_runs); }

std::string format_figure(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

}  // namespace ts
