"""Test helper: loads a trace with trace_numpy_load (numpy only) and reports what numpy sees,
for test_python_interop to compare with what it wrote. Usage: trace_numpy_check.py TRACE OUT.json
"""
import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_numpy_load import events, load_trace  # noqa: E402


def main():
    tensors, meta = load_trace(sys.argv[1])
    report = {"metadata": meta, "tensors": {}, "events": [], "picks": {}}
    for name, a in tensors.items():
        report["tensors"][name] = {"dtype": a.dtype.str, "shape": list(a.shape),
                                   "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()}
    for i, e in enumerate(events(tensors, meta)):
        if i >= 6:
            break
        e["m_bits"] = tensors["events.m"][i].view("<u4").tolist()
        e["l_bits"] = tensors["events.l"][i].view("<u4").tolist()
        e["o_last_row_bits"] = tensors["events.o"][i, -1].view("<u4").tolist()
        report["events"].append(e)
    report["missing"] = list(events(tensors, meta, "missing."))
    report["attention"] = json.loads(meta["attention"])
    if "inputs.q" in tensors:  # as float32 (bf16 widened by the loader)
        report["picks"]["inputs.q"] = tensors["inputs.q"].astype(np.float32).reshape(-1)[:16].view("<u4").tolist()
    report["nan_count_o"] = int(np.isnan(tensors["events.o"]).sum())
    try:  # the safetensors package, when installed, must read the same arrays
        from safetensors.numpy import load_file
        st = load_file(sys.argv[1])
        same = all(np.array_equal(st[k], tensors[k], equal_nan=True) for k in st if "BF16" not in k)
        report["safetensors_numpy"] = "same" if same else "different"
    except ImportError:
        report["safetensors_numpy"] = "absent"
    with open(sys.argv[2], "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
