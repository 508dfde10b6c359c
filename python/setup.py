"""Build step of the tilescope Python package (pyproject.toml holds the rest).

Two facts live elsewhere in the repository and are taken from there at build time, never copied
into git: the version (CMakeLists.txt's project(tilescope VERSION ...), written into
tilescope/_version.py) and the probe headers (instrumentation/probe/tilescope/*.h, copied into
tilescope/include/tilescope/). Build from a checkout: `pip install ./python`.
"""
import os
import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# The repository: python/'s parent, or TILESCOPE_REPO for a copy of python/ built elsewhere.
REPO = Path(os.environ.get("TILESCOPE_REPO", HERE.parent)).resolve()
PROBE = REPO / "instrumentation" / "probe" / "tilescope"


def cmake_version() -> str:
    text = (REPO / "CMakeLists.txt").read_text(encoding="utf-8")
    match = re.search(r"project\(\s*tilescope\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", text)
    if not match:
        raise SystemExit(f"{REPO / 'CMakeLists.txt'}: no project(tilescope VERSION x.y.z); build from a checkout")
    return match.group(1)


class BuildWithHeaders(build_py):
    def run(self):
        super().run()
        if not PROBE.is_dir():
            raise SystemExit(f"{PROBE} not found: build the package from a tilescope checkout")
        target = Path(self.build_lib) / "tilescope"
        include = target / "include" / "tilescope"
        include.mkdir(parents=True, exist_ok=True)
        for header in sorted(PROBE.glob("*.h")):
            shutil.copy2(header, include / header.name)
        (target / "_version.py").write_text(f'__version__ = "{cmake_version()}"\n', encoding="utf-8")


setup(version=cmake_version(), cmdclass={"build_py": BuildWithHeaders})
