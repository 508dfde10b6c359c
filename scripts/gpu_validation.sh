#!/usr/bin/env bash
# The GPU validation of docs/gpu-validation.md, in two halves: `pack` on a development machine
# (builds the release preset's GPU programs, statically linked, and packs them stripped into
# .device/gpu-validation.tar.xz, an ignored path), `run` on a machine with an NVIDIA GPU and
# none of Debian's packages (unpacks, runs the GPU tests, compute-sanitizer's memcheck and
# racecheck over the kernel sweep, the benchmarks beside PyTorch SDPA, and writes every log
# under OUT_DIR).
#
#   scripts/gpu_validation.sh pack                 # here; then carry .device to the GPU machine
#   OUT_DIR=out scripts/gpu_validation.sh run      # there, in the repository root
#   OUT_DIR=out scripts/gpu_validation.sh run memcheck racecheck   # only the steps named
#
# `run` keeps going after a failing step and exits 1 if any step failed; `summary.txt` in
# OUT_DIR has one line per step with its exit status and time.
set -uo pipefail
cd "$(dirname "$0")/.."

# The programs that run on the GPU machine (each a CMake target of the release preset).
TARGETS=(test_simt_gpu test_kernels_gpu test_analysis_gpu test_cli_gpu test_reference_gpu
         bench_kernels_gpu bench_reference_gpu tilescope)

pack() {
  set -e
  cmake --preset release >/dev/null
  cmake --build --preset release --target "${TARGETS[@]}"
  local stage=/tmp/ts-gpu-validation.$$
  rm -rf "$stage" && mkdir -p "$stage/bin"
  for t in "${TARGETS[@]}"; do
    local exe
    exe=$(find build/release -type f -name "$t" -perm -u+x | head -1)
    [ -n "$exe" ] || { echo "gpu_validation: no binary for target $t" >&2; exit 1; }
    strip -o "$stage/bin/$t" "$exe"
  done
  mkdir -p .device
  tar cJf .device/gpu-validation.tar.xz -C "$stage" bin
  rm -rf "$stage"
  du -h .device/gpu-validation.tar.xz
}

run() {
  local out=${OUT_DIR:-gpu-validation-out} failed=0
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  local bin=/tmp/ts-gpu-validation/bin
  rm -rf /tmp/ts-gpu-validation && mkdir -p /tmp/ts-gpu-validation
  tar xJf .device/gpu-validation.tar.xz -C /tmp/ts-gpu-validation || { echo "gpu_validation: nothing packed (.device/gpu-validation.tar.xz)" >&2; return 1; }
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
  local wanted=" $* "  # the steps to run; all of them when none is named
  step() {  # step NAME COMMAND...: runs it with its log in OUT_DIR/NAME.log
    local name=$1; shift
    [ "$wanted" = "  " ] || [[ "$wanted" == *" $name "* ]] || return 0
    local t0=$SECONDS
    "$@" >"$out/$name.log" 2>&1
    local rc=$?
    printf '%-28s rc %-3d %4ds  %s\n' "$name" "$rc" $((SECONDS - t0)) "$(tail -1 "$out/$name.log")" | tee -a "$out/summary.txt"
    [ "$rc" -eq 0 ] || failed=1
  }
  step simt "$bin/test_simt_gpu"
  step kernels "$bin/test_kernels_gpu"
  step analysis "$bin/test_analysis_gpu"
  step cli env TILESCOPE_EXE="$bin/tilescope" "$bin/test_cli_gpu"
  step reference "$bin/test_reference_gpu"
  if command -v compute-sanitizer >/dev/null; then
    step memcheck compute-sanitizer --tool memcheck --error-exitcode 1 "$bin/test_kernels_gpu" --gtest_filter='Sweep/*'
    step racecheck compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 1 "$bin/test_kernels_gpu" --gtest_filter='Sweep/*:KernelStates.*'
  fi
  step bench_kernels "$bin/bench_kernels_gpu"
  step bench_kernels_again "$bin/bench_kernels_gpu" --no-check
  if python3 -c 'import torch' 2>/dev/null; then
    step bench_sdpa python3 scripts/bench_sdpa.py --ours "$bin/bench_kernels_gpu"
    step bench_sdpa_pairs python3 scripts/bench_sdpa.py --ours "$bin/bench_kernels_gpu" --interleave 9 --rounds 3 --only splitk_decode
  fi
  return "$failed"
}

case "${1:-}" in
  pack) pack ;;
  run) shift; run "$@" ;;
  *) echo "usage: scripts/gpu_validation.sh pack | run [STEP...]" >&2; exit 2 ;;
esac
