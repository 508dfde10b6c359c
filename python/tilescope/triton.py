"""``tilescope.triton``: record a Triton kernel's softmax states into a tilescope trace.

The kernel takes three extra parameters, named as here, and calls the helpers where a state is
complete::

    import tilescope.triton as tst

    @triton.jit
    def my_kernel(..., TS_BUF, TS_META, TS: tl.constexpr):
        ...
        if TS:   # compiled only when launched with a recording
            tst.record_rows(TS_BUF, TS_META, TS, stage=0, convention=tst.NORMALIZED | tst.LOG_BASE_2,
                            batch=b, head=h, kv_head=hk, q_begin=q0, rows=n, split=s, step=0,
                            key_begin=k0, key_end=k1, m=lse, l=l, o=acc)

    my_kernel[grid](..., **tst.NO_TRACE)                 # production: TS=False, nothing compiled in
    with tilescope.record(q, k, v, stages=[...], path=...) as rec:
        my_kernel[grid](..., **rec.triton)               # the buffer, its description, TS=True
        rec.set_output(out)

``rec.triton`` (:meth:`tilescope.Recording.triton`) gives ``TS_BUF``, the trace buffer (a uint8
tensor laid out as the C++ recorder lays it out: :class:`tilescope._layout.BufferLayout`), and
``TS_META``, an int64 tensor on the same device describing it (:data:`META_FIELDS`): the helpers
write headers, m, l and O at the offsets it gives, take slots from the buffer's counter with an
atomic add, count what finds no slot in ``dropped``, and apply the recording's filter, as the
CUDA probe's ``tilescope::record`` does (tilescope/probe.h). ``TS`` is a ``tl.constexpr``: with
``TS=False`` the helpers' bodies are not compiled, so the kernel is the kernel without them.

Compiled for an NVIDIA GPU, an event's ``where`` is the SM id and ``time_ns`` the global timer
(``%smid``, ``%globaltimer``, read by inline PTX as the CUDA probe reads them); in the interpreter
they are -1 and 0. Everything else is as the probe writes it. The same code runs in Triton's
interpreter (``TRITON_INTERPRET=1``, CPU tensors): :func:`tilescope.record` accepts CPU tensors
for that.
"""
from __future__ import annotations

from typing import Dict, List

import triton
import triton.language as tl

from . import trace as _trace
from .record import _interpreting
from ._layout import EVENT_HEADER, MAX_KEY_RANGES

# tilescope/event.h's ConventionBits (tilescope.trace's), as tl.constexpr for kernels.
NORMALIZED = tl.constexpr(_trace.NORMALIZED)
LOG_BASE_2 = tl.constexpr(_trace.LOG_BASE2)
UNSCALED_MAX = tl.constexpr(_trace.UNSCALED_MAX)
NO_MAX = tl.constexpr(_trace.NO_MAX)

# TS_META's entries, in order (int64 each). Offsets are in bytes from TS_BUF's start.
META_FIELDS: List[str] = ["m_offset", "l_offset", "o_offset", "counters_offset", "capacity", "max_rows",
                          "head_dim", "filter.batch_begin", "filter.batch_end", "filter.head_begin",
                          "filter.head_end", "filter.query_begin", "filter.query_end", "filter.stage_mask"]

# The launch arguments of a kernel launched without a recording.
NO_TRACE: Dict[str, object] = {"TS_BUF": None, "TS_META": None, "TS": False}

# Where the helpers find what they need, from the one description of each layout.
_HEADER_WORDS = tl.constexpr(EVENT_HEADER.itemsize // 4)  # EventHeader as int32 words (30)


def _word(field: str, index: int = 0) -> tl.constexpr:
    """The int32 word of EventHeader where ``field`` (element ``index`` of it) lies."""
    return tl.constexpr(EVENT_HEADER.fields[field][1] // 4 + index)


_W_STAGE, _W_CONVENTION, _W_BATCH, _W_HEAD, _W_KV_HEAD = (_word(f) for f in ("stage", "convention", "batch", "head",
                                                                               "kv_head"))
_W_Q_BEGIN, _W_ROWS, _W_SPLIT, _W_STEP, _W_BLOCK = (_word(f) for f in ("q_begin", "rows", "split", "step", "block"))
_W_WHERE, _W_NUM_KEY_RANGES = _word("where"), _word("num_key_ranges")
_W_TIME_LO, _W_TIME_HI = _word("time_ns"), _word("time_ns", 1)  # little-endian uint64
_W_KEY_BEGIN, _W_KEY_END = _word("keys", 0), _word("keys", 1)  # the first key range
assert MAX_KEY_RANGES * 2 + _W_KEY_BEGIN <= _word("time_ns")


def _meta_index(field: str) -> tl.constexpr:
    return tl.constexpr(META_FIELDS.index(field))


_M_M, _M_L, _M_O, _M_COUNTERS = (_meta_index(f) for f in ("m_offset", "l_offset", "o_offset", "counters_offset"))
_M_CAPACITY, _M_MAX_ROWS, _M_HEAD_DIM = (_meta_index(f) for f in ("capacity", "max_rows", "head_dim"))
_M_BATCH_BEGIN, _M_BATCH_END, _M_HEAD_BEGIN, _M_HEAD_END, _M_QUERY_BEGIN, _M_QUERY_END, _M_STAGE_MASK = (
    _meta_index("filter." + f) for f in ("batch_begin", "batch_end", "head_begin", "head_end", "query_begin",
                                          "query_end", "stage_mask"))


@triton.jit
def _meta(TS_META, i: tl.constexpr):
    return tl.load(TS_META + i)


@triton.jit
def _keeps(TS_META, stage, batch, head, q_begin, rows):
    """The recording's filter (probe.h's filter_keeps); broadcasts over tensor arguments."""
    mask = _meta(TS_META, _M_STAGE_MASK)
    stage64 = tl.full([], 0, tl.int64) + stage
    bit = (mask >> (stage64 & 63)) & 1
    stage_kept = (stage64 >= 64) | (stage64 < 0) | (bit != 0)
    return (stage_kept & (batch >= _meta(TS_META, _M_BATCH_BEGIN)) & (batch < _meta(TS_META, _M_BATCH_END))
            & (head >= _meta(TS_META, _M_HEAD_BEGIN)) & (head < _meta(TS_META, _M_HEAD_END))
            & (q_begin < _meta(TS_META, _M_QUERY_END)) & (q_begin + rows > _meta(TS_META, _M_QUERY_BEGIN)))


# Whether kernels are compiled (not run by the interpreter): TRITON_INTERPRET is read by Triton when
# it is imported, and so here.
_COMPILED = tl.constexpr(not _interpreting())


@triton.jit
def _where_and_when():
    """(SM id, global timer in ns) compiled; (-1, 0) in the interpreter."""
    if _COMPILED:
        where = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
        when = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False,
                                         pack=1)
    else:
        where = tl.full([], -1, tl.int32)
        when = tl.full([], 0, tl.int64)
    return where, when


@triton.jit
def _block_linear():
    return (tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * tl.program_id(2)))


@triton.jit
def _header_word(col, stage, convention, batch, head, kv_head, q_begin, rows, split, step, block, key_begin,
                 key_end, where, when):
    """EventHeader's int32 word ``col`` (0..31; words past the header are not stored)."""
    v = tl.where(col == _W_STAGE, stage, 0)
    v = tl.where(col == _W_CONVENTION, convention, v)
    v = tl.where(col == _W_BATCH, batch, v)
    v = tl.where(col == _W_HEAD, head, v)
    v = tl.where(col == _W_KV_HEAD, kv_head, v)
    v = tl.where(col == _W_Q_BEGIN, q_begin, v)
    v = tl.where(col == _W_ROWS, rows, v)
    v = tl.where(col == _W_SPLIT, split, v)
    v = tl.where(col == _W_STEP, step, v)
    v = tl.where(col == _W_BLOCK, block, v)
    v = tl.where(col == _W_WHERE, where, v)
    v = tl.where(col == _W_NUM_KEY_RANGES, 1, v)   # one key range
    v = tl.where(col == _W_KEY_BEGIN, key_begin, v)
    v = tl.where(col == _W_KEY_END, key_end, v)
    v = tl.where(col == _W_TIME_LO, (when & 0xFFFFFFFF).to(tl.uint32).to(tl.int32, bitcast=True), v)
    v = tl.where(col == _W_TIME_HI, (when >> 32).to(tl.int32), v)
    return v.to(tl.int32)                          # the other key ranges {0, 0}


@triton.jit
def _slots(TS_BUF, TS_META, kept):
    """Slots for the events where ``kept`` (a 1-D int1 tensor) from the buffer's counter, in
    order; -1 where not kept or past the capacity (those counted in ``dropped``)."""
    counters = (TS_BUF + _meta(TS_META, _M_COUNTERS)).to(tl.pointer_type(tl.int64), bitcast=True)
    k64 = kept.to(tl.int64)
    first = tl.atomic_add(counters, tl.sum(k64, axis=0))
    slot = first + tl.cumsum(k64, axis=0) - 1
    capacity = _meta(TS_META, _M_CAPACITY)
    lost = kept & (slot >= capacity)
    tl.atomic_add(counters + 1, tl.sum(lost.to(tl.int64), axis=0))
    return tl.where(kept & (slot < capacity), slot, -1)


@triton.jit
def record_rows(TS_BUF, TS_META, TS: tl.constexpr, stage, convention, batch, head, kv_head, q_begin, rows, split,
                step, key_begin, key_end, m, l, o):
    """One event: query rows [q_begin, q_begin + rows) of one query head over keys
    [key_begin, key_end). ``m``, ``l``: [R] float tensors (row r of the tile is query q_begin + r;
    rows past ``rows`` are not stored), ``o``: [R, D] (columns past the recording's head_dim not
    stored). ``convention``: the bits above (m is the LSE when NORMALIZED; LOG_BASE_2 when it is
    in base-2 units). ``split`` -1 and ``kv_head`` -1 mean not said. No-op unless ``TS``."""
    if TS:
        R: tl.constexpr = o.shape[0]
        D: tl.constexpr = o.shape[1]
        one = tl.full([1], 1, tl.int1)
        slot = tl.max(_slots(TS_BUF, TS_META, one & _keeps(TS_META, stage, batch, head, q_begin, rows)), axis=0)
        if slot >= 0:
            max_rows = _meta(TS_META, _M_MAX_ROWS)
            head_dim = _meta(TS_META, _M_HEAD_DIM)
            r = tl.arange(0, R)
            c = tl.arange(0, D)
            row_ok = (r < rows) & (r < max_rows)
            base = slot * max_rows
            mp = (TS_BUF + _meta(TS_META, _M_M)).to(tl.pointer_type(tl.float32), bitcast=True)
            lp = (TS_BUF + _meta(TS_META, _M_L)).to(tl.pointer_type(tl.float32), bitcast=True)
            op = (TS_BUF + _meta(TS_META, _M_O)).to(tl.pointer_type(tl.float32), bitcast=True)
            tl.store(mp + base + r, m.to(tl.float32), mask=row_ok)
            tl.store(lp + base + r, l.to(tl.float32), mask=row_ok)
            tl.store(op + (base + r[:, None]) * head_dim + c[None, :], o.to(tl.float32),
                     mask=row_ok[:, None] & (c[None, :] < head_dim))
            w = tl.arange(0, 32)
            where, when = _where_and_when()
            words = _header_word(w, stage, convention, batch, head, kv_head, q_begin, rows, split, step,
                                 _block_linear(), key_begin, key_end, where, when)
            hp = TS_BUF.to(tl.pointer_type(tl.int32), bitcast=True)
            tl.store(hp + slot * _HEADER_WORDS + w, words, mask=w < _HEADER_WORDS)


@triton.jit
def record_heads(TS_BUF, TS_META, TS: tl.constexpr, stage, convention, batch, head, heads, kv_head, q_begin,
                 split, step, key_begin, key_end, m, l, o):
    """One event per row of the tile, row r being query head ``head + r`` at query ``q_begin``
    (one row each): a GQA decode kernel's tile, which holds the query heads of one kv head.
    Rows r >= ``heads`` are not recorded. ``m``, ``l``: [H], ``o``: [H, D]; the rest as
    :func:`record_rows`. Each event takes its own slot (in row order). No-op unless ``TS``."""
    if TS:
        H: tl.constexpr = o.shape[0]
        D: tl.constexpr = o.shape[1]
        r = tl.arange(0, H)
        kept = (r < heads) & _keeps(TS_META, stage, batch, head + r, q_begin, 1)
        slot = _slots(TS_BUF, TS_META, kept)
        ok = slot >= 0
        max_rows = _meta(TS_META, _M_MAX_ROWS)
        head_dim = _meta(TS_META, _M_HEAD_DIM)
        c = tl.arange(0, D)
        base = slot * max_rows
        mp = (TS_BUF + _meta(TS_META, _M_M)).to(tl.pointer_type(tl.float32), bitcast=True)
        lp = (TS_BUF + _meta(TS_META, _M_L)).to(tl.pointer_type(tl.float32), bitcast=True)
        op = (TS_BUF + _meta(TS_META, _M_O)).to(tl.pointer_type(tl.float32), bitcast=True)
        tl.store(mp + base, m.to(tl.float32), mask=ok)
        tl.store(lp + base, l.to(tl.float32), mask=ok)
        tl.store(op + base[:, None] * head_dim + c[None, :], o.to(tl.float32),
                 mask=ok[:, None] & (c[None, :] < head_dim))
        w = tl.arange(0, 32)
        where, when = _where_and_when()
        words = _header_word(w[None, :], stage, convention, batch, (head + r)[:, None], kv_head, q_begin, 1, split,
                             step, _block_linear(), key_begin, key_end, where, when)
        hp = TS_BUF.to(tl.pointer_type(tl.int32), bitcast=True)
        tl.store(hp + slot[:, None] * _HEADER_WORDS + w[None, :], words, mask=ok[:, None] & (w[None, :] < _HEADER_WORDS))
