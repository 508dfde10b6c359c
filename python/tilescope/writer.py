"""Writing a trace from what a kernel recorded: the host side of ``tilescope.record``.

It does what the C++ recorder's TraceWriter does (instrumentation/recorder): keeps the written
slots of the device buffer in the kernel's own order, checks every event against the schema
(the reader's rules, :func:`tilescope.trace.event_problems`) with a hint of what to change,
stores Q, K, V of the traced (batch, head) pairs (K and V once per kv head), the output and its
LSE, and writes the file atomically.
"""
from __future__ import annotations

import json
import numbers
import operator
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._layout import EVENT_HEADER, INT32_MAX, MAX_KEY_RANGES, BufferLayout
from ._paths import version
from ._safetensors import write_safetensors
from .trace import (FORMAT_KEY, HEADER_COLUMNS, MAX_STAGE_NAME_BYTES, MAX_STAGE_PASS, MAX_STAGES, STAGE_FLAGS,
                    STAGE_KINDS, Stage, attention_problem, event_problems)


class RecorderError(ValueError):
    """What a recording was given or recorded cannot make a trace: the message says what to fix."""


@dataclass
class Attention:
    """The attention the kernel computes, as the float64 reference computes it
    (docs/trace-format.md, "The attention description"). ``heads_kv`` 0 means ``heads_q``;
    ``scale`` 0 means 1/sqrt(head_dim); ``causal`` is "none", "bottom_right" or "top_left"."""

    batch: int
    heads_q: int
    seq_q: int
    seq_kv: int
    head_dim: int
    heads_kv: int = 0
    scale: float = 0.0
    causal: str = "none"
    window_left: int = -1
    window_right: int = -1
    softcap: float = 0.0
    q_lens: List[int] = field(default_factory=list)
    kv_lens: List[int] = field(default_factory=list)
    alibi_slopes: List[float] = field(default_factory=list)

    def to_json(self, dtype: str) -> Dict[str, Any]:
        """The description as a trace stores it, after checking it by the readers' rule
        (:func:`tilescope.trace.attention_problem`): integers must be integers (numpy's too), not
        floats or bools, and numbers real; nothing is rounded or coerced."""
        def whole(v: Any) -> Any:
            if isinstance(v, bool):
                return v
            try:
                return operator.index(v)
            except TypeError:
                return v  # refused below, as it was given

        def real(v: Any) -> Any:
            return float(v) if isinstance(v, numbers.Real) and not isinstance(v, bool) else v

        def listed(v: Any, each: Any) -> Any:
            return [each(x) for x in v] if isinstance(v, (list, tuple)) else v

        causal = {True: "bottom_right", False: "none"}.get(self.causal, self.causal) \
            if isinstance(self.causal, bool) else self.causal
        a = {"batch": whole(self.batch), "heads_q": whole(self.heads_q),
             "heads_kv": whole(self.heads_kv or self.heads_q), "seq_q": whole(self.seq_q),
             "seq_kv": whole(self.seq_kv), "head_dim": whole(self.head_dim), "dtype": dtype,
             "scale": real(self.scale), "causal": causal, "window_left": whole(self.window_left),
             "window_right": whole(self.window_right), "softcap": real(self.softcap),
             "q_lens": listed(self.q_lens, whole), "kv_lens": listed(self.kv_lens, whole),
             "alibi_slopes": listed(self.alibi_slopes, real)}
        problem = attention_problem(a)
        if problem:
            raise RecorderError(f"the attention cannot be stored: {problem}")
        return a


@dataclass
class TraceFilter:
    """Capture filters (tilescope/trace_view.h): half-open ranges; ``None`` as an end: open.
    ``stages``: the names kept (None: all)."""

    batch: Tuple[int, Optional[int]] = (0, None)
    head: Tuple[int, Optional[int]] = (0, None)
    queries: Tuple[int, Optional[int]] = (0, None)
    stages: Optional[Sequence[str]] = None

    def _kept_stages(self) -> Optional[List[str]]:
        return [self.stages] if isinstance(self.stages, str) else None if self.stages is None else list(self.stages)

    def view_fields(self, stages: Sequence[Stage]) -> Dict[str, int]:
        for what, r in (("batch", self.batch), ("head", self.head), ("queries", self.queries)):
            ok = isinstance(r, (tuple, list)) and len(r) == 2 and all(
                (v is None and i == 1) or (type(v) is int and 0 <= v <= INT32_MAX) for i, v in enumerate(r))
            if not ok:
                raise RecorderError(f"filter {what} = {r!r}: a (begin, end) pair of indices from 0 to {INT32_MAX}, "
                                    "end None for open")

        def end(v: Optional[int]) -> int:
            return INT32_MAX if v is None else int(v)

        mask = (1 << 64) - 1
        kept = self._kept_stages()
        if kept is not None:
            names = [s.name for s in stages]
            unknown = [n for n in kept if n not in names]
            if unknown:
                raise RecorderError(f"filter stages {unknown} are not in the stage table ({names})")
            mask = sum(1 << i for i, n in enumerate(names) if n in kept)
        return {"filter.batch_begin": self.batch[0], "filter.batch_end": end(self.batch[1]),
                "filter.head_begin": self.head[0], "filter.head_end": end(self.head[1]),
                "filter.query_begin": self.queries[0], "filter.query_end": end(self.queries[1]),
                "filter.stage_mask": mask}

    def keeps(self, batch: int, head: int) -> bool:
        def inside(v: int, r: Tuple[int, Optional[int]]) -> bool:
            return v >= r[0] and (r[1] is None or v < r[1])

        return inside(batch, self.batch) and inside(head, self.head)

    def to_json(self, stages: Sequence[Stage]) -> str:
        kept = self._kept_stages()
        names = [s.name for s in stages if kept is None or s.name in kept]
        return json.dumps({"enabled": True, "batch": list(self.batch), "head": list(self.head),
                           "queries": list(self.queries), "stages": names})


def _utf8_bytes(name: str) -> int:
    """The name's length in UTF-8, or -1 when it has none (a lone surrogate)."""
    try:
        return len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return -1


def stage_table(stages: Sequence[Any]) -> List[Stage]:
    """Stages from (name, kind[, pass[, p_rounded]]) tuples or :class:`Stage`; passes default as the
    format says (-1 or absent), p_rounded and exp2_folded to False."""
    out = []
    for s in stages:
        if isinstance(s, Stage):
            out.append((s.name, s.kind, s.pass_, tuple(getattr(s, flag) for flag in STAGE_FLAGS)))
        elif isinstance(s, str):
            out.append((s, "state", -1, ()))
        else:
            if not 2 <= len(s) <= 4:
                raise RecorderError(f"stage {tuple(s)!r}: give (name, kind[, pass[, p_rounded]]) or a tilescope.Stage")
            name, kind, p, rounded = tuple(s) + (-1, False)[len(s) - 2:]
            out.append((name, kind, p, (rounded,)))
    if not 1 <= len(out) <= MAX_STAGES:
        raise RecorderError(f"declare 1 to {MAX_STAGES} stages: one per kind of event the kernel records")
    names = set()
    for name, kind, p, r in out:
        if (not isinstance(name, str) or not 1 <= _utf8_bytes(name) <= MAX_STAGE_NAME_BYTES
                or any(ord(c) < 32 or ord(c) == 127 for c in name)):
            raise RecorderError(f"stage name {name!r}: 1 to {MAX_STAGE_NAME_BYTES} bytes, no control characters")
        if name in names:
            raise RecorderError(f"stage name {name!r} is declared twice")
        names.add(name)
        if kind not in STAGE_KINDS:
            raise RecorderError(f"stage {name!r}: kind {kind!r} is not one of {', '.join(STAGE_KINDS)}")
        if isinstance(p, bool) or not isinstance(p, int) or not -1 <= p <= MAX_STAGE_PASS:
            raise RecorderError(f"stage {name!r}: pass {p!r}; a pass from 0 to {MAX_STAGE_PASS}, or -1 for the default")
        for flag, value in zip(STAGE_FLAGS, r):
            if not isinstance(value, bool):
                raise RecorderError(f"stage {name!r}: {flag} {value!r} must be True or False")
    passes = [p if p >= 0 else (0 if k == "state" else 1 if k == "merge" else -1) for _, k, p, _ in out]
    others = [p for p, (_, k, _, _) in zip(passes, out) if k != "final"]
    last = max(others) if others else 0
    return [Stage(n, k, p if p >= 0 else last, *f) for (n, k, _, f), p in zip(out, passes)]


def collect(buffer: np.ndarray, layout: BufferLayout) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Splits a trace buffer's bytes (uint8, copied from the device) into its headers, m, l, O up
    to the last written slot (Recorder::collect), and the counters (next_slot, dropped)."""
    if buffer.dtype != np.uint8 or buffer.ndim != 1 or buffer.size != layout.total:
        raise RecorderError(f"a trace buffer of {layout.total} bytes was expected, got {buffer.size}")
    headers = buffer[:layout.capacity * EVENT_HEADER.itemsize].view(EVENT_HEADER)
    written = np.nonzero(headers["stage"] != -1)[0]
    used = int(written[-1]) + 1 if written.size else 0
    rows, hd = layout.max_rows, layout.head_dim
    m = buffer[layout.m_offset:layout.m_offset + used * rows * 4].view("<f4").reshape(used, rows)
    l_ = buffer[layout.l_offset:layout.l_offset + used * rows * 4].view("<f4").reshape(used, rows)
    o = buffer[layout.o_offset:layout.o_offset + used * rows * hd * 4].view("<f4").reshape(used, rows, hd)
    next_slot, dropped = buffer[layout.counters_offset:layout.counters_offset + 16].view("<u8")
    return headers[:used], m, l_, o, int(next_slot), int(dropped)


def kernel_order(headers: np.ndarray, stages: Sequence[Stage]) -> np.ndarray:
    """Indices of the written slots (stage != -1) in the kernel's own order: pass of the stage,
    block, step, batch, head, q_begin, stage, split (TraceWriter::set_events)."""
    written = np.nonzero(headers["stage"] != -1)[0]
    h = headers[written]
    passes = np.array([s.pass_ for s in stages] + [INT32_MAX], dtype=np.int64)
    stage = h["stage"].astype(np.int64)
    pass_of = passes[np.where((stage >= 0) & (stage < len(stages)), stage, len(stages))]
    keys = (h["split"], h["stage"], h["q_begin"], h["head"], h["batch"], h["step"], h["block"], pass_of)
    return written[np.lexsort(keys)]  # lexsort: the last key is the primary one


class HostInputs:
    """Q [batch, heads_q, seq_q, head_dim], K, V [batch, heads_kv, seq_kv, head_dim] in host
    memory (numpy, any strides), one dtype: "fp32", "fp16", or "bf16" (then uint16 bit patterns)."""

    def __init__(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, dtype: str) -> None:
        self.q, self.k, self.v, self.dtype = q, k, v, dtype


def _check_dims(name: str, array: np.ndarray, want: Sequence[int], order: str) -> None:
    if tuple(array.shape) != tuple(want):
        raise RecorderError(f"{name} has shape {list(array.shape)} in {order} order but the attention says {list(want)}")


_STORED = {"fp32": ("F32", "<f4"), "fp16": ("F16", "<f2"), "bf16": ("BF16", "<u2")}


def write_trace(path: str, attention: Dict[str, Any], stages: Sequence[Stage], headers: np.ndarray,
                m: np.ndarray, l_: np.ndarray, o: np.ndarray, max_rows: int, dropped: int,
                inputs: HostInputs, keep: TraceFilter, output: Optional[Tuple[np.ndarray, str]] = None,
                output_lse: Optional[np.ndarray] = None, metadata: Optional[Dict[str, str]] = None) -> int:
    """Writes a format-2 trace from collected slots; returns the number of events written.

    ``headers`` [slots] EVENT_HEADER, payloads [slots, max_rows(, head_dim)]; ``attention`` as
    :meth:`Attention.to_json` gives it; ``output`` (array [batch, heads_q, seq_q, head_dim] in
    bhsd order, its dtype name); ``output_lse`` [batch, heads_q, seq_q] natural log.
    """
    a = attention
    order = kernel_order(headers, stages)
    h = headers[order]
    cols = {name: h[name].astype(np.int32) for name in HEADER_COLUMNS}
    cols["key_ranges"] = h["keys"].astype(np.int32)
    problem = event_problems(cols, stages, a, max_rows, MAX_KEY_RANGES)
    if problem is not None:
        i, what = problem
        e = h[i]
        hint = ""
        if not 0 <= e["stage"] < len(stages):
            hint = "; declare every stage the kernel writes in the stage table, and pass its index as the stage"
        elif e["rows"] > max_rows:
            hint = f"; start the recording with max_rows >= {e['rows']}"
        elif e["num_key_ranges"] > MAX_KEY_RANGES:
            hint = (f"; an event holds at most {MAX_KEY_RANGES} key ranges (StateDesc::keys): merge adjacent "
                    "ranges or record the state in parts")
        stage = f"'{stages[e['stage']].name}'" if 0 <= e["stage"] < len(stages) else str(e["stage"])
        raise RecorderError(f"the kernel recorded an event that cannot be stored (stage {stage}, batch {e['batch']}, "
                            f"head {e['head']}, query rows from {e['q_begin']}, block {e['block']}, step "
                            f"{e['step']}): {what}{hint}")
    n = len(order)
    ranges = max(1, int(cols["num_key_ranges"].max()) if n else 1)
    tensors: Dict[str, Tuple[str, np.ndarray]] = {}
    for name in HEADER_COLUMNS:
        tensors["events." + name] = ("I32", cols[name])
    tensors["events.key_ranges"] = ("I32", cols["key_ranges"][:, :ranges, :])
    tensors["events.time_ns"] = ("I64", h["time_ns"].view("<i8"))
    tensors["events.m"] = ("F32", m[order].astype("<f4"))
    tensors["events.l"] = ("F32", l_[order].astype("<f4"))
    tensors["events.o"] = ("F32", o[order].astype("<f4"))

    # Inputs of the traced (batch, head) pairs; K and V once per kv head (TraceWriter::set_inputs).
    group = a["heads_q"] // a["heads_kv"]
    _check_dims("Q", inputs.q, (a["batch"], a["heads_q"], a["seq_q"], a["head_dim"]), "batch, heads, seq, head_dim")
    _check_dims("K", inputs.k, (a["batch"], a["heads_kv"], a["seq_kv"], a["head_dim"]), "batch, heads, seq, head_dim")
    _check_dims("V", inputs.v, (a["batch"], a["heads_kv"], a["seq_kv"], a["head_dim"]), "batch, heads, seq, head_dim")
    q_pairs = [(b, hq) for b in range(a["batch"]) for hq in range(a["heads_q"]) if keep.keeps(b, hq)]
    if not q_pairs:
        raise RecorderError("the trace filter keeps no (batch, head) pair of the attention: widen it")
    kv_pairs = sorted({(b, hq // group) for b, hq in q_pairs})
    st, npd = _STORED[inputs.dtype]
    tensors["inputs.q_pairs"] = ("I32", np.array(q_pairs, dtype=np.int32).reshape(-1, 2))
    tensors["inputs.kv_pairs"] = ("I32", np.array(kv_pairs, dtype=np.int32).reshape(-1, 2))
    tensors["inputs.q"] = (st, np.stack([inputs.q[b, hq] for b, hq in q_pairs]).astype(npd))
    tensors["inputs.k"] = (st, np.stack([inputs.k[b, hk] for b, hk in kv_pairs]).astype(npd))
    tensors["inputs.v"] = (st, np.stack([inputs.v[b, hk] for b, hk in kv_pairs]).astype(npd))
    if output is not None:
        out, out_dtype = output
        _check_dims("the output", out, (a["batch"], a["heads_q"], a["seq_q"], a["head_dim"]),
                    "batch, heads, seq, head_dim")
        ost, onpd = _STORED[out_dtype]
        tensors["output.o"] = (ost, np.ascontiguousarray(out).astype(onpd))
    if output_lse is not None:
        if output is None:
            raise RecorderError("an output LSE without the output: pass both to set_output")
        _check_dims("the output's LSE", output_lse, (a["batch"], a["heads_q"], a["seq_q"]), "batch, heads, seq")
        tensors["output.lse"] = ("F32", np.ascontiguousarray(output_lse, dtype="<f4"))

    meta: Dict[str, str] = {"tool_version": f"tilescope python {version()}",
                            "captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    reserved = (FORMAT_KEY, "max_rows", "head_dim", "dropped_events", "requested_events", "stages",
                "attention")
    for key, value in (metadata or {}).items():
        if key in reserved:
            raise RecorderError(f"metadata key '{key}' is written by tilescope itself; choose another name")
        if isinstance(value, (dict, list, tuple)):  # stored as JSON, which the readers parse back
            try:
                value = json.dumps(value)
            except (TypeError, ValueError) as e:
                raise RecorderError(f"metadata '{key}': {e}") from None
        meta[key] = str(value)
    meta.update({FORMAT_KEY: "2", "max_rows": str(max_rows), "head_dim": str(a["head_dim"]),
                 "dropped_events": str(dropped), "requested_events": str(n + dropped),
                 "stages": json.dumps([s.to_json() for s in stages]),
                 "attention": json.dumps(a)})
    write_safetensors(path, tensors, meta, replaces_only=FORMAT_KEY)
    return n


def write_recording(path: str, buffer: np.ndarray, layout: BufferLayout, attention: Dict[str, Any],
                    stages: Sequence[Stage], inputs: HostInputs, keep: TraceFilter,
                    output: Optional[Tuple[np.ndarray, str]] = None, output_lse: Optional[np.ndarray] = None,
                    metadata: Optional[Dict[str, str]] = None) -> Tuple[int, int]:
    """A recording's end (Recording.finish, after the buffer's bytes came back from the device):
    collects the written slots and writes the trace with the buffer's filter and capacity in its
    metadata. Returns (events written, events dropped)."""
    headers, m, l_, o, _next_slot, dropped = collect(buffer, layout)
    meta = dict(metadata or {})
    meta["trace_filter"] = keep.to_json(stages)
    meta["trace_capacity"] = str(layout.capacity)
    n = write_trace(path, attention, stages, headers, m, l_, o, layout.max_rows, dropped, inputs, keep, output,
                    output_lse, meta)
    return n, dropped
