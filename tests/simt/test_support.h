// Helpers of the SIMT tests: seeded random inputs, poisoned outputs, and the line of a marker
// comment in a test kernel (so that assertions on reported file:line follow edits).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/test_seed.h"

namespace ts::test {

// The random inputs of one test: drawn fresh each run from a seed that failures print
// (tests/support/test_seed.h: TILESCOPE_TEST_SEED=<n> in the environment repeats a run).
class TestRandom {
 public:
  TestRandom() : seed_(test_seed()) { engine_.seed(seed_); }
  uint64_t seed() const { return seed_; }
  std::string trace() const { return "random seed: " + replay_line(seed_) + " repeats it"; }
  std::mt19937_64& engine() { return engine_; }

  std::vector<float> floats(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(engine_);
    return v;
  }
  std::vector<int> ints(size_t n, int lo, int hi) {
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<int> v(n);
    for (int& x : v) x = d(engine_);
    return v;
  }
  std::vector<unsigned> uints(size_t n) {
    std::vector<unsigned> v(n);
    for (unsigned& x : v) x = static_cast<unsigned>(engine_());
    return v;
  }
  // Every bit pattern of T is equally likely (NaNs included for floating types).
  template <typename T>
  std::vector<T> bits(size_t n) {
    std::vector<T> v(n);
    for (T& x : v) {
      const uint64_t r = engine_();
      std::memcpy(static_cast<void*>(&x), &r, sizeof(T));
    }
    return v;
  }

 private:
  uint64_t seed_ = 0;
  std::mt19937_64 engine_;
};

// Outputs start as all-0xFF bytes (NaN for floats, -1 / max for integers): an element no
// thread wrote still holds it.
template <typename T>
std::vector<T> poisoned(size_t n) {
  std::vector<T> v(n);
  std::memset(static_cast<void*>(v.data()), 0xff, n * sizeof(T));
  return v;
}
template <typename T>
bool is_poison(const T& value) {
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  for (unsigned char b : bytes) {
    if (b != 0xff) return false;
  }
  return true;
}

// The 1-based line of tests/simt/kernels/<file> that contains `// marker: <marker>`.
inline int marker_line(const std::string& file, const std::string& marker) {
  const std::string path = std::string(SIMT_TEST_KERNELS_DIR) + "/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find("// marker: " + marker) != std::string::npos) return number;
  }
  throw std::runtime_error("no marker '" + marker + "' in " + path);
}
// "faulty_sync.cuh:23", as the runtime's reports write a kernel's place.
inline std::string marker_place(const std::string& file, const std::string& marker) {
  return file + ":" + std::to_string(marker_line(file, marker));
}

}  // namespace ts::test
