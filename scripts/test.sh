#!/usr/bin/env bash
# Builds and runs every test that runs without a GPU (what CI runs: .ci/run calls this).
#   1. default preset: CPU tests, the nvcc build of the GPU code (sm_80, sm_90a), the GUI
#      screenshot tests under Xvfb;
#   2. asan preset: the CPU tests under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. fuzz preset: the trace-file reader under libFuzzer for a bounded time.
# Tests labelled `gpu` are run on a GPU machine instead (docs/gpu-validation.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh

cuda=()
[ -x /usr/local/cuda/bin/nvcc ] || cuda=(-DTILESCOPE_CUDA=OFF)
jobs=$(nproc)

run_tests() {  # ctest under a virtual display when there is no real one (GUI tests need one)
  if [ -z "${DISPLAY:-}" ]; then xvfb-run -a -s "-screen 0 1920x1080x24" ctest "$@"; else ctest "$@"; fi
}

echo "== default build"
cmake --preset default "${cuda[@]}" >/dev/null
cmake --build --preset default -j "$jobs"
run_tests --preset default -j "$jobs"

echo "== AddressSanitizer + UBSan build of the CPU code"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs"

echo "== fuzz (libFuzzer, bounded time)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs"
ctest --preset fuzz

echo "== all tests passed"
