"""Where the package's files are: the probe headers, the CMake package, the CLI, the version.

An installed package holds them under its own folder (the build copies the probe headers from
the repository's instrumentation/probe and reads the version from its CMakeLists.txt). Run from
a checkout without installing (``PYTHONPATH=python``), they are found in the repository itself.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

_PACKAGE = Path(__file__).resolve().parent
_REPO = _PACKAGE.parent.parent  # python/tilescope -> the repository, when run from a checkout


def _in_checkout() -> bool:
    return (_REPO / "instrumentation" / "probe" / "tilescope" / "probe.h").is_file()


def get_include() -> str:
    """The folder to add to an extension's include path for ``#include "tilescope/probe.h"``.

    With it, ``tilescope/probe.h``, ``event.h``, ``trace_view.h`` and ``portable.h`` compile in a
    .cu under nvcc (define ``TILESCOPE_TRACE=1`` to compile the probes in).
    """
    packaged = _PACKAGE / "include"
    if (packaged / "tilescope" / "probe.h").is_file():
        return str(packaged)
    if _in_checkout():
        return str(_REPO / "instrumentation" / "probe")
    raise FileNotFoundError(f"tilescope's probe headers are not in {packaged}: reinstall the package")


def get_cmake_dir() -> str:
    """A folder to add to ``CMAKE_PREFIX_PATH`` so that ``find_package(tilescope_probe)`` gives
    ``tilescope::probe`` (the header-only probe target) from this package's headers."""
    return str(_PACKAGE / "cmake")


def cmake_version_of(cmake_lists: Path) -> str:
    """The version in a CMakeLists.txt's ``project(tilescope VERSION x.y.z ...)``."""
    text = cmake_lists.read_text(encoding="utf-8")
    match = re.search(r"project\(\s*tilescope\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", text)
    if not match:
        raise RuntimeError(f"{cmake_lists}: no project(tilescope VERSION x.y.z)")
    return match.group(1)


def version() -> str:
    """The package's version: the CMake project's (written into _version.py at build time)."""
    try:
        from ._version import __version__  # type: ignore[import-not-found]

        return str(__version__)
    except ImportError:
        pass
    if _in_checkout():
        return cmake_version_of(_REPO / "CMakeLists.txt")
    return "0+unknown"


def packaged_cli() -> Optional[Path]:
    """The CLI shipped inside the package (bin/tilescope), if it has one."""
    path = _PACKAGE / "bin" / "tilescope"
    return path if path.is_file() and os.access(path, os.X_OK) else None
