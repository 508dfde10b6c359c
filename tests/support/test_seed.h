// Seeds of randomised tests: fresh on every run (so that the tests see new data each time),
// named by every failure, and fixed with TILESCOPE_TEST_SEED=<n> in the environment to replay a
// failure. The one place the variable is read.
//
//   TS_SEEDED(seed); std::mt19937_64 rng(seed);   // a test's own seed, named by its failures
//   TS_SEED_TRACE(); ... run_seed() ...            // the program's one seed, for shared helpers
#pragma once

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace ts::test {

// A fresh seed at each call, or TILESCOPE_TEST_SEED's.
uint64_t test_seed();
// One seed for the whole test program, drawn at its first use, or TILESCOPE_TEST_SEED's: for
// helpers that draw their own data (trace_test_util.h) while the test names the seed.
uint64_t run_seed();
// "TILESCOPE_TEST_SEED=<seed>": what a failure prints, and what replays it.
std::string replay_line(uint64_t seed);

}  // namespace ts::test

#define TS_SEEDED(seed_var)                           \
  const uint64_t seed_var = ::ts::test::test_seed(); \
  SCOPED_TRACE(::ts::test::replay_line(seed_var))

#define TS_SEED_TRACE() SCOPED_TRACE(::ts::test::replay_line(::ts::test::run_seed()))
