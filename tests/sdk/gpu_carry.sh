#!/usr/bin/env bash
# Prepares the installed SDK that tests/sdk/gpu_examples.sh needs on a lent GPU machine, which has
# nvcc, CMake, ninja and compute-sanitizer but none of Debian's packages: a release build's SDK and
# CLI (statically linked), stripped, installed into .gpu-carry/prefix of the repository root
# (ignored by git through .git/info/exclude, so it travels only as a carried path). The examples
# and the scripts are tracked files and travel with the tree. docs/your-own-kernel.md, "On a GPU",
# says what to run there.
#
#   tests/sdk/gpu_carry.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu-carry/' .git/info/exclude 2>/dev/null || echo '/.gpu-carry/' >>"$(git rev-parse --git-path info/exclude)"
# [doc:gpu-carry]
cmake --preset release
cmake --build --preset release --target tilescope tilescope_recorder ts_simt ts_simt_cuda_cpu
rm -rf .gpu-carry
cmake --install build/release --prefix .gpu-carry/prefix --component sdk --strip
cmake --install build/release --prefix .gpu-carry/prefix --component cli --strip
# [/doc]
du -sh .gpu-carry
echo "On the GPU machine, in the repository root, with .gpu-carry carried: tests/sdk/gpu_examples.sh"
