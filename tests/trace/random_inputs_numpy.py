"""tilescope's random inputs re-made with numpy alone (generator "tilescope-counter-1").

The generator itself is python/tilescope/_random_inputs.py (the package's, its one numpy home);
this script drives it from a trace's metadata with the loader of docs/trace-format.md.

A trace captured with generated inputs may hold, instead of the inputs, the generator's spec and
the SHA-256 of what `inputs.q`, `inputs.k` and `inputs.v` would hold (docs/trace-format.md, "Inputs
re-made from their seed"). `remake_inputs(meta)` returns those five tensors, bit for bit (fp16 as
numpy float16, bf16 as its uint16 bit patterns), and checks the hashes. The tests run this file
(so the package's generator) against the C++ generator (base/random_inputs.cpp) and against captured traces.

    python3 random_inputs_numpy.py TRACE [OUT.npz]   # re-make, check the hashes, optionally save
"""
import importlib.util
import json
import os
import sys

import numpy as np

# The generator's one numpy home is the Python package's module; loaded by its path (numpy and the
# standard library only), so Debian's python3 runs this without installing the package.
_MODULE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "tilescope",
                       "_random_inputs.py")
_spec = importlib.util.spec_from_file_location("tilescope_random_inputs", _MODULE)
_gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gen)
GENERATOR = _gen.GENERATOR
random_values, to_dtype = _gen.random_values, _gen.to_dtype


def remake_inputs(meta):
    """The tensors inputs.q_pairs, inputs.q, inputs.kv_pairs, inputs.k, inputs.v of a trace that
    stored its inputs' generator instead (metadata keys of docs/trace-format.md); raises
    ValueError when a hash differs."""
    a = json.loads(meta["attention"])
    g = json.loads(meta["inputs_generated"])
    if g["generator"] != GENERATOR:
        raise ValueError("inputs made by generator %r; this script re-makes %r" % (g["generator"], GENERATOR))
    made = _gen.make_head_inputs(a, int(meta["inputs_seed"]), meta["inputs_distribution"],
                                 float(meta["inputs_scale"]), meta["inputs_preset"],
                                 [tuple(p) for p in g["q_pairs"]], [tuple(p) for p in g["kv_pairs"]])
    out = {}
    for name in ("q", "k", "v"):
        digest = _gen.sha256_hex(made[name])
        if digest != g["sha256"][name]:
            raise ValueError("inputs.%s re-made from the seed has SHA-256 %s, the trace recorded %s" %
                             (name, digest, g["sha256"][name]))
        out["inputs." + name] = made[name]
    out["inputs.q_pairs"] = np.array(g["q_pairs"], dtype=np.int32).reshape(-1, 2)
    out["inputs.kv_pairs"] = np.array(g["kv_pairs"], dtype=np.int32).reshape(-1, 2)
    return out


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from trace_numpy_load import load_trace  # noqa: E402  (the loader of docs/trace-format.md)

    _, meta = load_trace(sys.argv[1])
    tensors = remake_inputs(meta)
    if len(sys.argv) > 2:
        np.savez(sys.argv[2], **tensors)
    print("ok: " + ", ".join("%s %s" % (k, list(v.shape)) for k, v in sorted(tensors.items())))
