"""Loads a tilescope trace (a safetensors file) with numpy only: no tilescope code, no
safetensors package. docs/trace-format.md shows this function; the tests run it.

    tensors, meta = load_trace("run.trace.safetensors")
    o = tensors["events.o"]            # float32 [N, block_m, head_dim], memory-mapped
    stage_names = json.loads(meta["stage_names"])
"""
import json
import struct

import numpy as np

_DTYPES = {"BOOL": "?", "U8": "u1", "I8": "i1", "I16": "<i2", "U16": "<u2", "I32": "<i4",
           "U32": "<u4", "I64": "<i8", "U64": "<u8", "F16": "<f2", "F32": "<f4", "F64": "<f8"}


def load_trace(path):
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    (n,) = struct.unpack("<Q", raw[:8].tobytes())
    header = json.loads(raw[8:8 + n].tobytes())
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        if entry["dtype"] == "BF16":  # no numpy bfloat16: widen to float32 (exact)
            bits = data[begin:end].view("<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        else:
            array = data[begin:end].view(_DTYPES[entry["dtype"]])
        tensors[name] = array.reshape(entry["shape"])
    return tensors, meta


def events(tensors, meta):
    """One dict per event: header fields by name, and the stage's name."""
    stage_names = json.loads(meta["stage_names"])
    fields = [k[len("events."):] for k in tensors
              if k.startswith("events.") and tensors[k].ndim == 1]
    n = len(tensors["events.stage"])
    for i in range(n):
        e = {f: int(tensors["events." + f][i]) for f in fields}
        e["stage_name"] = stage_names[e["stage"]]
        yield e
