#!/usr/bin/env bash
# The probes' cost with tracing off, on a GPU: runs bench_probe_overhead_trace0 (probes compiled
# out) and bench_probe_overhead_trace1 (compiled in, empty view) in alternation, ROUNDS times
# each, and prints every median and the ratio of their medians (trace1 / trace0).
#   examples/bench/compare.sh BUILD_DIR [ROUNDS] [-- options for both, e.g. --runs 200 --seq 2048]
set -euo pipefail
build=${1:?usage: compare.sh BUILD_DIR [ROUNDS] [-- bench options]}
rounds=${2:-5}
shift $(( $# >= 2 ? 2 : 1 ))
[ "${1:-}" = "--" ] && shift
off=() on=()
for ((r = 0; r < rounds; ++r)); do
  off+=("$("$build/bench_probe_overhead_trace0" "$@" | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p')")
  on+=("$("$build/bench_probe_overhead_trace1" "$@" | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
m0=$(median "${off[@]}") m1=$(median "${on[@]}")
echo "TILESCOPE_TRACE=0 medians (ms): ${off[*]}"
echo "TILESCOPE_TRACE=1, empty view, medians (ms): ${on[*]}"
awk -v a="$m0" -v b="$m1" 'BEGIN { printf "median of medians: %.5f ms vs %.5f ms, ratio %.4f\n", a, b, b / a }'
