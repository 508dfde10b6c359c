"""Lets Triton's interpreter (TRITON_INTERPRET=1) take a loop bound that is a runtime value, as
``for n0 in range(start, end, BLOCK_N)`` with ``start``, ``end`` from ``tl.load`` or
``tl.program_id``, under NumPy >= 2.4.

The interpreter holds every scalar as a one-element NumPy array, and Triton 3.5 and 3.6 turn such a
scalar into a Python int (``range`` asks for one) with ``int(array)``; NumPy 2.4 made that a
TypeError for arrays of one or more dimensions ("only 0-dimensional arrays can be converted to
Python scalars"). Later Triton (3.9 here) converts the single element itself and needs nothing.

``install()`` changes nothing compiled: it acts only when the interpreter is on, and only when a
probe shows the interpreter's conversion failing; it then makes the conversion read the one element.
The example's interpreter entry points call it (conftest.py, run_decode.py); the kernels keep the
loop a kernel author writes, so the compiled code stays what it was.
"""
from __future__ import annotations

import os

_installed = False


def _index(self):
    data = self.handle.data
    if data.size != 1:
        raise TypeError(f"a block of {data.size} values is not an index")
    return int(data.reshape(()))


def _conversion_fails(patch_lang_tensor, scope_type) -> bool:
    """Whether the interpreter's ``patch_lang_tensor`` gives ``tl.tensor`` a conversion that refuses
    a one-element scalar. Tried on ``tl.tensor`` and undone: Triton 3.6 and later patch through a
    scope they restore after each launch (``scope_type``), 3.5 sets the attributes (``None``)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    before = dict(vars(tl.tensor))
    args = (scope_type(),) if scope_type is not None else ()
    try:
        patch_lang_tensor(tl.tensor, *args)
        range(tl.tensor(TensorHandle(np.array([3], dtype=np.int32), tl.int32), tl.int32))
        return False
    except TypeError:
        return True
    finally:
        if args:
            args[0].restore()
        for name in set(vars(tl.tensor)) - set(before):
            delattr(tl.tensor, name)
        for name, value in before.items():
            if vars(tl.tensor).get(name) is not value:
                setattr(tl.tensor, name, value)


def install() -> bool:
    """Mends the interpreter's scalar-to-index conversion where it fails; True when it did."""
    global _installed
    if _installed:
        return True
    if os.environ.get("TRITON_INTERPRET", "") in ("", "0"):
        return False
    import inspect

    from triton.runtime import interpreter

    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None:
        return False
    scoped = len(inspect.signature(original).parameters) >= 2
    scope_type = getattr(interpreter, "_LangPatchScope", None) if scoped else None
    if scoped and scope_type is None or not _conversion_fails(original, scope_type):
        return False

    def patch_lang_tensor(tensor, *scope):
        original(tensor, *scope)
        if scope:
            scope[0].set_attr(tensor, "__index__", _index)
        else:
            tensor.__index__ = _index

    interpreter._patch_lang_tensor = patch_lang_tensor
    _installed = True
    return True
