"""``tilescope.diff``: the C++ analysis's report, through the CLI's JSON (no second analysis here)."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple, Union

from ._cli import CliError, run_cli
from .trace import Trace, file_identity

PathOrTrace = Union[str, "os.PathLike[str]", Trace]


class Report:
    """What ``tilescope diff --json`` says about a trace.

    ``data`` is the whole JSON object; the attributes below are its main parts. ``str(report)``
    (and :attr:`text`) is the report as ``tilescope diff`` prints it.
    """

    def __init__(self, data: Dict[str, Any], args: List[str], clean: bool,
                 files: Optional[List[Tuple[str, Any]]] = None) -> None:
        self.data = data
        self._clean = clean
        self._args = args
        self._files = files or []  # (path, file_identity) of each trace the report is of
        self._text: Optional[str] = None

    @property
    def verdict(self) -> str:
        """The verdict line: "clean: ..." or a divergence."""
        return str(self.data.get("verdict", ""))

    @property
    def clean(self) -> bool:
        """Whether the trace matches the reference everywhere (the CLI exited 0)."""
        return self._clean

    @property
    def first_divergence(self) -> Optional[Dict[str, Any]]:
        """Where the kernel first left the reference, in its own order (None when clean)."""
        return self.data.get("first_divergence")

    @property
    def stages(self) -> Dict[str, Any]:
        """Per stage: verdict, event and row counts, errors of m, l and O."""
        return self.data.get("stages", {})

    @property
    def symptom(self) -> Optional[str]:
        return self.data.get("symptom")

    @property
    def symptom_kind(self) -> Optional[str]:
        return self.data.get("symptom_kind")

    @property
    def mechanism(self) -> Optional[Any]:
        """The mechanism that explains every wrong row, or None when none was established."""
        return self.data.get("mechanism")

    @property
    def origin_stage(self) -> Optional[str]:
        return self.data.get("origin_stage")

    @property
    def failing_sets(self) -> Dict[str, Any]:
        """Where, as sets: batches, heads, queries, splits... per stage."""
        return self.data.get("failing_sets", {})

    @property
    def worst_cell(self) -> Optional[Dict[str, Any]]:
        return self.data.get("worst_cell")

    @property
    def text(self) -> str:
        """The report as ``tilescope diff`` prints it (run on first use)."""
        if self._text is None:
            _check_unchanged(self._files, "since the report was made; run tilescope.diff again")
            self._text = run_cli(["diff", *self._args], ok=(0, 1)).stdout.rstrip("\n")
        return self._text

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<tilescope.Report {'clean' if self.clean else 'DIVERGENCE'}: {self.verdict[:100]!r}>"


def _file(x: PathOrTrace) -> Tuple[str, Any]:
    """(path for the CLI, its file_identity): a loaded Trace's own file (absolute, as it was
    read, OSError when it changed since), or a path's file as it is now."""
    if isinstance(x, Trace) and x.file is not None:
        path, identity = x.file
        _check_unchanged([(path, identity)], f"since {x.path} was loaded; tilescope.load it again")
        return path, identity
    path = x.path if isinstance(x, Trace) else os.fsdecode(x)
    # A name that starts with '-' would be read by the CLI as an option.
    path = os.path.join(".", path) if path.startswith("-") else path
    return path, file_identity(path)


def _check_unchanged(files: List[Tuple[str, Any]], advice: str) -> None:
    for path, identity in files:
        if file_identity(path) != identity:
            raise OSError(f"{path}: the file changed {advice}")


def diff(run: PathOrTrace, against: Optional[PathOrTrace] = None, tol: Optional[str] = None) -> Report:
    """Compares a trace with the float64 reference (and with a second run) by ``tilescope diff``.

    ``run`` and ``against`` are paths or :class:`Trace` objects; ``tol`` an explicit tolerance
    ``"atol[,rtol]"``. A trace the CLI refuses raises :class:`CliError` with its message; a
    missing CLI :class:`CliNotFoundError`.
    """
    files = [_file(run)] + ([_file(against)] if against is not None else [])
    args = [files[0][0]]
    if against is not None:
        args += ["--against", files[1][0]]
    if tol is not None:
        args += ["--tol", tol]
    done = run_cli(["diff", *args, "--json"], ok=(0, 1))
    _check_unchanged(files, "while it was analysed; run tilescope.diff again")
    try:
        data = json.loads(done.stdout)
    except ValueError as e:
        raise CliError(f"tilescope diff --json printed no JSON ({e}): {done.stdout[:200]!r}", done.returncode) from None
    if not isinstance(data, dict):
        raise CliError("tilescope diff --json printed JSON that is not an object", done.returncode)
    return Report(data, args, clean=done.returncode == 0, files=files)
