#include "tests/support/test_seed.h"

#include <cstdlib>
#include <random>

namespace ts::test {
namespace {

constexpr const char* kSeedVariable = "TILESCOPE_TEST_SEED";

}  // namespace

uint64_t test_seed() {
  if (const char* fixed = std::getenv(kSeedVariable)) return std::strtoull(fixed, nullptr, 10);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

uint64_t run_seed() {
  static const uint64_t seed = test_seed();
  return seed;
}

std::string replay_line(uint64_t seed) { return std::string(kSeedVariable) + "=" + std::to_string(seed); }

}  // namespace ts::test
