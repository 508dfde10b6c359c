#!/usr/bin/env bash
# The examples on a GPU (CTest: sdk_examples_gpu, label gpu; or by hand on a lent GPU machine,
# docs/your-own-kernel.md, "On a GPU"): builds examples/ with nvcc against an INSTALLED prefix,
# runs the fixed and planted-bug Split-K, the decode kernel and the wmma prefill (correct and its
# planted bugs), checks their diffs as the CPU test
# does (check_example_reports.py), runs each under compute-sanitizer's memcheck (with leak check)
# and racecheck, and measures the probes' cost with tracing off (examples/bench/compare.sh).
#
#   tests/sdk/gpu_examples.sh [--build-only] [PREFIX EXAMPLES_DIR WORK_DIR]
#
# Without arguments: the prefix tests/sdk/gpu_carry.sh prepares (.gpu-carry/prefix), examples/ and
# /tmp/tilescope-gpu-examples, from the repository root.
# --build-only stops after the build (what CI can do without a GPU). CUDA_ARCHITECTURES (default
# 80, whose PTX also runs on Hopper) and CMAKE_CUDA_COMPILER (default: nvcc on PATH, else
# /usr/local/cuda/bin/nvcc) may be set. Exit 0 only when everything passed; a summary at the end.
set -euo pipefail
build_only=0
if [ "${1:-}" = "--build-only" ]; then build_only=1; shift; fi
here=$(dirname "$(realpath "$0")")
if [ $# -eq 0 ]; then set -- "$here/../../.gpu-carry/prefix" "$here/../../examples" /tmp/tilescope-gpu-examples; fi
prefix=$(realpath "$1") examples=$(realpath "$2") work=$3
mkdir -p "$work"
work=$(realpath "$work")
nvcc=${CMAKE_CUDA_COMPILER:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")}
if command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
fi

echo "== build the examples with $nvcc against $prefix"
cmake -S "$examples" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEXAMPLES_GPU=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES:-80}" >/dev/null
gpu_targets=(splitk_gpu splitk_planted_bug_gpu decode_gpu wmma_prefill_gpu bench_probe_overhead_trace0
             bench_probe_overhead_trace1)
cmake --build "$work/build" --target "${gpu_targets[@]}"
if [ "$build_only" = 1 ]; then
  echo "== built: ${gpu_targets[*]}"
  exit 0
fi

bin=$work/build
cd "$work"
summary=()
echo "== run the examples and diff their traces"
"$bin/splitk_gpu" --out splitk_fixed.trace.safetensors
"$bin/splitk_planted_bug_gpu" --out splitk_bug.trace.safetensors
"$bin/splitk_planted_bug_gpu" --dtype bf16 --causal --out splitk_bug_causal.trace.safetensors
"$bin/decode_gpu" --out decode.trace.safetensors
# The wmma prefill as examples_from_install.sh runs it on the CPU (the perturbation variable does
# nothing here).
"$bin/wmma_prefill_gpu" --out wmma_none.trace.safetensors
"$bin/wmma_prefill_gpu" --causal --seq-q 160 --seq-kv 96 --out wmma_none_causal.trace.safetensors
"$bin/wmma_prefill_gpu" --seq-q 96 --seq-kv 160 --out wmma_none_perturbed.trace.safetensors
for bug in k_row_major v_unpadded_ldm o_not_rescaled kv_tail_off_by_one; do
  "$bin/wmma_prefill_gpu" --bug "$bug" --out "wmma_$bug.trace.safetensors"
done
"$bin/wmma_prefill_gpu" --bug kv_tail_off_by_one --causal --out wmma_kv_tail_off_by_one_causal.trace.safetensors
for seed in 1 2; do
  "$bin/wmma_prefill_gpu" --bug no_score_barrier --out "wmma_no_score_barrier_$seed.trace.safetensors"
done
python3 "$here/check_example_reports.py" "$prefix/bin/tilescope" "$work" --gpu
summary+=("diffs: as expected (fixed, decode and wmma prefill clean, planted bugs located)")

echo "== compute-sanitizer"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
failed=0
for tool in memcheck racecheck; do
  extra=()
  [ "$tool" = memcheck ] && extra=(--leak-check full)
  n=0
  for run in "splitk_gpu" "splitk_planted_bug_gpu --dtype bf16 --causal" "decode_gpu" "wmma_prefill_gpu --causal"; do
    read -r -a cmd <<<"$run"
    log=$work/sanitizer_${tool}_$((++n))_${cmd[0]}.log
    if "$sanitizer" --tool "$tool" "${extra[@]}" --error-exitcode 99 "$bin/${cmd[0]}" "${cmd[@]:1}" \
         --out "$work/sanitized.trace.safetensors" >"$log" 2>&1; then
      summary+=("$tool $run: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)")
    else
      failed=1
      summary+=("$tool $run: FAILED (log: $log)")
      tail -30 "$log"
    fi
  done
done

echo "== the probes' cost with tracing off (median of medians, 5 alternating rounds)"
bash "$examples/bench/compare.sh" "$bin" 5 -- --runs 200 | tee "$work/probe_overhead.txt"
summary+=("probe overhead: $(tail -1 "$work/probe_overhead.txt")")

echo "== summary"
printf '  %s\n' "${summary[@]}"
exit "$failed"
