"""What the installed package ships: the probe headers (copied at build time from
instrumentation/probe, byte for byte), the CMake package over them, the version."""
import filecmp
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import tilescope

from conftest import REPO, installed

pytestmark = pytest.mark.skipif(not installed(), reason="tests the installed package (tests/python/run.sh)")


def test_headers_are_the_repositorys(tmp_path):
    include = Path(tilescope.get_include())
    assert Path(tilescope.__file__).parent in include.parents, "get_include() should be the package's own"
    source = REPO / "instrumentation" / "probe" / "tilescope"
    names = sorted(p.name for p in source.glob("*.h"))
    assert names == sorted(p.name for p in (include / "tilescope").glob("*.h"))
    for name in names:
        assert filecmp.cmp(source / name, include / "tilescope" / name, shallow=False), name


def test_cmake_package_gives_the_probe_target(tmp_path):
    cmake = shutil.which("cmake")
    if not cmake:
        pytest.skip("no cmake")
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(user LANGUAGES NONE)\n"
        "find_package(tilescope_probe REQUIRED)\n"
        "get_target_property(dirs tilescope::probe INTERFACE_INCLUDE_DIRECTORIES)\n"
        "file(WRITE ${CMAKE_BINARY_DIR}/dirs.txt \"${dirs}\")\n")
    subprocess.run([cmake, "-S", str(tmp_path), "-B", str(tmp_path / "b"),
                    f"-DCMAKE_PREFIX_PATH={tilescope.get_cmake_dir()}"], check=True, capture_output=True)
    dirs = (tmp_path / "b" / "dirs.txt").read_text()
    assert os.path.samefile(dirs, tilescope.get_include())
