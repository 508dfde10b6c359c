"""Fixtures of the Python package's tests: the CLI (TILESCOPE_CLI, set by tests/python/run.sh)
and traces it captures from fresh seeded random inputs."""
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def installed() -> bool:
    """Whether tilescope is the installed package (run.sh), not python/ of a checkout on PYTHONPATH."""
    import tilescope
    return REPO / "python" not in Path(tilescope.__file__).resolve().parents


@pytest.fixture(scope="session")
def cli() -> str:
    path = os.environ.get("TILESCOPE_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("set TILESCOPE_CLI to the built tilescope binary (tests/python/run.sh does)")
    return path


def run(cli, *args, ok=(0,)):
    done = subprocess.run([cli, *map(str, args)], capture_output=True, text=True)
    assert done.returncode in ok, f"tilescope {' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr}"
    return done


@pytest.fixture(scope="session")
def capture(cli, tmp_path_factory):
    """capture(name, *args) -> path: `tilescope capture --backend cpu ARGS -o PATH`, cached per args."""
    folder = tmp_path_factory.mktemp("traces")
    made = {}

    def make(*args):
        key = tuple(map(str, args))
        if key not in made:
            path = folder / f"t{len(made)}.trace.safetensors"
            done = run(cli, "capture", "--backend", "cpu", "--workers", "2", *key, "-o", path)
            made[key] = (path, done.stdout)
        return made[key][0]

    make.stdout = lambda *args: made[tuple(map(str, args))][1]
    return make


@pytest.fixture
def rng(request):
    """A generator seeded from the test's name: fresh data per test, reproducible per test."""
    seed = int.from_bytes(request.node.name.encode()[:8].ljust(8, b"\0"), "little") % 2**32
    return np.random.default_rng(seed)


def events_line(stdout: str) -> dict:
    """{stage: count} from capture's 'Events: 8 splitk.tile, 16 splitk.partial, ...' line."""
    line = re.search(r"^Events: (.*?) \(", stdout, re.M).group(1)
    return {name: int(n) for n, name in (part.split(" ") for part in line.split(", "))}
