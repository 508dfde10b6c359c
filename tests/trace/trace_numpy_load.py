"""Loads a tilescope trace (a safetensors file) with numpy only: no tilescope code, no
safetensors package. docs/trace-format.md shows this function; the tests run it.

    tensors, meta = load_trace("run.trace.safetensors")
    o = tensors["events.o"]            # float32 [N, max_rows, head_dim], memory-mapped
    stages = json.loads(meta["stages"])  # [{"name": ..., "kind": ..., "pass": ...}, ...]
    attention = json.loads(meta["attention"])
    for e in events(tensors, meta): ...  # header fields, stage name and key ranges
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


def events(tensors, meta, prefix="events."):
    """One dict per event (prefix "missing." for the planned events never written): the header
    fields by name, the stage's name and kind from the stage table, and the key ranges as a list
    of [begin, end)."""
    stages = json.loads(meta["stages"])
    fields = [k[len(prefix):] for k in tensors
              if k.startswith(prefix) and tensors[k].ndim == 1]
    if prefix + "stage" not in tensors:
        return
    ranges = tensors[prefix + "key_ranges"]  # [N, R, 2]
    for i in range(len(tensors[prefix + "stage"])):
        e = {f: int(tensors[prefix + f][i]) for f in fields}
        e["stage_name"] = stages[e["stage"]]["name"]
        e["stage_kind"] = stages[e["stage"]]["kind"]
        e["keys"] = ranges[i, :e["num_key_ranges"]].tolist()
        yield e
