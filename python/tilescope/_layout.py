"""The device buffer's C layouts, as the recorder's host side sees them (LP64: 8-byte pointers).

``EVENT_HEADER`` is tilescope/event.h's EventHeader (120 bytes), ``TRACE_VIEW`` trace_view.h's
TraceView (112 bytes) with its TraceFilter. tests/python checks every offset against a C++
compiler's offsetof on the packaged headers.
"""
from __future__ import annotations

import struct
from typing import Dict, Tuple

import numpy as np

MAX_KEY_RANGES = 8

EVENT_HEADER = np.dtype([
    ("stage", "<i4"), ("convention", "<i4"), ("batch", "<i4"), ("head", "<i4"), ("kv_head", "<i4"),
    ("q_begin", "<i4"), ("rows", "<i4"), ("split", "<i4"), ("step", "<i4"), ("block", "<i4"),
    ("where", "<i4"), ("num_key_ranges", "<i4"), ("keys", "<i4", (MAX_KEY_RANGES, 2)), ("time_ns", "<u8"),
])
assert EVENT_HEADER.itemsize == 120

INT32_MAX = 2**31 - 1

# TraceView: field -> (offset, struct format). Pointers are 'Q' (their address as an integer).
TRACE_VIEW_FIELDS: Dict[str, Tuple[int, str]] = {
    "headers": (0, "Q"), "m": (8, "Q"), "l": (16, "Q"), "o": (24, "Q"), "capacity": (32, "q"),
    "next_slot": (40, "Q"), "dropped": (48, "Q"), "slot_base": (56, "Q"), "num_stages": (64, "i"),
    "events_per_block": (68, "i"), "max_rows": (72, "i"), "head_dim": (76, "i"),
    "filter.batch_begin": (80, "i"), "filter.batch_end": (84, "i"), "filter.head_begin": (88, "i"),
    "filter.head_end": (92, "i"), "filter.query_begin": (96, "i"), "filter.query_end": (100, "i"),
    "filter.stage_mask": (104, "Q"),
}
TRACE_VIEW_SIZE = 112
ALIGN = 256  # each region of the buffer starts 256-aligned (the C++ recorder's)


def pack_trace_view(values: Dict[str, int]) -> bytes:
    """A TraceView's bytes: every field of TRACE_VIEW_FIELDS from ``values`` (missing: 0)."""
    out = bytearray(TRACE_VIEW_SIZE)
    for name, (offset, fmt) in TRACE_VIEW_FIELDS.items():
        struct.pack_into("<" + fmt, out, offset, int(values.get(name, 0)))
    return bytes(out)


def aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class BufferLayout:
    """Where each part of a trace buffer of ``capacity`` events lies: the C++ Recorder::start's
    layout (headers, m, l, O, then the two counters next_slot and dropped)."""

    def __init__(self, capacity: int, max_rows: int, head_dim: int) -> None:
        self.capacity, self.max_rows, self.head_dim = capacity, max_rows, head_dim
        rows = capacity * max_rows
        self.header_bytes = aligned(capacity * EVENT_HEADER.itemsize)
        self.ml_bytes = aligned(rows * 4)
        self.o_bytes = aligned(rows * head_dim * 4)
        self.m_offset = self.header_bytes
        self.l_offset = self.header_bytes + self.ml_bytes
        self.o_offset = self.header_bytes + 2 * self.ml_bytes
        self.counters_offset = self.o_offset + self.o_bytes
        self.total = self.counters_offset + 16

    def clear_ranges(self) -> Tuple[Tuple[int, int, int], ...]:
        """(begin, end, byte) to fill before a recording: 0xFF over headers and payloads (stage -1
        marks a slot never written; NaN payloads show rows an event left unwritten), 0 over the
        counters."""
        return ((0, self.counters_offset, 0xFF), (self.counters_offset, self.total, 0))

    def view_fields(self, base: int, num_stages: int, events_per_block: int) -> Dict[str, int]:
        """The TraceView fields of this buffer at device address ``base`` (filter not included)."""
        return {"headers": base, "m": base + self.m_offset, "l": base + self.l_offset, "o": base + self.o_offset,
                "capacity": self.capacity, "next_slot": base + self.counters_offset,
                "dropped": base + self.counters_offset + 8, "slot_base": 0, "num_stages": num_stages,
                "events_per_block": events_per_block, "max_rows": self.max_rows, "head_dim": self.head_dim}
