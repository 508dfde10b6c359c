#!/usr/bin/env bash
# Runs the Python package's tests (CTest: python_package, label cpu): makes a virtual environment
# under the build folder once (Debian's python3 and python3-venv; numpy, pytest and the build
# backend from PyPI), installs the package from python/ into it (headers and version taken from
# the repository at build time), and runs pytest with the CLI the build made.
#   tests/python/run.sh BUILD_DIR TILESCOPE_CLI [PYTEST ARGS...]
# (CTest passes TILESCOPE_TEST_CXX, the C++ compiler for the layout test, and
# TILESCOPE_TEST_RECORD_HOST_{FIXED,PLANTED}, the CPU-path kernels for record()'s host side.)
set -euo pipefail
build=$(realpath "$1"); cli=$(realpath "$2")
repo=$(cd "$(dirname "$0")/../.." && pwd)
venv=$build/python-venv
# What the environment needs; its hash names the setup, so a change makes a fresh one.
requirements="numpy pytest wheel setuptools"
stamp="$venv/.tilescope-setup-$(echo "$requirements" | sha256sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  start=$(date +%s%N)
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check $requirements
  touch "$stamp"
  echo "python tests: set up $venv in $(( ($(date +%s%N) - start) / 1000000 )) ms"
fi
# Built out of the source tree (a copy of python/: the in-tree build folders stay out of git).
work=$build/python-package
rm -rf "$work"; mkdir -p "$work"
cp -r "$repo/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
# setup.py finds the repository at its parent: point it there.
TILESCOPE_REPO="$repo" "$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation \
  --no-deps --force-reinstall "$work/src"
cd "$work"
TILESCOPE_CLI=$cli "$venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/tests/python" "${@:3}"
