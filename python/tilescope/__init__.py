"""tilescope in Python: read traces, record a PyTorch extension's kernel, assert in pytest.

- :func:`load` reads a trace (numpy; no binary needed);
- :func:`diff` runs tilescope's C++ analysis (the ``tilescope`` CLI) and returns a :class:`Report`;
- :func:`tilescope.testing.assert_attention_matches` asserts with the report as the message;
- :func:`record` traces a CUDA kernel of a PyTorch extension (needs torch);
- :mod:`tilescope.triton` (imported on its own; needs triton): helpers a Triton kernel calls to
  record its states into :func:`record`'s buffer (``**rec.triton`` at launch);
- :func:`get_include` / :func:`get_cmake_dir` give an extension the probe headers.
"""
from ._cli import CliError, CliNotFoundError, find_cli
from ._paths import get_cmake_dir, get_include, version as _version
from ._safetensors import TraceFormatError
from .record import Recording, record
from .report import Report, diff
from .trace import Events, Inputs, Stage, Trace, load
from .writer import Attention, RecorderError, TraceFilter

__version__: str = _version()

__all__ = ["__version__", "load", "Trace", "Events", "Inputs", "Stage", "TraceFormatError", "diff", "Report",
           "CliError", "CliNotFoundError", "find_cli", "record", "Recording", "RecorderError", "Attention",
           "TraceFilter", "get_include", "get_cmake_dir"]
