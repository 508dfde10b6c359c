// Seeds for randomised tests: fresh each run (so the tests see new data every time), printed
// on failure, and fixed with TILESCOPE_TEST_SEED=<n> to replay a failure.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace ts::testing {

inline uint64_t test_seed() {
  if (const char* fixed = std::getenv("TILESCOPE_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// Use as: TS_SEEDED(seed); std::mt19937_64 rng(seed);  — failures then name the seed.
#define TS_SEEDED(seed_var)                                   \
  const uint64_t seed_var = ::ts::testing::test_seed();       \
  SCOPED_TRACE("TILESCOPE_TEST_SEED=" + std::to_string(seed_var))

}  // namespace ts::testing
