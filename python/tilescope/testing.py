"""Assertions for pytest, in the manner of ``torch.testing.assert_close``."""
from __future__ import annotations

from typing import Any, Callable, Optional, Union

from .report import PathOrTrace, Report, diff


def assert_attention_matches(trace: Union[PathOrTrace, Callable[[], Any]], against: Optional[PathOrTrace] = None,
                             tol: Optional[str] = None, msg: Optional[str] = None) -> Report:
    """Asserts that a traced kernel matches the float64 reference (and ``against``, a second run).

    ``trace`` is a trace path, a :class:`tilescope.Trace`, or a callable that records one and
    returns its path (a :class:`tilescope.Recording` or a Trace works too). On a divergence it
    raises AssertionError whose message is the report's text (``tilescope diff``: where, how much,
    which mechanism), after ``msg`` when given. Returns the :class:`Report` when clean.
    """
    if callable(trace) and not isinstance(trace, (str, bytes)):
        made = trace()
        if made is None:
            raise TypeError("the callable given to assert_attention_matches returned None; it must return the "
                            "trace's path, a tilescope.Trace or a tilescope.Recording")
        trace = made
    if hasattr(trace, "path") and not hasattr(trace, "events"):  # a Recording
        trace = trace.path
    report = diff(trace, against=against, tol=tol)  # type: ignore[arg-type]
    if not report.clean:
        text = report.text
        raise AssertionError(f"{msg}\n{text}" if msg else f"the kernel's trace diverges from the reference:\n{text}")
    return report
