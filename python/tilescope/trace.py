"""Reading tilescope traces (format 2, docs/trace-format.md) into numpy arrays.

``tilescope.load(path)`` reads the whole file into memory it owns, checks the container and the
schema as the C++ reader does (docs/trace-format.md, "What the reader checks") and returns a
:class:`Trace`. Every defect is a :class:`TraceFormatError` naming the file and the problem.
No tilescope binary is involved.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _random_inputs
from ._safetensors import RawTensor, TraceFormatError, read_safetensors, widen_bf16

#: The trace format this reader knows.
FORMAT_VERSION = "2"
#: Limits of the schema: the C++ reader's (instrumentation/trace/trace_event.h: kMaxStages,
#: kMaxStageNameBytes; trace_event.cpp: kMaxStagePass, parse_stage_table's rule that a stage's pass
#: is an integer from 0 to it). tests/python/test_hostile.py checks the pass's boundary against the
#: CLI, tests/trace/test_trace_file.cpp the C++ reader's.
MAX_STAGES = 64
MAX_STAGE_NAME_BYTES = 64
MAX_STAGE_PASS = 1000
MAX_ROWS_LIMIT = 65536
MAX_HEAD_DIM = 65536
MAX_KEY_RANGES = 8
#: The most bytes of inputs a trace's recipe may have re-made (Q, K and V in the stored dtype;
#: the arrays of :class:`Inputs` take up to twice that for bf16, widened to float32). A recipe
#: that implies more, or more than this machine's memory, is refused before anything is made.
MAX_REMADE_INPUT_BYTES = 1 << 36
#: The metadata keys of inputs re-made from their seed (docs/trace-format.md).
RECIPE_KEYS = ("inputs_seed", "inputs_distribution", "inputs_scale", "inputs_preset", "inputs_generated")

#: Convention bits (tilescope/event.h, ConventionBits).
NORMALIZED, LOG_BASE2, UNSCALED_MAX, NO_MAX = 1, 2, 4, 8
CONVENTION_MASK = NORMALIZED | LOG_BASE2 | UNSCALED_MAX | NO_MAX

STAGE_KINDS = ("state", "merge", "final")
INPUT_DTYPES = {"fp32": "F32", "fp16": "F16", "bf16": "BF16"}
CAUSAL = ("none", "bottom_right", "top_left")
#: The metadata key that makes a safetensors file a tilescope trace (its format's number); a trace
#: replaces only a file that holds it (docs/file-safety.md).
FORMAT_KEY = "tilescope_format"
# The attention description's limits: base/attention_spec.cpp's validate(), which the C++ reader
# and the CLI apply.
MAX_BATCH, MAX_HEADS, MAX_SEQ, MAX_HEAD_DIM, MAX_TENSOR_ELEMENTS = 1 << 20, 1 << 16, 2**31 - 1, 1024, 1 << 50


def attention_problem(a: Mapping[str, Any]) -> Optional[str]:
    """What is wrong with an attention description (every field present, as a trace stores it),
    by the C++ validate()'s rules, or None: one rule for the reader (:func:`load`) and the writer
    (:class:`tilescope.Attention`), so that Python writes no trace the readers refuse."""
    def whole(key: str, low: int, high: int) -> Optional[str]:
        v = a[key]
        if type(v) is not int or not low <= v <= high:
            return f"attention.{key} = {v!r} must be an integer from {low} to {high}"
        return None

    for key, high in (("batch", MAX_BATCH), ("heads_q", MAX_HEADS), ("seq_q", MAX_SEQ), ("seq_kv", MAX_SEQ),
                      ("head_dim", MAX_HEAD_DIM)):
        problem = whole(key, 1, high)
        if problem:
            return problem
    problem = whole("heads_kv", 1, a["heads_q"])
    if problem:
        return problem
    if a["heads_q"] % a["heads_kv"]:
        return f"attention.heads_q {a['heads_q']} is not a multiple of heads_kv {a['heads_kv']}"
    if a["dtype"] not in INPUT_DTYPES:
        return f"attention.dtype {a['dtype']!r} (fp32, fp16 or bf16)"
    for key, what in (("scale", "0: 1/sqrt(head_dim)"), ("softcap", "0: off")):
        v = a[key]
        if type(v) not in (int, float) or not math.isfinite(v) or v < 0:
            return f"attention.{key} = {v!r} must be a finite number >= 0 ({what})"
    if a["causal"] not in CAUSAL:
        return f"attention.causal {a['causal']!r} (none, bottom_right or top_left)"
    for key in ("window_left", "window_right"):
        problem = whole(key, -1, MAX_SEQ)
        if problem:
            return problem + " (-1: unbounded)"
    for key, limit in (("q_lens", a["seq_q"]), ("kv_lens", a["seq_kv"])):
        v = a[key]
        if not isinstance(v, list) or (v and len(v) != a["batch"]) or not all(
                type(x) is int and 0 <= x <= limit for x in v):
            return f"attention.{key} must be empty or one length in [0, {limit}] per batch entry"
    slopes = a["alibi_slopes"]
    if not isinstance(slopes, list) or (slopes and len(slopes) != a["heads_q"]) or not all(
            type(x) in (int, float) and math.isfinite(x) for x in slopes):
        return "attention.alibi_slopes must be empty or one finite number per query head"
    for what, heads, seq in (("Q", a["heads_q"], a["seq_q"]), ("K and V", a["heads_kv"], a["seq_kv"])):
        if a["batch"] * heads * seq * a["head_dim"] > MAX_TENSOR_ELEMENTS:
            return f"the attention's {what} would hold more than 2^50 elements"
    return None

#: The int32 header columns of an event, in tilescope/event.h's order (time_ns is int64).
HEADER_COLUMNS = ("stage", "convention", "batch", "head", "kv_head", "q_begin", "rows", "split", "step",
                  "block", "where", "num_key_ranges")

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Stage:
    """One entry of a trace's stage table: an event's ``stage`` is its index."""

    name: str
    kind: str  # "state", "merge" or "final"
    pass_: int = -1  # launch order ("pass" in the file); -1 in a declaration: the format's default
    # The kernel rounds the softmax weights P to the input dtype before P V (a tensor-core kernel, a
    # Triton kernel's tl.dot(p.to(v.dtype), v)): the analysis's yardstick for the stage rounds them
    # too ("p_rounded" in the file, absent: False).
    p_rounded: bool = False
    # The kernel takes the weights as exp2 with the scale and log2 e folded into one float32
    # multiply-add (FlashAttention-2's exponent): the yardstick folds them too ("exp2_folded" in the
    # file, absent: False).
    exp2_folded: bool = False

    def to_json(self) -> Dict[str, Any]:
        """The stage table entry as the file holds it (the flags only where set)."""
        out: Dict[str, Any] = {"name": self.name, "kind": self.kind, "pass": self.pass_}
        out.update({flag: True for flag in STAGE_FLAGS if getattr(self, flag)})
        return out


# The stage flags of the file's stage table (optional booleans), in Stage's order.
STAGE_FLAGS = ("p_rounded", "exp2_folded")


class Events:
    """Events (or missing events) as columns: numpy arrays of one length, in the file's order.

    Columns: ``stage convention batch head kv_head q_begin rows split step block where
    num_key_ranges`` (int32 [N]), ``key_ranges`` (int32 [N, R, 2]), ``time_ns`` (int64 [N]);
    with payloads ``m`` and ``l`` (float32 [N, max_rows]) and ``o`` (float32 [N, max_rows,
    head_dim]). Rows past an event's ``rows`` hold nothing meaningful.
    """

    def __init__(self, columns: Dict[str, np.ndarray], stages: Sequence[Stage]) -> None:
        self._columns = columns
        self.stages = list(stages)

    def __len__(self) -> int:
        return int(self._columns["stage"].shape[0])

    def __getattr__(self, name: str) -> np.ndarray:
        columns = self.__dict__.get("_columns")
        if columns is not None and name in columns:
            return columns[name]
        raise AttributeError(f"Events has no column {name!r} (columns: {', '.join(sorted(columns or {}))})")

    @property
    def columns(self) -> Dict[str, np.ndarray]:
        """Every column by name."""
        return dict(self._columns)

    @property
    def has_payloads(self) -> bool:
        """Whether m, l and O are here (missing events have none)."""
        return "m" in self._columns

    def stage_names(self) -> List[str]:
        """The stage name of each event."""
        return [self.stages[int(s)].name for s in self._columns["stage"]]

    def _stage_index(self, stage: Union[int, str]) -> int:
        if isinstance(stage, str):
            for i, s in enumerate(self.stages):
                if s.name == stage:
                    return i
            raise KeyError(f"no stage {stage!r} in this trace (stages: {', '.join(s.name for s in self.stages)})")
        if isinstance(stage, bool) or not isinstance(stage, (int, np.integer)):
            raise TypeError(f"stage {stage!r}: a stage's name or index")
        if not 0 <= int(stage) < len(self.stages):
            raise KeyError(f"stage index {stage} outside the stage table ({len(self.stages)} stages)")
        return int(stage)

    def mask(self, stage: Union[int, str, Iterable[Union[int, str]], None] = None,
             batch: Union[int, Iterable[int], None] = None, head: Union[int, Iterable[int], None] = None,
             rows: Union[int, Tuple[int, int], range, slice, None] = None, split: Union[int, Iterable[int], None] = None
             ) -> np.ndarray:
        """A boolean mask of the events that match every given criterion.

        ``stage``: a name or index, or several; ``batch``, ``head``, ``split``: a value or
        several; ``rows``: a query row, or a half-open ``(begin, end)`` / ``range`` / ``slice``: events whose
        rows overlap it.
        """
        keep = np.ones(len(self), dtype=bool)
        if stage is not None:
            wanted = [stage] if isinstance(stage, (int, str, np.integer)) else list(stage)
            keep &= np.isin(self._columns["stage"], [self._stage_index(s) for s in wanted])
        def index(what: str, v: Any) -> int:  # an index, not a bool, float or string taken for one
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{what} {v!r}: an integer index")
            return int(v)

        for name, value in (("batch", batch), ("head", head), ("split", split)):
            if value is not None:
                values = [value] if isinstance(value, (int, np.integer, bool, str, float)) else list(value)
                keep &= np.isin(self._columns[name], [index(name, v) for v in values])
        if rows is not None:
            if isinstance(rows, (int, np.integer)) and not isinstance(rows, bool):
                begin, end = int(rows), int(rows) + 1
            elif isinstance(rows, (range, slice)):
                if rows.step not in (None, 1):
                    raise ValueError("rows: a range or slice with step 1")
                begin = 0 if rows.start is None else index("rows", rows.start)
                end = 2**31 if rows.stop is None else index("rows", rows.stop)
            elif isinstance(rows, (tuple, list)) and len(rows) == 2:
                begin, end = index("rows", rows[0]), index("rows", rows[1])
            else:
                raise TypeError(f"rows {rows!r}: a query row, a (begin, end) pair, a range or a slice")
            q0 = self._columns["q_begin"].astype(np.int64)
            keep &= (q0 < end) & (q0 + self._columns["rows"] > begin)
        return keep

    def select(self, stage: Union[int, str, Iterable[Union[int, str]], None] = None,
               batch: Union[int, Iterable[int], None] = None, head: Union[int, Iterable[int], None] = None,
               rows: Union[int, Tuple[int, int], range, slice, None] = None, split: Union[int, Iterable[int], None] = None
               ) -> "Events":
        """The events that match (see :meth:`mask`), in the same order."""
        return self[self.mask(stage=stage, batch=batch, head=head, rows=rows, split=split)]

    def __getitem__(self, index: Any) -> "Events":
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            if not -len(self) <= index < len(self):
                raise IndexError(f"event {index} of {len(self)} events")
            index = slice(int(index), int(index) + 1) if index != -1 else slice(-1, None)
        return Events({k: v[index] for k, v in self._columns.items()}, self.stages)

    def o_normalized(self) -> np.ndarray:
        """O divided by l where an event is unnormalised (convention bit 1 clear), float32."""
        o = self._columns["o"]
        normalized = (self._columns["convention"] & NORMALIZED) != 0
        with np.errstate(divide="ignore", invalid="ignore"):
            divided = o / self._columns["l"][:, :, None]
        return np.where(normalized[:, None, None], o, divided).astype(np.float32)

    def to_torch(self) -> Dict[str, Any]:
        """The columns as torch tensors (needs torch)."""
        torch = _torch()
        return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in self._columns.items()}

    def __repr__(self) -> str:
        return f"<tilescope.Events: {len(self)} events>"


class Inputs:
    """Q, K, V of the traced heads, as the trace stores them or re-made from its recipe.

    ``q`` [Pq, seq_q, head_dim] for the (batch, query head) pairs ``q_pairs`` [Pq, 2]; ``k``
    and ``v`` [Pk, seq_kv, head_dim] for ``kv_pairs``. bf16 is widened exactly to float32,
    fp16 stays float16 (``dtype`` says what the file stores).
    """

    def __init__(self, q_pairs: np.ndarray, kv_pairs: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                 dtype: str, heads_q: int, heads_kv: int) -> None:
        self.q_pairs, self.kv_pairs, self.q, self.k, self.v, self.dtype = q_pairs, kv_pairs, q, k, v, dtype
        self._group = heads_q // heads_kv
        self._q_index = {(int(b), int(h)): i for i, (b, h) in enumerate(q_pairs)}
        self._kv_index = {(int(b), int(h)): i for i, (b, h) in enumerate(kv_pairs)}

    def query(self, batch: int, head: int) -> np.ndarray:
        """Q of one (batch, query head) [seq_q, head_dim]."""
        try:
            return self.q[self._q_index[(batch, head)]]
        except KeyError:
            raise KeyError(f"the trace holds no Q of batch {batch} head {head}") from None

    def keys(self, batch: int, head: int) -> np.ndarray:
        """K read by one (batch, query head) [seq_kv, head_dim] (its kv head under GQA)."""
        return self.k[self._kv(batch, head)]

    def values(self, batch: int, head: int) -> np.ndarray:
        """V read by one (batch, query head) [seq_kv, head_dim] (its kv head under GQA)."""
        return self.v[self._kv(batch, head)]

    def _kv(self, batch: int, head: int) -> int:
        try:
            return self._kv_index[(batch, head // self._group)]
        except KeyError:
            raise KeyError(f"the trace holds no K/V of batch {batch} kv head {head // self._group}") from None


class Trace:
    """A trace file's contents (see :func:`load`).

    Attributes: ``path``; ``metadata`` (every key, with the known ones as Python values: ints,
    the stage table and attention as parsed JSON, other JSON objects parsed); ``attention``
    (the attention description with defaults filled in); ``stages`` (list of :class:`Stage`);
    ``max_rows``, ``head_dim``, ``dropped_events``, ``requested_events``; ``events``
    (:class:`Events`); ``missing`` (:class:`Events` or None); ``inputs`` (:class:`Inputs`,
    stored or re-made from the recorded seed and checked against its SHA-256; or None); ``output`` ([batch, heads_q, seq_q, head_dim], bf16 widened; or None);
    ``output_lse`` ([batch, heads_q, seq_q] float32, or None); ``tensors`` (every tensor as
    stored, bf16 as its bits).
    """

    def __init__(self, path: str, tensors: Dict[str, RawTensor], metadata: Dict[str, str]) -> None:
        self.path = path
        # The file read, as an absolute path, and its file_identity() then (set by load()): what
        # tilescope.diff runs the CLI on, refusing a file that changed since.
        self.file: Optional[Tuple[str, Optional[Tuple[int, int, int, int]]]] = None
        self.raw_metadata = dict(metadata)
        self.tensors = {k: t.array for k, t in tensors.items()}
        self._check(tensors, metadata)

    # --- selection -------------------------------------------------------------------------
    def select(self, stage: Union[int, str, Iterable[Union[int, str]], None] = None,
               batch: Union[int, Iterable[int], None] = None, head: Union[int, Iterable[int], None] = None,
               rows: Union[int, Tuple[int, int], range, slice, None] = None, split: Union[int, Iterable[int], None] = None
               ) -> Events:
        """The events that match every given criterion (:meth:`Events.mask`)."""
        return self.events.select(stage=stage, batch=batch, head=head, rows=rows, split=split)

    def stage(self, name: str) -> Stage:
        """The stage of that name."""
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage {name!r} in {self.path} (stages: {', '.join(s.name for s in self.stages)})")

    @property
    def dtype(self) -> str:
        """The inputs' dtype: fp32, fp16 or bf16."""
        return str(self.attention["dtype"])

    def to_torch(self) -> Dict[str, Any]:
        """Every tensor of the file as a torch tensor (bf16 as torch.bfloat16, bit for bit)."""
        torch = _torch()
        out = {}
        for name, array in self.tensors.items():
            if self._dtypes[name] == "BF16":  # the bits, through int16 (torch has no uint16 before 2.3)
                out[name] = torch.from_numpy(np.array(array).view(np.int16)).view(torch.bfloat16)
            elif self._dtypes[name] in ("U16", "U32", "U64"):  # no unsigned torch dtypes: widened to int64
                out[name] = torch.from_numpy(np.array(array).astype(np.int64))
            else:
                out[name] = torch.from_numpy(np.array(array))
        return out

    def __repr__(self) -> str:
        a = self.attention
        return (f"<tilescope.Trace {self.path!r}: {len(self.events)} events, stages "
                f"{[s.name for s in self.stages]}, batch {a['batch']} heads {a['heads_q']}/{a['heads_kv']} "
                f"seq {a['seq_q']}x{a['seq_kv']} head_dim {a['head_dim']} {a['dtype']}>")

    # --- checks ----------------------------------------------------------------------------
    def _fail(self, what: str) -> TraceFormatError:
        return TraceFormatError(f"{self.path}: {what}")

    def _check(self, tensors: Dict[str, RawTensor], meta: Dict[str, str]) -> None:
        self._dtypes = {k: t.dtype for k, t in tensors.items()}
        fmt = meta.get(FORMAT_KEY)
        if fmt is None:
            raise self._fail("not a tilescope trace: no tilescope_format in the metadata")
        if fmt == "1":
            raise self._fail("trace format 1 (tilescope 0.1): this reader knows format 2; "
                             "`tilescope diff` and the viewer still open it")
        if fmt != FORMAT_VERSION:
            raise self._fail(f"trace format {fmt!r}: this reader knows format {FORMAT_VERSION}")
        self.max_rows = self._decimal(meta, "max_rows", 0, MAX_ROWS_LIMIT)
        self.head_dim = self._decimal(meta, "head_dim", 1, MAX_HEAD_DIM)
        self.dropped_events = self._decimal(meta, "dropped_events", 0, 2**64 - 1)
        self.requested_events = self._decimal(meta, "requested_events", 0, 2**64 - 1)
        self.stages = self._stage_table(meta)
        self.attention = self._attention(meta)
        if self.attention["head_dim"] != self.head_dim:
            raise self._fail(f"metadata head_dim {self.head_dim} differs from the attention's "
                             f"{self.attention['head_dim']}")
        self.metadata = self._metadata_values(meta)
        self.events = self._event_table(tensors, "events.", payloads=True)
        self.missing = self._event_table(tensors, "missing.", payloads=False) if any(
            k.startswith("missing.") for k in tensors) else None
        self.inputs = self._inputs(tensors)
        self.output, self.output_lse = self._output(tensors)

    def _decimal(self, meta: Mapping[str, str], key: str, low: int, high: int) -> int:
        text = meta.get(key)
        if text is None:
            raise self._fail(f"metadata {key} is missing")
        if not text.isascii() or not text.isdigit() or len(text) > 20:
            raise self._fail(f"metadata {key} = {text!r} is not a decimal number")
        value = int(text)
        if not low <= value <= high:
            raise self._fail(f"metadata {key} = {value} outside [{low}, {high}]")
        return value

    def _json(self, meta: Mapping[str, str], key: str) -> Any:
        if key not in meta:
            raise self._fail(f"metadata {key} is missing")
        try:
            return json.loads(meta[key])
        except (ValueError, RecursionError) as e:
            raise self._fail(f"metadata {key} is not valid JSON ({type(e).__name__}: {str(e)[:200]})") from None

    def _stage_table(self, meta: Mapping[str, str]) -> List[Stage]:
        table = self._json(meta, "stages")
        if not isinstance(table, list) or not 1 <= len(table) <= MAX_STAGES:
            raise self._fail(f"stages must be a JSON list of 1 to {MAX_STAGES} entries")
        names = set()
        parsed = []
        for i, entry in enumerate(table):
            if not isinstance(entry, dict):
                raise self._fail(f"stage {i} is not an object")
            name, kind = entry.get("name"), entry.get("kind")
            if not isinstance(name, str) or not 1 <= len(name.encode("utf-8")) <= MAX_STAGE_NAME_BYTES or any(
                    ord(c) < 32 or ord(c) == 127 for c in name):
                raise self._fail(f"stage {i}: name must be 1 to {MAX_STAGE_NAME_BYTES} bytes without control characters")
            if name in names:
                raise self._fail(f"stage {i}: name {name!r} is used twice")
            names.add(name)
            if kind not in STAGE_KINDS:
                raise self._fail(f"stage {name!r}: kind {kind!r} (state, merge or final)")
            p = entry.get("pass")
            if p is not None and (type(p) is not int or not 0 <= p <= MAX_STAGE_PASS):
                raise self._fail(f"stage {name!r}: pass {p!r} must be an integer from 0 to {MAX_STAGE_PASS}")
            flags = tuple(entry.get(flag, False) for flag in STAGE_FLAGS)
            for flag, value in zip(STAGE_FLAGS, flags):
                if type(value) is not bool:
                    raise self._fail(f"stage {name!r}: {flag} {value!r} must be true or false")
            parsed.append((name, kind, p, flags))
        # Defaults: a state 0, a merge 1, a final stage the largest pass of the others.
        passes = [p if p is not None else (0 if k == "state" else 1 if k == "merge" else None) for _, k, p, _ in parsed]
        others = [p for p, (_, k, _, _) in zip(passes, parsed) if k != "final" and p is not None]
        last = max(others) if others else 0
        return [Stage(n, k, p if p is not None else last, *f) for (n, k, _, f), p in zip(parsed, passes)]

    def _attention(self, meta: Mapping[str, str]) -> Dict[str, Any]:
        a = self._json(meta, "attention")
        if not isinstance(a, dict):
            raise self._fail("attention is not a JSON object")
        out: Dict[str, Any] = {}

        def integer(key: str, low: int, default: Optional[int] = None) -> int:
            v = a.get(key, default)
            if v is None:
                raise self._fail(f"attention.{key} is missing")
            if type(v) is not int or not low <= v < 2**31:
                raise self._fail(f"attention.{key} = {v!r} must be an integer >= {low}")
            return v

        for key in ("batch", "heads_q", "seq_q", "seq_kv", "head_dim"):
            out[key] = integer(key, 1)
        out["heads_kv"] = integer("heads_kv", 1, out["heads_q"])
        out["dtype"] = a.get("dtype")
        for key, default in (("scale", 0.0), ("softcap", 0.0), ("window_left", -1), ("window_right", -1),
                             ("q_lens", []), ("kv_lens", []), ("alibi_slopes", [])):
            out[key] = a.get(key, default)
        causal = a.get("causal", "none")
        out["causal"] = {True: "bottom_right", False: "none"}.get(causal, causal) if isinstance(causal, bool) else causal
        problem = attention_problem(out)
        if problem:
            raise self._fail(problem)
        out["scale"], out["softcap"] = float(out["scale"]), float(out["softcap"])
        out["alibi_slopes"] = [float(x) for x in out["alibi_slopes"]]
        return out

    def _metadata_values(self, meta: Mapping[str, str]) -> Dict[str, Any]:
        values: Dict[str, Any] = {}
        for key, text in meta.items():
            if key == "stages":
                values[key] = [s.to_json() for s in self.stages]
            elif key == "attention":
                values[key] = dict(self.attention)
            elif key in ("max_rows", "head_dim", "dropped_events", "requested_events"):
                values[key] = int(text)
            elif text[:1] in ("{", "["):
                try:
                    values[key] = json.loads(text)
                except (ValueError, RecursionError):
                    values[key] = text
            else:
                values[key] = text
        return values

    def _tensor(self, tensors: Mapping[str, RawTensor], name: str, dtypes: Sequence[str],
                shape: Sequence[Optional[int]]) -> RawTensor:
        t = tensors.get(name)
        if t is None:
            raise self._fail(f"tensor {name} is missing")
        if t.dtype not in dtypes:
            raise self._fail(f"tensor {name} is {t.dtype}, must be {' or '.join(dtypes)}")
        if len(t.shape) != len(shape) or any(w is not None and w != d for w, d in zip(shape, t.shape)):
            want = "[" + ", ".join("*" if w is None else str(w) for w in shape) + "]"
            raise self._fail(f"tensor {name} has shape {list(t.shape)}, must be {want}")
        return t

    def _event_table(self, tensors: Mapping[str, RawTensor], prefix: str, payloads: bool) -> Events:
        cols: Dict[str, np.ndarray] = {}
        n = None
        for name in HEADER_COLUMNS:
            t = self._tensor(tensors, prefix + name, ["I32"], [n])
            n = t.shape[0]
            cols[name] = t.array
        cols["time_ns"] = self._tensor(tensors, prefix + "time_ns", ["I64"], [n]).array
        kr = self._tensor(tensors, prefix + "key_ranges", ["I32"], [n, None, 2])
        if not 1 <= kr.shape[1] <= MAX_KEY_RANGES:
            raise self._fail(f"tensor {prefix}key_ranges stores {kr.shape[1]} key ranges per event (1 to {MAX_KEY_RANGES})")
        cols["key_ranges"] = kr.array
        if payloads:
            cols["m"] = self._tensor(tensors, prefix + "m", ["F32"], [n, self.max_rows]).array
            cols["l"] = self._tensor(tensors, prefix + "l", ["F32"], [n, self.max_rows]).array
            cols["o"] = self._tensor(tensors, prefix + "o", ["F32"], [n, self.max_rows, self.head_dim]).array
        problem = event_problems(cols, self.stages, self.attention, self.max_rows, kr.shape[1])
        if problem is not None:
            index, what = problem
            raise self._fail(f"{'event' if payloads else 'missing event'} {index}: {what}")
        return Events(cols, self.stages)

    def _inputs(self, tensors: Mapping[str, RawTensor]) -> Optional[Inputs]:
        names = ("inputs.q_pairs", "inputs.kv_pairs", "inputs.q", "inputs.k", "inputs.v")
        present = [n for n in names if n in tensors]
        if "inputs_generated" in self.raw_metadata:
            if present:
                raise self._fail("it holds inputs.* tensors and an inputs_generated recipe; a trace holds one or "
                                 "the other")
            return self._remade_inputs(self.raw_metadata)
        if not present:
            return None
        if len(present) != len(names):
            raise self._fail(f"inputs tensors must come together: has {', '.join(present)} only")
        a = self.attention
        stored = INPUT_DTYPES[a["dtype"]]
        qp = self._tensor(tensors, "inputs.q_pairs", ["I32"], [None, 2]).array
        kp = self._tensor(tensors, "inputs.kv_pairs", ["I32"], [None, 2]).array
        for name, pairs, heads in (("inputs.q_pairs", qp, a["heads_q"]), ("inputs.kv_pairs", kp, a["heads_kv"])):
            if pairs.size and (pairs[:, 0].min() < 0 or pairs[:, 0].max() >= a["batch"] or pairs[:, 1].min() < 0
                               or pairs[:, 1].max() >= heads):
                raise self._fail(f"{name}: a (batch, head) pair outside the attention")
            if len({(int(b), int(h)) for b, h in pairs}) != len(pairs):
                raise self._fail(f"{name}: a (batch, head) pair listed twice")
        q = self._tensor(tensors, "inputs.q", [stored], [qp.shape[0], a["seq_q"], a["head_dim"]])
        k = self._tensor(tensors, "inputs.k", [stored], [kp.shape[0], a["seq_kv"], a["head_dim"]])
        v = self._tensor(tensors, "inputs.v", [stored], [kp.shape[0], a["seq_kv"], a["head_dim"]])
        return Inputs(qp, kp, _values(q), _values(k), _values(v), a["dtype"], a["heads_q"], a["heads_kv"])

    # --- inputs re-made from their seed (docs/trace-format.md) ------------------------------
    def _recipe_fail(self, what: str) -> TraceFormatError:
        return self._fail(f"the trace's inputs are recorded as their generator's spec, but {what}; re-capture "
                          "with --store-inputs to keep the inputs themselves")

    def _recipe_pairs(self, recipe: Mapping[str, Any], key: str, heads: int, heads_name: str) -> List[Tuple[int, int]]:
        a = self.attention
        pairs = recipe.get(key)
        if not isinstance(pairs, list):
            raise self._recipe_fail(f"inputs_generated has no list '{key}'")
        if len(pairs) > a["batch"] * heads:
            raise self._recipe_fail(f"inputs_generated's '{key}' lists {len(pairs)} pairs; the attention has "
                                    f"{a['batch']} x {heads} (batch, {heads_name})")
        out: List[Tuple[int, int]] = []
        seen = set()
        for p in pairs:
            if not (isinstance(p, list) and len(p) == 2 and all(type(x) is int for x in p)):
                raise self._recipe_fail(f"inputs_generated's '{key}' holds {json.dumps(p)[:100]}, not a "
                                        "[batch, head] pair of indices")
            b, h = p
            if not (0 <= b < a["batch"] and 0 <= h < heads):
                raise self._recipe_fail(f"inputs_generated's '{key}' holds [{b}, {h}], outside the attention "
                                        f"(batch < {a['batch']}, {heads_name} < {heads})")
            if (b, h) in seen:
                raise self._recipe_fail(f"inputs_generated's '{key}' lists [{b}, {h}] twice")
            seen.add((b, h))
            out.append((b, h))
        return out

    def _remade_inputs(self, meta: Mapping[str, str]) -> Inputs:
        """Inputs recorded as their recipe: every field checked, the size bounded, the tensors re-made
        and their SHA-256 compared with the recorded ones."""
        a = self.attention
        try:
            recipe = json.loads(meta["inputs_generated"])
        except (ValueError, RecursionError):
            recipe = None
        if not isinstance(recipe, dict):
            raise self._recipe_fail("metadata 'inputs_generated' is not a JSON object")
        generator = recipe.get("generator")
        if not isinstance(generator, str):
            raise self._recipe_fail("inputs_generated does not name its generator")
        q_pairs = self._recipe_pairs(recipe, "q_pairs", a["heads_q"], "query head")
        kv_pairs = self._recipe_pairs(recipe, "kv_pairs", a["heads_kv"], "kv head")
        hashes = recipe.get("sha256")
        if not isinstance(hashes, dict):
            raise self._recipe_fail("inputs_generated has no 'sha256' object")
        for name in ("q", "k", "v"):
            h = hashes.get(name)
            if not (isinstance(h, str) and len(h) == 64 and all(c in "0123456789abcdef" for c in h)):
                raise self._recipe_fail(f"inputs_generated's sha256 of {name} is not 64 lowercase hex digits")
        for key in RECIPE_KEYS:
            if key not in meta:
                raise self._recipe_fail(f"metadata key '{key}' is missing")
        seed_text = meta["inputs_seed"]
        digits = seed_text.lstrip("0") or "0"
        if not (seed_text.isascii() and seed_text.isdigit() and len(digits) <= 20 and int(digits) < 2**64):
            raise self._recipe_fail(f"metadata 'inputs_seed' = {seed_text[:40]!r} is not a whole number below 2^64")
        seed = int(digits)
        distribution = meta["inputs_distribution"]
        if distribution not in _random_inputs.DISTRIBUTIONS:
            raise self._recipe_fail(f"metadata 'inputs_distribution' = {distribution[:40]!r} is not normal or "
                                    "uniform")
        preset = meta["inputs_preset"]
        if preset not in _random_inputs.PRESETS:
            raise self._recipe_fail(f"metadata 'inputs_preset' = {preset[:40]!r} is not none, large_logits or "
                                    "all_equal_scores")
        scale_text = meta["inputs_scale"]
        try:
            scale = json.loads(scale_text) if len(scale_text) <= 64 else None
        except ValueError:
            scale = None
        if type(scale) not in (int, float) or not math.isfinite(scale) or scale <= 0:
            raise self._recipe_fail(f"metadata 'inputs_scale' = {scale_text[:40]!r} is not a finite number > 0")
        if generator != _random_inputs.GENERATOR:
            raise self._fail(f"the trace's inputs were made by generator {generator[:80]!r}, which this reader "
                             f"does not have (it has {_random_inputs.GENERATOR!r}): open it with the tilescope that "
                             "captured it (tool_version in its metadata), or re-capture with --store-inputs")
        element = _random_inputs.STORED[a["dtype"]].itemsize
        size = element * a["head_dim"] * (len(q_pairs) * a["seq_q"] + 2 * len(kv_pairs) * a["seq_kv"])
        limit = min(MAX_REMADE_INPUT_BYTES, _physical_memory())
        if size > limit:
            raise self._recipe_fail(
                f"re-making them takes {size} bytes ({len(q_pairs)} query and {len(kv_pairs)} kv (batch, head) pairs "
                f"of seq_q {a['seq_q']} / seq_kv {a['seq_kv']} x head_dim {a['head_dim']} {a['dtype']}), more than "
                f"the {limit} this reader re-makes (MAX_REMADE_INPUT_BYTES {MAX_REMADE_INPUT_BYTES}, or this "
                "machine's memory)")
        made = _random_inputs.make_head_inputs(a, seed, distribution, float(scale), preset, q_pairs, kv_pairs)
        for name in ("q", "k", "v"):
            got = _random_inputs.sha256_hex(made[name])
            if got != hashes[name]:
                raise self._fail(
                    f"inputs.{name} re-made from seed {seed} ({distribution}, scale {scale}, preset {preset}) has "
                    f"SHA-256 {got}, the trace recorded {hashes[name]}: the seed, the spec or the hash was edited "
                    f"after the capture, or the trace was made by another generator")
        values = {}
        for name, t in made.items():
            t = widen_bf16(t) if a["dtype"] == "bf16" else t
            t.flags.writeable = False
            values[name] = t
        qp = np.array(q_pairs, dtype=np.int32).reshape(-1, 2)
        kp = np.array(kv_pairs, dtype=np.int32).reshape(-1, 2)
        qp.flags.writeable = kp.flags.writeable = False
        return Inputs(qp, kp, values["q"], values["k"], values["v"], a["dtype"], a["heads_q"], a["heads_kv"])

    def _output(self, tensors: Mapping[str, RawTensor]) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
        a = self.attention
        o = lse = None
        if "output.o" in tensors:
            o = _values(self._tensor(tensors, "output.o", ["F32", "F16", "BF16"],
                                     [a["batch"], a["heads_q"], a["seq_q"], a["head_dim"]]))
        if "output.lse" in tensors:
            lse = self._tensor(tensors, "output.lse", ["F32"], [a["batch"], a["heads_q"], a["seq_q"]]).array
        return o, lse


def event_problems(cols: Mapping[str, np.ndarray], stages: Sequence[Any], attention: Mapping[str, Any],
                   max_rows: int, stored_ranges: int = MAX_KEY_RANGES) -> Optional[Tuple[int, str]]:
    """The first event whose header breaks the schema, as (index, problem), or None.

    The rules of docs/trace-format.md ("every event"): the reader's and the recorder's.
    """
    n = len(cols["stage"])
    if n == 0:
        return None
    a = attention
    i64 = {k: np.asarray(cols[k]).astype(np.int64) for k in HEADER_COLUMNS}
    ranges = min(stored_ranges, MAX_KEY_RANGES)
    checks = [
        ("stage", (i64["stage"] < 0) | (i64["stage"] >= len(stages)), f"the stage table has {len(stages)} stages"),
        ("convention", (i64["convention"] & ~CONVENTION_MASK) != 0, f"known bits are {CONVENTION_MASK}"),
        ("batch", (i64["batch"] < 0) | (i64["batch"] >= a["batch"]), f"the attention has {a['batch']} batches"),
        ("head", (i64["head"] < 0) | (i64["head"] >= a["heads_q"]), f"the attention has {a['heads_q']} query heads"),
        ("kv_head", (i64["kv_head"] < -1) | (i64["kv_head"] >= a["heads_kv"]),
         f"the attention has {a['heads_kv']} kv heads; -1: not said"),
        ("rows", (i64["rows"] < 0) | (i64["rows"] > max_rows), f"must be in [0, max_rows = {max_rows}]"),
        ("q_begin", (i64["q_begin"] < 0) | (i64["q_begin"] + i64["rows"] > a["seq_q"]),
         f"rows [q_begin, q_begin + rows) must lie in [0, seq_q = {a['seq_q']})"),
        ("num_key_ranges", (i64["num_key_ranges"] < 0) | (i64["num_key_ranges"] > ranges), f"must be in [0, {ranges}]"),
    ]
    bad = np.zeros(n, dtype=bool)
    first: Optional[Tuple[int, str]] = None
    for name, wrong, rule in checks:
        if wrong.any():
            i = int(np.argmax(wrong))
            if first is None or i < first[0]:
                first = (i, f"{name} = {int(i64[name][i])} ({rule})")
            bad |= wrong
    if first is None:
        kr = np.asarray(cols["key_ranges"]).astype(np.int64)
        used = np.arange(kr.shape[1])[None, :] < i64["num_key_ranges"][:, None]
        wrong_range = used & ((kr[:, :, 0] < 0) | (kr[:, :, 1] < kr[:, :, 0]) | (kr[:, :, 1] > a["seq_kv"]))
        wrong = wrong_range.any(axis=1)
        if wrong.any():
            i = int(np.argmax(wrong))
            k = int(np.argmax(wrong_range[i]))
            first = (i, f"key range {k} = [{kr[i, k, 0]}, {kr[i, k, 1]}) (must lie in [0, seq_kv = {a['seq_kv']}] "
                        "with begin <= end)")
    for name, low in (("split", -1), ("step", 0), ("block", -1), ("where", -1)):
        wrong = i64[name] < low
        if wrong.any():
            i = int(np.argmax(wrong))
            if first is None or i < first[0]:
                first = (i, f"{name} = {int(i64[name][i])} (must be >= {low})")
    return first


def _values(t: RawTensor) -> np.ndarray:
    """A stored tensor's values: bf16 widened exactly to float32, other dtypes as stored."""
    if t.dtype == "BF16":
        out = widen_bf16(t.array)
        out.flags.writeable = False
        return out
    return t.array


def _physical_memory() -> int:
    """This machine's memory in bytes (no bound where the system does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return MAX_REMADE_INPUT_BYTES


def _torch() -> Any:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ImportError("to_torch() needs PyTorch: pip install torch") from None
    return torch


def load(path: PathLike) -> Trace:
    """Reads a trace file (``*.trace.safetensors``, format 2).

    The file is read whole into memory this process owns and checked as hostile input; a defect
    raises :class:`TraceFormatError` naming the file and the problem, a file that cannot be read
    an :class:`OSError`.
    """
    name = os.fsdecode(path)
    before = file_identity(name)
    tensors, metadata = read_safetensors(name)
    if file_identity(name) != before:
        raise OSError(f"{name}: the file was replaced while it was read; load it again")
    trace = Trace(name, tensors, metadata)
    trace.file = (os.path.abspath(name), before)
    return trace


def file_identity(path: str) -> Optional[Tuple[int, int, int, int]]:
    """(device, inode, size, modification time in ns) of the file at `path`, None when there is
    none: what tells that a path still names the file that was read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
