#!/usr/bin/env bash
# The SDK as a user gets it (CTest: sdk_examples_from_install, label cpu): installs this build
# into a fresh prefix, builds examples/ from that prefix alone as an outside project on tilescope's
# CPU path, runs the examples, and checks `tilescope diff` of their traces with
# check_example_reports.py: the fixed Split-K, the GQA decode and the wmma prefill kernels clean,
# the planted bugs located (stage, split or step, rows, mechanism or none). Then two small projects check that the CPU path refuses
# `extern __shared__` (at configure time) and inline PTX (at compile time) with messages naming
# them. The traces stay in WORK for the viewer's test (sdk_viewer_opens_example_trace).
#
#   tests/sdk/examples_from_install.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$(realpath "$1") source=$(realpath "$2") work=$3
rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
here=$source/tests/sdk

# A user's configure picks these up from the environment; ccache keeps the rebuilds cheap.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")}
if command -v ccache >/dev/null; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
export CMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-RelWithDebInfo}

# The guide's commands run from the repository root; here from WORK, with examples/ linked in, so
# that nothing is written into the source tree.
cd "$work"
ln -s "$source/examples" examples
TILESCOPE_BUILD=$build PREFIX=$work/prefix BUILD=$work/build-examples
echo "== install, configure and build the examples from the prefix"
# [doc:quickstart]
cmake --install "$TILESCOPE_BUILD" --prefix "$PREFIX"
cmake -S examples -B "$BUILD" -DCMAKE_PREFIX_PATH="$PREFIX" -DEXAMPLES_GPU=OFF
cmake --build "$BUILD"
"$BUILD"/splitk_cpu --out splitk.trace.safetensors
"$PREFIX"/bin/tilescope diff splitk.trace.safetensors
# [/doc]
mv splitk.trace.safetensors splitk_fixed.trace.safetensors

echo "== run the examples"
"$BUILD"/splitk_planted_bug_cpu --out splitk_bug.trace.safetensors
"$BUILD"/splitk_planted_bug_cpu --dtype bf16 --causal --out splitk_bug_causal.trace.safetensors
"$BUILD"/decode_cpu --out decode.trace.safetensors
# The wmma prefill: correct (also causal with rows that see no key, and under a perturbed thread
# schedule), and each of its planted bugs; the missing barrier under two schedules.
wmma=$BUILD/wmma_prefill_cpu
"$wmma" --out wmma_none.trace.safetensors
"$wmma" --causal --seq-q 160 --seq-kv 96 --out wmma_none_causal.trace.safetensors
TILESCOPE_CPU_PERTURB_SEED=1 "$wmma" --out wmma_none_perturbed.trace.safetensors
for bug in k_row_major v_unpadded_ldm o_not_rescaled kv_tail_off_by_one; do
  "$wmma" --bug "$bug" --out "wmma_$bug.trace.safetensors"
done
"$wmma" --bug kv_tail_off_by_one --causal --out wmma_kv_tail_off_by_one_causal.trace.safetensors
for seed in 1 2; do
  TILESCOPE_CPU_PERTURB_SEED=$seed "$wmma" --bug no_score_barrier --out "wmma_no_score_barrier_$seed.trace.safetensors"
done

echo "== diff their traces"
python3 "$here/check_example_reports.py" "$PREFIX/bin/tilescope" "$work"

echo "== the CPU path's refusals"
refused_project() {  # a project of one .cu file, built with tilescope_add_cpu_executable
  local name=$1 kernel=$2
  mkdir -p "$work/$name"
  printf '%s\n' "cmake_minimum_required(VERSION 3.25)" "project($name LANGUAGES CXX)" \
    "find_package(tilescope REQUIRED)" "tilescope_add_cpu_executable($name SOURCES kernel.cu)" \
    >"$work/$name/CMakeLists.txt"
  printf '%s\n' "$kernel" >"$work/$name/kernel.cu"
}
expect_output() {  # expect_output TEXT COMMAND...: the command fails, saying TEXT (wrapped or not)
  local pattern=$1 out
  shift
  if out=$("$@" 2>&1); then echo "FAIL: '$*' succeeded; expected a refusal saying: $pattern"; exit 1; fi
  if ! tr -s ' \n' '  ' <<<"$out" | grep -qF -- "$pattern"; then
    echo "FAIL: '$*' did not say: $pattern"
    echo "$out" | tail -20
    exit 1
  fi
  echo "refused as expected: $pattern"
}
refused_project extern_shared $'__global__ void k(float* out) {\n  extern __shared__ float tile[];\n  out[0] = tile[0];\n}\nint main() { return 0; }'
expect_output "kernel.cu:2: \`extern __shared__ float tile[];\`: tilescope's CPU path cannot take" \
  cmake -S "$work/extern_shared" -B "$work/extern_shared/build" -DCMAKE_PREFIX_PATH="$PREFIX"
refused_project inline_ptx $'__global__ void k(unsigned* out) {\n  unsigned lane;\n  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));\n  *out = lane;\n}\nint main() { return 0; }'
cmake -S "$work/inline_ptx" -B "$work/inline_ptx/build" -DCMAKE_PREFIX_PATH="$PREFIX" >/dev/null
expect_output "tilescope CPU path: inline PTX (asm) cannot run on the CPU" cmake --build "$work/inline_ptx/build"

echo "== the SDK's examples work from the installed prefix"
