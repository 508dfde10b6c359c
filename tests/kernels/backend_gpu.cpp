// test_kernels_gpu checks the GPU backend; without a usable device every test fails with the
// reason (it is labelled gpu and meant for a GPU machine, where a silent skip would hide a
// broken setup).
#include <gtest/gtest.h>

#include "tests/kernels/kernel_test_util.h"

namespace ts::test {
Backend backend_under_test() { return Backend::gpu; }

namespace {
class RequireGpu : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string why;
    if (!gpu_available(&why)) FAIL() << "test_kernels_gpu needs a CUDA device: " << why;
  }
};
const auto* const kRequireGpu = ::testing::AddGlobalTestEnvironment(new RequireGpu);
}  // namespace
}  // namespace ts::test
