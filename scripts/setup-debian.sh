#!/usr/bin/env bash
# Installs what tilescope builds with, from Debian's packages, skipping what is already there.
# Called by scripts/demo.sh and scripts/test.sh; safe to run again. The CUDA toolkit is not a
# Debian package: it is expected at /usr/local/cuda (nvcc builds the GPU code even on machines
# without a GPU); without it the build continues CPU-only and says so.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  clang libclang-rt-14-dev                       # libFuzzer for the trace-reader fuzz target
  libboost-context-dev                           # fibers of the SIMT runtime
  nlohmann-json3-dev libcli11-dev libstb-dev     # trace headers / CLI / PNG export
  libssl-dev                                     # SHA-256 of input files (static libcrypto)
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libimgui-dev libglfw3-dev python3-glad libgl-dev   # the viewer
  fonts-dejavu-core                              # the viewer's UI font (else ImGui's built-in one)
  xvfb xauth libgl1-mesa-dri                     # screenshot tests (Mesa llvmpipe under Xvfb)
  python3 python3-numpy                          # traces load with numpy and no tilescope code
  python3-venv                                   # the Python package's tests (tests/python/run.sh)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo_cmd=(sudo); else
      echo "setup: need root (or sudo) to apt-get install: ${missing[*]}" >&2; exit 1; fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: warning: no CUDA toolkit at /usr/local/cuda; building without the GPU targets." >&2
  echo "setup:          install the CUDA toolkit there to build the nvcc kernels." >&2
fi
