// Where in the kernel source a barrier or warp operation was called: std::source_location,
// taken as a default argument so the kernel's own file:line is captured.
//
// clang 14 with libstdc++ 12 (the fuzz preset) has no ::simt::detail::SourcePlace (it lacks
// __builtin_source_location); there a stand-in with the same interface is built from
// __builtin_FILE/LINE/COLUMN, which capture the caller's place the same way.
#pragma once

#include <version>
#if defined(__cpp_lib_source_location)
#include <source_location>
#endif

namespace simt::detail {

#if defined(__cpp_lib_source_location)
using SourcePlace = std::source_location;
#else
class SourcePlace {
 public:
  static constexpr SourcePlace current(const char* file = __builtin_FILE(),
                                       const char* function = __builtin_FUNCTION(),
                                       unsigned line = __builtin_LINE(),
                                       unsigned column = __builtin_COLUMN()) noexcept {
    SourcePlace place;
    place.file_ = file;
    place.function_ = function;
    place.line_ = line;
    place.column_ = column;
    return place;
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr unsigned line() const noexcept { return line_; }
  constexpr unsigned column() const noexcept { return column_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  unsigned line_ = 0;
  unsigned column_ = 0;
};
#endif

}  // namespace simt::detail

// The trailing parameter of every kernel-facing call that reports its caller's place.
#define TS_SIMT_CALLER_PLACE \
  ::simt::detail::SourcePlace where = ::simt::detail::SourcePlace::current()
