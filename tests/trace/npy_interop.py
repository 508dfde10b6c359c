"""Test helper for .npy interop with numpy. Usage: npy_interop.py FOLDER SEED
For every c_*.npy that tilescope wrote: loads it with np.load, reports dtype, shape and a hash
of its bytes, and saves it reversed along its first axis as py_rev_*.npy. Then writes arrays
of a formula tilescope can recompute (value i = ((i * 7919 + SEED) % 2003) / 16 - 60) in
forms tilescope must read (versions 2.0 and 3.0, each dtype) or refuse (Fortran order,
big-endian, complex).
"""
import hashlib
import json
import os
import sys

import numpy as np


def formula(n, seed):
    i = np.arange(n, dtype=np.int64)
    return ((i * 7919 + seed) % 2003) / 16.0 - 60.0


def main():
    folder, seed = sys.argv[1], int(sys.argv[2])
    report = {}
    for name in sorted(os.listdir(folder)):
        if not (name.startswith("c_") and name.endswith(".npy")):
            continue
        a = np.load(os.path.join(folder, name))
        report[name] = {"dtype": a.dtype.str, "shape": list(a.shape),
                        "sha256": hashlib.sha256(a.tobytes()).hexdigest(),
                        "c_contiguous": bool(a.flags.c_contiguous)}
        rev = np.ascontiguousarray(a[::-1]) if a.ndim > 0 else a
        np.save(os.path.join(folder, "py_rev_" + name[2:]), rev)
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump(report, f)

    x = formula(24, seed).reshape(2, 3, 4)
    for dtype in ["<f2", "<f4", "<f8"]:
        np.save(os.path.join(folder, "py_%s.npy" % dtype[1:]), x.astype(dtype))
    np.save(os.path.join(folder, "py_i4.npy"), (x * 16).astype("<i4"))
    np.save(os.path.join(folder, "py_i8.npy"), (x * 16).astype("<i8"))
    np.save(os.path.join(folder, "py_u1.npy"), (x * 16).astype(np.int64).astype("u1"))
    np.save(os.path.join(folder, "py_b1.npy"), x > 0)
    for version in [(2, 0), (3, 0)]:
        with open(os.path.join(folder, "py_v%d.npy" % version[0]), "wb") as f:
            np.lib.format.write_array(f, x.astype("<f4"), version=version)
    np.save(os.path.join(folder, "bad_fortran.npy"), np.asfortranarray(x.astype("<f4")))
    np.save(os.path.join(folder, "bad_bigendian.npy"), x.astype(">f4"))
    np.save(os.path.join(folder, "bad_complex.npy"), x.astype("<c8"))


if __name__ == "__main__":
    main()
