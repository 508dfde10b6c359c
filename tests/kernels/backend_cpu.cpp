// test_kernels_cpu checks the CPU backend (the SIMT runtime).
#include "tests/kernels/kernel_test_util.h"

namespace ts::test {
Backend backend_under_test() { return Backend::cpu; }
}  // namespace ts::test
