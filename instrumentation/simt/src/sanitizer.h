// AddressSanitizer fiber annotations. ASan tracks one stack per OS thread; every switch to a
// fiber stack must be announced (start) and acknowledged (finish), or ASan reports the fiber's
// frames as stack-buffer overflows and its fake stacks leak. No-ops in other builds.
#pragma once

#include <cstddef>

#if defined(TILESCOPE_ASAN) || defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define TS_SIMT_ASAN 1
#endif

namespace simt::detail {

#if defined(TS_SIMT_ASAN)
inline constexpr bool kAddressSanitizer = true;
inline void asan_start_switch(void** fake_stack_save, const void* bottom, size_t size) {
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
}
inline void asan_finish_switch(void* fake_stack_save, const void** old_bottom, size_t* old_size) {
  __sanitizer_finish_switch_fiber(fake_stack_save, old_bottom, old_size);
}
inline void asan_unpoison(const void* address, size_t size) {
  __asan_unpoison_memory_region(address, size);
}
#else
inline constexpr bool kAddressSanitizer = false;
inline void asan_start_switch(void**, const void*, size_t) {}
inline void asan_finish_switch(void*, const void**, size_t*) {}
inline void asan_unpoison(const void*, size_t) {}
#endif

}  // namespace simt::detail
