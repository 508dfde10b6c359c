// Warp-level operations for the host build of a kernel, with PTX shfl.sync semantics.
//
// Every non-exited lane named in `mask` must call the same operation with the same mask (CUDA's
// rule); the call blocks until they all have (a per-warp exchange), then each lane gets its
// result. Lanes that disagree on the mask or the operation, or a mask that omits the calling
// lane, are reported as failures with the kernel's file:line. Lanes that have exited, or lie
// past the end of a partial last warp, drop out of the mask; a shuffle reading one gets poison.
//
// Shuffles follow shfl.sync exactly: the warp is cut into groups of `width` lanes (a power of
// two, 1..32); idx wraps the source within the group; up/down keep the caller's own value when
// the source leaves the group; xor may read an earlier group but not a later one. A source
// lane outside the mask (or exited) is undefined on a GPU: here the result is all 0xFF bytes
// (NaN for floating types) so that the read shows.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include "instrumentation/simt/kernel_api/source_place.h"

#include "instrumentation/simt/kernel_api/runtime_hooks.h"

namespace simt::detail {

template <typename T>
concept WarpValue = std::is_trivially_copyable_v<T> && sizeof(T) <= 8;

template <WarpValue T>
inline uint64_t warp_bits(const T& value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <WarpValue T>
inline T warp_value(uint64_t bits) {
  T value;
  std::memcpy(static_cast<void*>(&value), &bits, sizeof(T));
  return value;
}

template <WarpValue T>
inline T warp_shuffle(WarpOp op, unsigned mask, const T& var, int lane_arg, int width,
                      const SourcePlace& where) {
  return warp_value<T>(
      warp_exchange({op, sizeof(T)}, mask, warp_bits(var), lane_arg, width, where));
}

inline uint64_t warp_vote(WarpOp op, unsigned mask, uint64_t value, unsigned bytes,
                          const SourcePlace& where) {
  return warp_exchange({op, static_cast<uint8_t>(bytes)}, mask, value, 0, 32, where);
}

}  // namespace simt::detail

inline void __syncwarp(unsigned mask = 0xffffffffu, TS_SIMT_CALLER_PLACE) {
  ::simt::detail::warp_vote(::simt::detail::WarpOp::sync, mask, 0, 0, where);
}

template <::simt::detail::WarpValue T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32, TS_SIMT_CALLER_PLACE) {
  return ::simt::detail::warp_shuffle(::simt::detail::WarpOp::shfl_idx, mask, var, src_lane, width,
                                      where);
}
template <::simt::detail::WarpValue T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32,
                        TS_SIMT_CALLER_PLACE) {
  return ::simt::detail::warp_shuffle(::simt::detail::WarpOp::shfl_up, mask, var,
                                      static_cast<int>(delta), width, where);
}
template <::simt::detail::WarpValue T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32,
                          TS_SIMT_CALLER_PLACE) {
  return ::simt::detail::warp_shuffle(::simt::detail::WarpOp::shfl_down, mask, var,
                                      static_cast<int>(delta), width, where);
}
template <::simt::detail::WarpValue T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32,
                         TS_SIMT_CALLER_PLACE) {
  return ::simt::detail::warp_shuffle(::simt::detail::WarpOp::shfl_xor, mask, var, lane_mask, width,
                                      where);
}

inline unsigned __ballot_sync(unsigned mask, int predicate, TS_SIMT_CALLER_PLACE) {
  return static_cast<unsigned>(
      ::simt::detail::warp_vote(::simt::detail::WarpOp::ballot, mask, predicate != 0, 4, where));
}
inline int __any_sync(unsigned mask, int predicate, TS_SIMT_CALLER_PLACE) {
  return static_cast<int>(
      ::simt::detail::warp_vote(::simt::detail::WarpOp::any, mask, predicate != 0, 4, where));
}
inline int __all_sync(unsigned mask, int predicate, TS_SIMT_CALLER_PLACE) {
  return static_cast<int>(
      ::simt::detail::warp_vote(::simt::detail::WarpOp::all, mask, predicate != 0, 4, where));
}
// The lanes of the warp that have not exited (a CPU fiber is never "inactive" otherwise).
inline unsigned __activemask() { return ::simt::detail::active_lanes(); }

// sm_70 match: lanes whose value equals the caller's / whether all values are equal.
template <typename T>
requires(std::is_integral_v<T> || std::is_floating_point_v<T>) &&
    (sizeof(T) == 4 || sizeof(T) == 8) inline unsigned __match_any_sync(unsigned mask, T value,
                                                                        TS_SIMT_CALLER_PLACE) {
  return static_cast<unsigned>(::simt::detail::warp_vote(
      ::simt::detail::WarpOp::match_any, mask, ::simt::detail::warp_bits(value), sizeof(T), where));
}
template <typename T>
requires(std::is_integral_v<T> || std::is_floating_point_v<T>) &&
    (sizeof(T) == 4 || sizeof(T) == 8) inline unsigned __match_all_sync(unsigned mask, T value,
                                                                        int* predicate,
                                                                        TS_SIMT_CALLER_PLACE) {
  const uint64_t result = ::simt::detail::warp_vote(
      ::simt::detail::WarpOp::match_all, mask, ::simt::detail::warp_bits(value), sizeof(T), where);
  *predicate = static_cast<int>(result >> 32);
  return static_cast<unsigned>(result);
}

// sm_80 warp reductions.
inline unsigned __reduce_add_sync(unsigned mask, unsigned value, TS_SIMT_CALLER_PLACE) {
  return static_cast<unsigned>(
      ::simt::detail::warp_vote(::simt::detail::WarpOp::reduce_add, mask, value, 4, where));
}
inline int __reduce_add_sync(unsigned mask, int value, TS_SIMT_CALLER_PLACE) {
  return static_cast<int>(::simt::detail::warp_vote(::simt::detail::WarpOp::reduce_add, mask,
                                                    static_cast<uint32_t>(value), 4, where));
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned value, TS_SIMT_CALLER_PLACE) {
  return static_cast<unsigned>(::simt::detail::warp_vote(
      ::simt::detail::WarpOp::reduce_min_unsigned, mask, value, 4, where));
}
inline int __reduce_min_sync(unsigned mask, int value, TS_SIMT_CALLER_PLACE) {
  return static_cast<int>(::simt::detail::warp_vote(::simt::detail::WarpOp::reduce_min_signed, mask,
                                                    static_cast<uint32_t>(value), 4, where));
}
inline unsigned __reduce_max_sync(unsigned mask, unsigned value, TS_SIMT_CALLER_PLACE) {
  return static_cast<unsigned>(::simt::detail::warp_vote(
      ::simt::detail::WarpOp::reduce_max_unsigned, mask, value, 4, where));
}
inline int __reduce_max_sync(unsigned mask, int value, TS_SIMT_CALLER_PLACE) {
  return static_cast<int>(::simt::detail::warp_vote(::simt::detail::WarpOp::reduce_max_signed, mask,
                                                    static_cast<uint32_t>(value), 4, where));
}
inline unsigned __reduce_and_sync(unsigned mask, unsigned value, TS_SIMT_CALLER_PLACE) {
  return static_cast<unsigned>(
      ::simt::detail::warp_vote(::simt::detail::WarpOp::reduce_and, mask, value, 4, where));
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned value, TS_SIMT_CALLER_PLACE) {
  return static_cast<unsigned>(
      ::simt::detail::warp_vote(::simt::detail::WarpOp::reduce_or, mask, value, 4, where));
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned value, TS_SIMT_CALLER_PLACE) {
  return static_cast<unsigned>(
      ::simt::detail::warp_vote(::simt::detail::WarpOp::reduce_xor, mask, value, 4, where));
}
