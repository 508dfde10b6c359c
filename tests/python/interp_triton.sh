#!/usr/bin/env bash
# The Triton examples' tests without a GPU (examples/triton_decode, then examples/triton_prefill's in the
# interpreter only): in Triton's interpreter (TRITON_INTERPRET=1, CPU
# tensors), then compiled ahead of time for sm_80 and sm_90 (test_helpers_compile_away: the
# kernels with TS=False are the kernels without the helpers, PTX and SASS). Not in CI (torch and triton cost about 2 min and 5.4 GB to install: docs/python.md);
# run by hand, or by tests/python/gpu_triton.sh on the GPU machine.
#   tests/python/interp_triton.sh BUILD_DIR [PYTEST ARGS...]
# Uses $PYTHON when it imports torch, triton and pytest; otherwise makes a virtual environment
# under BUILD_DIR once (triton-venv; needs PyPI) and reuses it. The CLI: BUILD_DIR/app/cli/tilescope
# (cmake --build --preset default --target tilescope), or $TILESCOPE_CLI.
set -euo pipefail
build=$(realpath "$1"); shift
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-}
case $py in */*) py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py");; esac  # it runs in the example's folder
if [ -z "$py" ] || ! "$py" -c "import torch, triton, pytest" 2>/dev/null; then
  venv=$build/triton-venv
  if ! "$venv/bin/python" -c "import torch, triton, pytest, numpy" 2>/dev/null; then
    start=$(date +%s)
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check torch triton numpy pytest
    echo "interp_triton.sh: set up $venv in $(( $(date +%s) - start )) s, $(du -sh "$venv" | cut -f1)"
  fi
  py=$venv/bin/python
fi
export TILESCOPE_CLI=${TILESCOPE_CLI:-$build/app/cli/tilescope}
[ -x "$TILESCOPE_CLI" ] || { echo "interp_triton.sh: no CLI at $TILESCOPE_CLI (build the tilescope target)" >&2; exit 2; }
export PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH} TRITON_DEFAULT_FP_FUSION=${TRITON_DEFAULT_FP_FUSION:-1}
cd "$repo/examples/triton_decode"
TRITON_INTERPRET=1 "$py" -m pytest -q -p no:cacheprovider . "$@"
"$py" -m pytest -q -p no:cacheprovider -k compile_away . "$@"
cd "$repo/examples/triton_prefill"
TRITON_INTERPRET=1 "$py" -m pytest -q -p no:cacheprovider . "$@"
