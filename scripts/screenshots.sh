#!/usr/bin/env bash
# The README's screenshots: captures the demo traces with the `tilescope` CLI (CPU backend, a
# fixed seed, so the pictures are reproducible) and saves what tilescope-gui shows, through
# its headless --screenshot mode, as PNGs in docs/screenshots/:
#   splitk-first-divergence.png  overview + detail at the first divergence of the Split-K demo
#   splitk-stepping-reduce.png   the reduce of query tile 0 after merging split 3 (stepped with ])
#   fa1-masked-nan.png           FA-1 masked_nan: NaN rows in their own colour, NaN vs -Inf curves
#   ab-fault-vs-fixed.png        A/B: the double_count_l kernel against the fixed one
#   ab-4-vs-8-splits.png         A/B: 4 splits against 8 (different tilings meet at the output)
#   launch-panel.png             the launch panel
#   export-dialog.png            File > Export over the demo's detail
#   error-panel.png              a corrupt trace: the error in the window, the viewer carries on
#   splitk-clean-overview.png    the fixed kernel's overview: every cell cool (within tolerance) on
#                                the same fixed scale the failing demo is hot on
#   timeline-gpu.png             the timeline of a real H200 trace (assets/traces): SMs x time
#   decode-overview.png          a GQA decode (128 pairs of one query row): every pair at once,
#                                the first divergence framed, curves over the pair's splits
# Builds nothing: BUILD_DIR (default build/default) must hold tilescope and tilescope-gui, e.g.
#   cmake --preset default && cmake --build build/default --target tilescope tilescope-gui
# Needs a display, or xvfb-run (used when DISPLAY is unset). Usage: scripts/screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build/default}
cli=$build/app/cli/tilescope
gui=$build/app/gui/tilescope-gui
for bin in "$cli" "$gui"; do
  [ -x "$bin" ] || { echo "screenshots: $bin is missing; build it first (see the top of $0)" >&2; exit 2; }
done
out=docs/screenshots
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run_gui=("$gui")
if [ -z "${DISPLAY:-}" ]; then
  command -v xvfb-run >/dev/null || { echo "screenshots: no DISPLAY and no xvfb-run (apt-get install xvfb)" >&2; exit 2; }
  run_gui=(xvfb-run -a -s "-screen 0 1920x1080x24" "$gui")
fi

capture() {  # capture NAME ARGS...: a CPU capture into $work/NAME.trace.safetensors
  local name=$1
  shift
  "$cli" capture --backend cpu --seed 1 "$@" -o "$work/$name.trace.safetensors" >/dev/null
}

# The viewer writes RGBA PNGs at a middling compression level; the README's copies are re-encoded
# as RGB at zlib level 9 with each row's best filter (about a third smaller, same pixels).
recompress() {  # recompress IN OUT
  /usr/bin/python3 - "$1" "$2" <<'PY'
import struct, sys, zlib
import numpy as np

def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), "8-bit RGB or RGBA only"
        elif kind == b"IDAT":
            idat += body
    ch = 4 if ctype == 6 else 3
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * ch)
    out = np.zeros((h, w * ch), np.uint8)
    prev = np.zeros(w * ch, np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 1:  # Sub: a running sum per channel
            cur = np.cumsum(line.reshape(w, ch), axis=0).reshape(-1) & 255
        elif f == 2:
            cur = (line + prev) & 255
        else:  # Average and Paeth depend on the decoded left neighbour: pixel by pixel
            cur = np.zeros_like(line)
            for x in range(w * ch):
                a = int(cur[x - ch]) if x >= ch else 0
                b = int(prev[x])
                c = int(prev[x - ch]) if x >= ch else 0
                if f == 3:
                    p = (a + b) >> 1
                else:
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[x] = (int(line[x]) + p) & 255
        out[y], prev = cur, cur
    return out.reshape(h, w, ch)[:, :, :3]

def write_png(path, rgb):
    h, w, _ = rgb.shape
    img = rgb.reshape(h, w * 3).astype(np.int16)
    rows, prev = [], np.zeros(w * 3, np.int16)
    for y in range(h):
        cur = img[y]
        left = np.concatenate([np.zeros(3, np.int16), cur[:-3]])
        candidates = [(0, cur), (1, cur - left), (2, cur - prev)]
        f, best = min(candidates, key=lambda c: int(np.abs(c[1].astype(np.int8)).sum()))
        rows.append(bytes([f]) + (best & 255).astype(np.uint8).tobytes())
        prev = cur
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
           chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b""))
    open(path, "wb").write(png)

write_png(sys.argv[2], read_png(sys.argv[1]))
PY
}

shot() {  # shot PNG ARGS...: the viewer's window after its frames, 1600 x 900
  local png=$1
  shift
  # A run that opens a broken trace exits 2 (as the CLI would) after saving its picture:
  # EXPECT_EXIT says which exit status that shot expects.
  local rc=0
  "${run_gui[@]}" --size 1600x900 --recent-store "$work/recent.json" --screenshot "$work/raw-$png" "$@" || rc=$?
  [ "$rc" = "${EXPECT_EXIT:-0}" ] || { echo "screenshots: $png: tilescope-gui exited $rc" >&2; exit 1; }
  # Written beside the final name and renamed: a failed run leaves the old picture.
  recompress "$work/raw-$png" "$work/$png"
  mv "$work/$png" "$out/$png"
  echo "  $out/$png ($(($(stat -c %s "$out/$png") / 1024)) KiB)"
}

echo "== capturing the demo traces (CPU backend, seed 1) in $work"
# The Split-K demo of scripts/demo.sh, with its fault and fixed.
splitk=(--kernel splitk --batch 1 --heads 4 --seq-q 64 --seq-kv 4096 --head-dim 64 --dtype fp16)
capture splitk-demo "${splitk[@]}" --splits 8 --fault double_count_l
capture splitk-fixed "${splitk[@]}" --splits 8 --fault none
capture splitk-fixed-4 "${splitk[@]}" --splits 4 --fault none
# FA-1, causal, more queries than keys: the first 96 rows see no key at all.
capture fa1-masked-nan --kernel fa1 --heads 1 --seq-q 256 --seq-kv 160 --head-dim 64 --dtype fp16 --causal \
  --fault masked_nan
# A GQA decode: 4 x 32 query heads on 8 kv heads, one query row each.
capture decode-gqa --kernel splitk --batch 4 --heads 32 --heads-kv 8 --seq-q 1 --seq-kv 2048 --head-dim 64 \
  --splits 4 --fault double_count_l

echo "== screenshots"
shot splitk-first-divergence.png "$work/splitk-demo.trace.safetensors" --select first-divergence
# ] three times from the first divergence (the reduce after split 0): the merge of split 3.
printf '2 key rbracket\n4 key rbracket\n6 key rbracket\n' >"$work/step.script"
shot splitk-stepping-reduce.png "$work/splitk-demo.trace.safetensors" --select first-divergence \
  --input-script "$work/step.script" --frames 10
shot fa1-masked-nan.png "$work/fa1-masked-nan.trace.safetensors" --select first-divergence
shot ab-fault-vs-fixed.png "$work/splitk-demo.trace.safetensors" --against "$work/splitk-fixed.trace.safetensors" \
  --select first-divergence --panel ab
shot ab-4-vs-8-splits.png "$work/splitk-fixed-4.trace.safetensors" --against "$work/splitk-fixed.trace.safetensors" \
  --panel ab
# A few frames more than the default 3: tables size themselves over the first frames.
shot launch-panel.png --panel launch --frames 6
printf '2 key ctrl+e\n' >"$work/export.script"
shot export-dialog.png "$work/splitk-demo.trace.safetensors" --select first-divergence \
  --input-script "$work/export.script" --frames 6
# A trace cut short: its header promises more data than the file holds.
head -c 4096 "$work/splitk-demo.trace.safetensors" >"$work/corrupt.trace.safetensors"
EXPECT_EXIT=2 shot error-panel.png "$work/corrupt.trace.safetensors"
shot splitk-clean-overview.png "$work/splitk-fixed.trace.safetensors"
shot timeline-gpu.png assets/traces/splitk_double_count_l.gpu.trace.safetensors --panel timeline
shot decode-overview.png "$work/decode-gqa.trace.safetensors" --select first-divergence
