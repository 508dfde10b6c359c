"""Where the kernel runs: in Triton's interpreter on CPU tensors when TRITON_INTERPRET=1 is set
(before triton is imported: pytest reads this file first), compiled on the GPU otherwise. Seeds
are fresh per run (TILESCOPE_TEST_SEED replays one) and printed with every failure."""
import os
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
INTERPRETED = os.environ.get("TRITON_INTERPRET", "") not in ("", "0")
if INTERPRETED:
    # Triton 3.5/3.6 under NumPy >= 2.4 cannot take the kv loop's runtime bound: the decode
    # example's mend (docs/your-own-kernel.md, "A Triton kernel").
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "triton_decode"))
    import interpreter_compat

    interpreter_compat.install()

_BASE_SEED = int(os.environ["TILESCOPE_TEST_SEED"]) if "TILESCOPE_TEST_SEED" in os.environ else (
    int.from_bytes(os.urandom(4), "little"))


def pytest_report_header(config):
    return f"TILESCOPE_TEST_SEED={_BASE_SEED} (set it to replay this run's inputs)"


@pytest.fixture
def seed(request):
    """This test's seed: the run's seed mixed with the test's name."""
    return (_BASE_SEED ^ zlib.crc32(request.node.name.encode())) & 0x7FFFFFFF


@pytest.fixture(scope="session")
def device():
    import torch

    if INTERPRETED:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: run with TRITON_INTERPRET=1 for Triton's interpreter")
    return torch.device("cuda")
