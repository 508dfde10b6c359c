"""``tilescope.record``: trace a PyTorch extension's CUDA kernel.

    with tilescope.record(q, k, v, stages=[("partial", "state"), ("reduce", "merge")],
                          path="run.trace.safetensors", causal="none") as rec:
        out = my_ext.forward(q, k, v, rec.view)   # the kernel gets the TraceView (below)
        rec.set_output(out)
    report = tilescope.diff(rec.path)

On entry the trace buffer is allocated as a torch uint8 tensor on Q's device and cleared on the
current stream, in the layout of the C++ ``tilescope::Recorder::start`` (tilescope/recorder.h):
headers, m, l, O, then the two counters. ``rec.view`` is a CPU uint8 tensor holding the
``tilescope::TraceView`` bytes (112) that point into it; the extension copies them into a
``TraceView`` and passes it to the kernel by value, or into its ``TILESCOPE_TRACE_SYMBOL``
(``cudaMemcpyToSymbolAsync`` on the current stream). On a normal exit the stream is waited for,
the buffer copied back, and the trace written with Q, K, V and the output; on an exception
nothing is written.

A Triton kernel takes the buffer as launch arguments instead: ``rec.triton`` (see
:mod:`tilescope.triton`). Under Triton's interpreter (``TRITON_INTERPRET=1``) Q, K, V may be CPU
tensors; the buffer is then a CPU tensor too.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ._layout import TRACE_VIEW_SIZE, BufferLayout, pack_trace_view
from ._safetensors import check_output_path
from .trace import FORMAT_KEY
from .writer import Attention, HostInputs, RecorderError, TraceFilter, stage_table, write_recording

_LAYOUTS = ("bshd", "bhsd")


def _interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (on CPU tensors)."""
    return os.environ.get("TRITON_INTERPRET", "") not in ("", "0")


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ImportError("tilescope.record needs PyTorch (pip install torch)") from None
    return torch


def _dtype_name(torch: Any, t: Any, what: str) -> str:
    names = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
    if t.dtype not in names:
        raise RecorderError(f"{what} is {t.dtype}; tilescope traces float32, float16 and bfloat16 tensors")
    return names[t.dtype]


def _to_bhsd(t: Any, layout: str, what: str) -> Any:
    if t.dim() != 4:
        raise RecorderError(f"{what} has {t.dim()} dims; give a 4-D tensor in layout {layout!r}")
    return t.permute(0, 2, 1, 3) if layout == "bshd" else t


def _host(torch: Any, t: Any) -> np.ndarray:
    """A tensor's values in host memory as numpy (bf16 as its uint16 bit patterns)."""
    c = t.detach().to("cpu").contiguous()
    if c.dtype == torch.bfloat16:
        return c.view(torch.int16).numpy().view(np.uint16)
    return c.numpy()


class Recording:
    """An open recording (what ``tilescope.record`` yields). See the module's documentation."""

    def __init__(self, q: Any, k: Any, v: Any, stages: Sequence[Any], path: Union[str, "os.PathLike[str]"],
                 layout: str = "bshd", capacity: int = 1 << 16, max_rows: int = 1, events_per_block: int = 0,
                 filter: Optional[TraceFilter] = None, kernel: str = "", run: str = "",
                 stream: Any = None, **attention: Any) -> None:
        torch = _torch()
        self._torch = torch
        if layout not in _LAYOUTS:
            raise RecorderError(f"layout {layout!r}: 'bshd' ([batch, seq, heads, head_dim], flash-attention's) "
                                "or 'bhsd' ([batch, heads, seq, head_dim])")
        self.layout = layout
        for name, t in (("Q", q), ("K", k), ("V", v)):
            if not isinstance(t, torch.Tensor):
                raise RecorderError(f"{name} is a {type(t).__name__}, not a torch tensor")
            if t.device.type != "cuda" and not (t.device.type == "cpu" and _interpreting()):
                raise RecorderError(f"{name} is on {t.device}: tilescope.record traces CUDA kernels, so Q, K and V "
                                    "must be CUDA tensors (for a kernel on the CPU, build it with tilescope's CPU "
                                    "path and its C++ recorder: docs/your-own-kernel.md; CPU tensors are taken "
                                    "for a Triton kernel under TRITON_INTERPRET=1)")
        if k.device != q.device or v.device != q.device:
            raise RecorderError(f"Q, K and V must be on one device (got {q.device}, {k.device}, {v.device})")
        dtype = _dtype_name(torch, q, "Q")
        if _dtype_name(torch, k, "K") != dtype or _dtype_name(torch, v, "V") != dtype:
            raise RecorderError("Q, K and V must have one dtype (the trace stores the inputs in it)")
        qb, kb, vb = (_to_bhsd(t, layout, n) for t, n in ((q, "Q"), (k, "K"), (v, "V")))
        if kb.shape != vb.shape:
            raise RecorderError(f"K and V differ in shape ({list(k.shape)} and {list(v.shape)})")
        if qb.shape[0] != kb.shape[0] or qb.shape[3] != kb.shape[3]:
            raise RecorderError(f"Q {list(q.shape)} and K {list(k.shape)} differ in batch or head_dim ({layout})")
        self.attention = Attention(batch=qb.shape[0], heads_q=qb.shape[1], seq_q=qb.shape[2], seq_kv=kb.shape[2],
                                   head_dim=qb.shape[3], heads_kv=kb.shape[1], **attention)
        self._attention_json = self.attention.to_json(dtype)
        self.stages = stage_table(stages)
        self.filter = filter or TraceFilter()
        if capacity < 1:
            raise RecorderError(f"capacity = {capacity}; the buffer must hold at least one event")
        if not 1 <= max_rows <= 65536:
            raise RecorderError(f"max_rows = {max_rows}; give the most query rows one event holds, 1 to 65536")
        if events_per_block < 0:
            raise RecorderError(f"events_per_block = {events_per_block}; 0 for counted slots, or the events each "
                                "block records")
        self.path = os.fsdecode(path)
        # The output path is checked now, not after the kernel has run (OSError, as the write's).
        check_output_path(self.path, FORMAT_KEY)
        self.device = q.device
        self.cuda = q.device.type == "cuda"
        self.stream = stream if stream is not None or not self.cuda else torch.cuda.current_stream(q.device)
        self._inputs = (qb, kb, vb, dtype)
        self._output: Optional[Tuple[Any, Optional[Any], str]] = None
        self.metadata: Dict[str, str] = ({"backend": "gpu", "device": self._device_name()} if self.cuda else
                                         {"backend": "cpu", "device": "Triton interpreter (TRITON_INTERPRET=1)"})
        if kernel or run:
            self.metadata.update({"kernel": kernel, "run": run})
        self.layout_of_buffer = BufferLayout(capacity, max_rows, self.attention.head_dim)
        gib = self.layout_of_buffer.total / 2**30
        if gib > 64:
            raise RecorderError(f"a trace buffer of {capacity} events of {max_rows} rows would take {gib:.0f} GiB; "
                                "lower capacity or max_rows, or narrow the filter")
        self.events_per_block = events_per_block
        self.buffer: Any = None
        self.view: Any = None
        self._triton: Optional[Dict[str, Any]] = None
        self.num_events = 0
        self.dropped_events = 0

    def _device_name(self) -> str:
        props = self._torch.cuda.get_device_properties(self.device)
        return f"{props.name} (sm_{props.major}{props.minor})"

    def start(self) -> "Recording":
        """Allocates and clears the buffer on the stream and makes ``view``."""
        torch, lay = self._torch, self.layout_of_buffer

        def clear() -> None:
            self.buffer = torch.empty(lay.total, dtype=torch.uint8, device=self.device)
            for begin, end, byte in lay.clear_ranges():
                self.buffer[begin:end].fill_(byte)

        if self.cuda:
            with torch.cuda.device(self.device), torch.cuda.stream(self.stream):
                clear()
        else:
            clear()
        fields = lay.view_fields(self.buffer.data_ptr(), len(self.stages), self.events_per_block)
        fields.update(self.filter.view_fields(self.stages))
        raw = pack_trace_view(fields)
        self.view = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
        assert self.view.numel() == TRACE_VIEW_SIZE
        self._fields = fields
        return self

    @property
    def triton(self) -> Dict[str, Any]:
        """A Triton kernel's launch arguments (``kernel[grid](..., **rec.triton)``): ``TS_BUF``
        the buffer, ``TS_META`` its description (int64, :data:`tilescope.triton.META_FIELDS`, on
        the buffer's device), ``TS=True``. See :mod:`tilescope.triton`."""
        if self.buffer is None:
            raise RecorderError("rec.triton is for use inside the recording's `with` block")
        if self._triton is not None and self._triton["TS_BUF"] is self.buffer:
            return self._triton
        if self.events_per_block:
            raise RecorderError("tilescope.triton takes slots from the counter: record with events_per_block=0")
        from .triton import META_FIELDS

        torch, lay = self._torch, self.layout_of_buffer
        values = {"m_offset": lay.m_offset, "l_offset": lay.l_offset, "o_offset": lay.o_offset,
                  "counters_offset": lay.counters_offset, "capacity": lay.capacity, "max_rows": lay.max_rows,
                  "head_dim": lay.head_dim}
        values.update({k: v for k, v in self._fields.items() if k.startswith("filter.")})
        mask = values["filter.stage_mask"]
        values["filter.stage_mask"] = mask - (1 << 64) if mask >= 1 << 63 else mask  # its bits, as int64
        meta = torch.tensor([values[k] for k in META_FIELDS], dtype=torch.int64)
        self._triton = {"TS_BUF": self.buffer, "TS_META": meta.to(self.device), "TS": True}
        return self._triton

    def set_output(self, out: Any, lse: Any = None, layout: Optional[str] = None, lse_base: str = "natural") -> None:
        """The kernel's output (Q's layout unless ``layout`` says) and its LSE [batch, heads, seq]
        (float32; ``lse_base`` "natural" or "base2")."""
        torch = self._torch
        if not isinstance(out, torch.Tensor):
            raise RecorderError(f"the output is a {type(out).__name__}, not a torch tensor")
        if lse_base not in ("natural", "base2"):
            raise RecorderError(f"lse_base {lse_base!r}: natural or base2")
        if lse is not None and (not isinstance(lse, torch.Tensor) or lse.dtype != torch.float32):
            raise RecorderError("the LSE must be a float32 torch tensor [batch, heads_q, seq_q]")
        self._output = (_to_bhsd(out, layout or self.layout, "the output"), lse, lse_base)
        self._output_dtype = _dtype_name(torch, out, "the output")

    def finish(self) -> None:
        """Waits for the stream, copies the buffer back and writes the trace."""
        torch = self._torch
        if self.cuda:
            self.stream.synchronize()
        raw = self.buffer.to("cpu").numpy()
        qb, kb, vb, dtype = self._inputs
        inputs = HostInputs(_host(torch, qb), _host(torch, kb), _host(torch, vb), dtype)
        output = lse = None
        if self._output is not None:
            ob, lse_t, base = self._output
            output = (_host(torch, ob), self._output_dtype)
            if lse_t is not None:
                lse = _host(torch, lse_t).astype(np.float64) * (np.log(2.0) if base == "base2" else 1.0)
                lse = lse.astype(np.float32)
        self.num_events, self.dropped_events = write_recording(
            self.path, raw, self.layout_of_buffer, self._attention_json, self.stages, inputs, self.filter,
            output, lse, self.metadata)

    def load(self) -> Any:
        """The written trace (:func:`tilescope.load`)."""
        from .trace import load

        return load(self.path)

    def __enter__(self) -> "Recording":
        return self.start()

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        try:
            if kind is None:
                self.finish()
        finally:
            self.buffer = None  # the device memory goes back to torch's allocator


def record(q: Any, k: Any, v: Any, stages: Sequence[Any], path: Union[str, "os.PathLike[str]"], *,
           layout: str = "bshd", capacity: int = 1 << 16, max_rows: int = 1, events_per_block: int = 0,
           filter: Optional[TraceFilter] = None, kernel: str = "", run: str = "", stream: Any = None,
           scale: float = 0.0, causal: str = "none", window_left: int = -1, window_right: int = -1,
           softcap: float = 0.0, q_lens: Sequence[int] = (), kv_lens: Sequence[int] = (),
           alibi_slopes: Sequence[float] = ()) -> Recording:
    """A context manager that traces a PyTorch extension's kernel into ``path``.

    ``q`` [batch, seq_q, heads_q, head_dim] and ``k``, ``v`` [batch, seq_kv, heads_kv,
    head_dim] (``layout="bshd"``; ``"bhsd"`` for [batch, heads, seq, head_dim]; any strides;
    float32, float16 or bfloat16; CUDA tensors on one device; heads_kv a divisor of heads_q
    for GQA/MQA). ``stages``: the stage table, (name, kind) or (name, kind, pass) with kind
    "state", "merge" or "final", in the order of the indices the kernel records. The attention
    description: ``scale`` (0: 1/sqrt(head_dim)), ``causal`` ("none", "bottom_right",
    "top_left"), ``window_left`` / ``window_right`` (-1: none), ``softcap``, ``q_lens`` /
    ``kv_lens`` per batch, ``alibi_slopes`` per query head. The buffer: ``capacity`` events of
    ``max_rows`` rows, slots counted (``events_per_block`` 0) or planned uniformly, ``filter``
    (:class:`TraceFilter`). ``stream``: the stream the kernel runs on (default: the current
    one). ``kernel`` and ``run`` name the trace. Errors are :class:`RecorderError`.
    """
    return Recording(q, k, v, stages, path, layout=layout, capacity=capacity, max_rows=max_rows,
                     events_per_block=events_per_block, filter=filter, kernel=kernel, run=run, stream=stream,
                     scale=scale, causal=causal, window_left=window_left, window_right=window_right,
                     softcap=softcap, q_lens=list(q_lens), kv_lens=list(kv_lens), alibi_slopes=list(alibi_slopes))
