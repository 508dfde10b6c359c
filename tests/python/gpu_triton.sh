#!/usr/bin/env bash
# The Triton examples on a GPU machine (torch with CUDA, triton, pytest;
# no network; the package from the checkout, PYTHONPATH=python): its pytest file compiled and in
# Triton's interpreter, the same seeded run recorded both ways (fixed and planted) and diffed, the
# verdicts compared, and the helpers' cost with TS=False against the kernels without them
# (examples/triton_decode); then examples/triton_prefill's pytest file, compiled and in the interpreter.
#   tests/python/gpu_triton.sh [TILESCOPE_CLI]     (default: build/release, then build/default)
# Writes gpu_triton.log, bench_helpers.json and the four traces to $OUT when set (else /tmp).
# Exit status 0 only when every step passed; a failing step's first error line is printed after it
# and again, with the step's name, at the end. docs/gpu-validation.md records runs.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cli=${1:-${TILESCOPE_CLI:-}}
if [ -z "$cli" ]; then
  for c in "$repo/build/release/app/cli/tilescope" "$repo/build/default/app/cli/tilescope"; do
    [ -x "$c" ] && { cli=$c; break; }
  done
fi
[ -n "$cli" ] && [ -x "$cli" ] || { echo "gpu_triton.sh: give the tilescope CLI (argument or TILESCOPE_CLI)" >&2; exit 2; }
cli=$(realpath "$cli")  # the steps run in the example's folder
out=${OUT:-/tmp/gpu_triton}; mkdir -p "$out"; log=$out/gpu_triton.log; : > "$log"
export TILESCOPE_CLI=$cli PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH}
export TRITON_DEFAULT_FP_FUSION=${TRITON_DEFAULT_FP_FUSION:-1}  # Triton 3.9's default, said (it warns otherwise)
py=${PYTHON:-python3}
case $py in */*) py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py");; esac  # not realpath: a venv's python is a link
failed=0 failures=()
first_error() {  # first_error FILE: the step's first line that says what went wrong
  local line
  # pytest's first E line, else the first Python exception line, else any error, else the last line
  line=$(grep -m1 -E '^E  ' "$1") ||
    line=$(grep -m1 -E '^[A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Exit)(:|$)' "$1") ||
    line=$(grep -m1 -iE 'error|failed|not found|no such' "$1") ||
    line=$(grep -v '^[[:space:]]*$' "$1" | tail -n1)
  line=$(printf '%s' "$line" | sed -E 's/^E +//')
  printf '%s' "${line:0:300}"
}
step() {  # step NAME COMMAND...: runs it, logs it, remembers a failure and its first error line
  local name=$1; shift
  echo "== $name" | tee -a "$log"
  local start=$(date +%s%N) part=$out/.step.log
  "$@" 2>&1 | tee "$part" | tee -a "$log"; local rc=${PIPESTATUS[0]}
  echo "== rc $rc, $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$log"
  if [ "$rc" != 0 ]; then
    failed=1
    local err; err=$(first_error "$part")
    echo "== first error: $err" | tee -a "$log"
    failures+=("$name: $err")
  fi
  rm -f "$part"
}
cd "$repo/examples/triton_decode"
step "versions" "$py" -c "import torch, triton; assert torch.cuda.is_available(), 'no CUDA device'; print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name(), 'triton', triton.__version__)"
step "pytest, compiled" "$py" -m pytest -v -s -p no:cacheprovider .
step "pytest, interpreter" env TRITON_INTERPRET=1 "$py" -m pytest -v -p no:cacheprovider .
for mode in compiled interpreter; do
  for variant in fixed planted; do
    flag=; [ $variant = planted ] && flag=--planted
    interp=0; [ $mode = interpreter ] && interp=1
    step "record $variant, $mode" env TRITON_INTERPRET=$interp "$py" run_decode.py "$out/$variant.$mode.trace.safetensors" $flag
    "$cli" diff --json "$out/$variant.$mode.trace.safetensors" > "$out/$variant.$mode.json"
    "$cli" diff "$out/$variant.$mode.trace.safetensors" >> "$log" 2>&1
  done
done
step "verdicts: compiled == interpreter" "$py" - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for variant in ("fixed", "planted"):
    r = {m: json.load(open(f"{out}/{variant}.{m}.json")) for m in ("compiled", "interpreter")}
    seen = {m: (d["verdict"], (d.get("first_divergence") or {}).get("stage"), d.get("origin_stage"),
                d["stages"]["partial"]["verdict"], d["stages"]["merge"]["verdict"]) for m, d in r.items()}
    print(variant, seen)
    assert seen["compiled"] == seen["interpreter"], f"{variant}: the verdicts differ"
    assert seen["compiled"][0] == ("clean" if variant == "fixed" else "divergence")
    if variant == "planted":
        assert seen["compiled"][1] == "merge" and seen["compiled"][3] == "clean"
PY
echo "== compiled against interpreter (fixed; informative)" | tee -a "$log"
"$cli" diff "$out/fixed.compiled.trace.safetensors" --against "$out/fixed.interpreter.trace.safetensors" 2>&1 | head -8 | tee -a "$log"
step "helpers' cost (TS=False vs no helpers)" "$py" bench_helpers.py --json "$out/bench_helpers.json"
cd "$repo/examples/triton_prefill"
step "prefill pytest, compiled" "$py" -m pytest -v -p no:cacheprovider .
step "prefill pytest, interpreter" env TRITON_INTERPRET=1 "$py" -m pytest -v -p no:cacheprovider .
for f in "${failures[@]}"; do echo "gpu_triton.sh: failed step: $f" | tee -a "$log"; done
echo "gpu_triton.sh: $([ $failed = 0 ] && echo passed || echo FAILED)" | tee -a "$log"
exit $failed
