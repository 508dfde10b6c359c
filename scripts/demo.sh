#!/usr/bin/env bash
# tilescope's demo, the README's main command:
#   1. installs what the build needs (scripts/setup-debian.sh);
#   2. builds `tilescope` and `tilescope-gui` (default preset, build/default);
#   3. captures the built-in demo — a Split-K kernel whose reduce double-counts the splits'
#      sums (fault double_count_l), on the GPU when one is present, else on the CPU in seconds —
#      into build/demo/demo.trace.safetensors;
#   4. prints `tilescope info` of it and `tilescope diff` (where to look), and writes
#      `tilescope export` (PNG heatmaps, .npy, summary.json) to build/demo/export;
#   5. opens the trace in tilescope-gui when a display is present, else says how to see it.
# Usage: scripts/demo.sh [--no-gui]     (BUILD_DIR=... builds elsewhere than build/default)
set -euo pipefail
cd "$(dirname "$0")/.."

open_gui=1
for arg in "$@"; do
  case "$arg" in
    --no-gui) open_gui=0 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "demo: unknown argument '$arg' (use --no-gui or --help)" >&2; exit 2 ;;
  esac
done

scripts/setup-debian.sh

cuda=()
[ -x /usr/local/cuda/bin/nvcc ] || cuda=(-DTILESCOPE_CUDA=OFF)
build=${BUILD_DIR:-build/default}
echo "== building tilescope and tilescope-gui ($build)"
cmake --preset default -B "$build" "${cuda[@]}" >/dev/null
cmake --build "$build" --target tilescope tilescope-gui -j "$(nproc)"

cli=$build/app/cli/tilescope
gui=$build/app/gui/tilescope-gui
trace=build/demo/demo.trace.safetensors
mkdir -p build/demo

echo "== capturing the demo: Split-K with fault double_count_l (the reduce weights each split's"
echo "   sum twice) -> $trace"
"$cli" capture --kernel splitk --fault double_count_l --backend auto \
  --batch 1 --heads 4 --seq-q 64 --seq-kv 4096 --head-dim 64 --dtype fp16 --splits 8 \
  --seed 1 --progress -o "$trace"

echo
echo "== tilescope info $trace"
"$cli" info "$trace"

if "$cli" diff --help >/dev/null 2>&1; then
  echo
  echo "== tilescope diff $trace"
  # Exit code 1 means "a divergence was found": what this demo is about.
  "$cli" diff "$trace" || [ $? -eq 1 ]
fi

if "$cli" export --help >/dev/null 2>&1; then
  echo
  echo "== tilescope export $trace -o build/demo/export"
  # The evidence as files: overview_*.png and <stage>_*.png (error / tolerance heatmaps),
  # first_divergence.png (trace | reference | diff), .npy arrays, summary.json.
  "$cli" export "$trace" -o build/demo/export | tail -n 1 || [ "${PIPESTATUS[0]}" -eq 1 ]
  echo "   pictures: build/demo/export/overview_b0_h0.png, build/demo/export/first_divergence.png"
fi

echo
if [ "$open_gui" -eq 1 ] && { [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; }; then
  echo "== opening $trace in tilescope-gui"
  "$gui" "$trace" || {
    echo "demo: tilescope-gui exited with an error (see above); the trace is at $trace" >&2
    exit 1
  }
else
  cat <<MSG
== no display here (or --no-gui): to look at the trace,
   - on a machine with a display:  $gui $trace
     (copy $trace anywhere; it is self-contained: config, inputs, events, output)
   - headless, as a picture:       xvfb-run -a $gui $trace --screenshot demo.png
   - in Python (numpy only):       see docs/trace-format.md
MSG
fi
