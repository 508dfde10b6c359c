#!/usr/bin/env bash
# The torch tests of the Python package, on a GPU machine (torch with CUDA, nvcc, pytest; no
# network needed): builds examples/torch_extension twice through torch.utils.cpp_extension
# (fixed and with the planted bug), records it with tilescope.record, asserts it, and prints the
# planted bug's assertion message. The package is used from the checkout (PYTHONPATH=python: the
# probe headers are found in instrumentation/probe), so nothing is installed.
#   tests/python/gpu_torch.sh [TILESCOPE_CLI]     (default: build/release, then build/default)
# Writes its log to $OUT/gpu_torch.log when $OUT is set. docs/gpu-validation.md records runs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cli=${1:-${TILESCOPE_CLI:-}}
if [ -z "$cli" ]; then
  for c in "$repo/build/release/app/cli/tilescope" "$repo/build/default/app/cli/tilescope"; do
    [ -x "$c" ] && { cli=$c; break; }
  done
fi
[ -n "$cli" ] && [ -x "$cli" ] || { echo "gpu_torch.sh: give the tilescope CLI (argument or TILESCOPE_CLI)" >&2; exit 2; }
log=${OUT:-/tmp}/gpu_torch.log
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name())" | tee "$log"
export TILESCOPE_CLI=$cli PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH}
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$repo/build/torch_extensions}
cd "$repo"
python3 -m pytest -v -s -p no:cacheprovider examples/torch_extension tests/python/test_record_host.py 2>&1 | tee -a "$log"
exit "${PIPESTATUS[0]}"
