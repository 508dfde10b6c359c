#include "instrumentation/simt/src/launch_config_check.h"

#include "instrumentation/simt/src/diagnostics.h"

namespace simt::detail {

namespace {

constexpr unsigned kMaxGridX = 0x7fffffffu;
constexpr unsigned kMaxGridYZ = 65535;
constexpr unsigned kMaxBlockXY = 1024;
constexpr unsigned kMaxBlockZ = 64;
constexpr size_t kMinStackBytes = 16 * 1024;

std::string dims_text(const dim3& d) { return coordinates_text(uint3{d.x, d.y, d.z}); }

}  // namespace

std::optional<std::string> launch_problem(const LaunchConfig& config,
                                          const LaunchOptions& options) {
  const dim3 g = config.grid;
  const dim3 b = config.block;
  if (g.x == 0 || g.y == 0 || g.z == 0) {
    return "grid " + dims_text(g) +
           " has a zero dimension; every grid dimension must be at least 1";
  }
  if (b.x == 0 || b.y == 0 || b.z == 0) {
    return "block " + dims_text(b) +
           " has a zero dimension; every block dimension must be at least 1";
  }
  if (g.x > kMaxGridX || g.y > kMaxGridYZ || g.z > kMaxGridYZ) {
    return "grid " + dims_text(g) + " exceeds the limits (x <= 2147483647, y and z <= 65535)";
  }
  if (b.x > kMaxBlockXY || b.y > kMaxBlockXY || b.z > kMaxBlockZ) {
    return "block " + dims_text(b) + " exceeds the limits (x and y <= 1024, z <= 64)";
  }
  const uint64_t threads = uint64_t{b.x} * b.y * b.z;
  if (threads > kMaxThreadsPerBlock) {
    return "block " + dims_text(b) + " has " + std::to_string(threads) +
           " threads; a block has at most 1024";
  }
  if (config.dynamic_shared_bytes > kMaxDynamicSharedBytes) {
    return "dynamic shared memory of " + std::to_string(config.dynamic_shared_bytes) +
           " bytes exceeds the maximum of " + std::to_string(kMaxDynamicSharedBytes) +
           " bytes (227 KiB)";
  }
  if (options.workers < 0) {
    return "workers = " + std::to_string(options.workers) +
           " is negative; use 0 for one per hardware thread or a positive count";
  }
  if (options.stack_bytes != 0 && options.stack_bytes < kMinStackBytes) {
    return "stack_bytes = " + std::to_string(options.stack_bytes) +
           " is below the minimum of 16384; use 0 for the default";
  }
  return std::nullopt;
}

}  // namespace simt::detail
