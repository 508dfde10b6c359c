"""Where the example's kernels run: in Triton's interpreter on CPU tensors when TRITON_INTERPRET=1
is set (before triton is imported: pytest reads this file first), compiled on the GPU otherwise."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
INTERPRETED = os.environ.get("TRITON_INTERPRET", "") not in ("", "0")
if INTERPRETED:
    import interpreter_compat

    interpreter_compat.install()  # Triton 3.5/3.6 under NumPy >= 2.4: see interpreter_compat.py


@pytest.fixture(scope="session")
def device():
    import torch

    if INTERPRETED:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: run with TRITON_INTERPRET=1 for Triton's interpreter")
    return torch.device("cuda")
