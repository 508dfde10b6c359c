"""Mends two faults of Triton's interpreter (TRITON_INTERPRET=1) that attention kernels meet.

1. A loop bound that is a runtime value, as ``for n0 in range(start, end, BLOCK_N)`` with
``start``, ``end`` from ``tl.load`` or ``tl.program_id``, under NumPy >= 2.4.

The interpreter holds every scalar as a one-element NumPy array, and Triton 3.5 and 3.6 turn such a
scalar into a Python int (``range`` asks for one) with ``int(array)``; NumPy 2.4 made that a
TypeError for arrays of one or more dimensions ("only 0-dimensional arrays can be converted to
Python scalars"). Later Triton (3.9 here) converts the single element itself and needs nothing.

2. ``tl.dot`` of bfloat16 operands. The interpreter stores bf16 as its uint16 bit patterns and
hands those to NumPy's matmul as integers (Triton 3.6 and 3.9), so a bf16 ``tl.dot`` gives nonsense
(1.0 x 1.0 = 16256^2). fp16 and fp32 are right.

3. float32 to bfloat16 (``x.to(tl.bfloat16)``): the interpreter truncates where the GPU rounds to
nearest even, so a P rounded to bf16 before P V, or a bf16 output, may be a bf16 step off what the
compiled kernel computes (twice its rounding error).

``install()`` changes nothing compiled: it acts only when the interpreter is on, and only where a
probe shows the interpreter failing; it then makes the conversion read the one element, a bf16
``tl.dot`` widen its operands to float32 first (exact: a bf16 is the upper half of a float32), and
the float32 to bf16 conversion round to nearest even (NaN kept NaN).
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


def _widened(handle):
    """A bf16 TensorHandle as float32 (its bit patterns shifted into a float32's upper half)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    data = np.asarray(handle.data)
    return TensorHandle((data.astype(np.uint32) << 16).view(np.float32), tl.float32)


def _bf16_dot_fails(builder_type) -> bool:
    """Whether the interpreter's create_dot gets 1.0 x 1.0 wrong in bf16."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    one = TensorHandle(np.array([[0x3F80]], dtype=np.uint16), tl.bfloat16)
    zero = TensorHandle(np.zeros((1, 1), dtype=np.float32), tl.float32)
    try:
        got = builder_type.create_dot(object.__new__(builder_type), one, one, zero, None, None)
        return float(np.asarray(got.data).reshape(-1)[0]) != 1.0
    except Exception:  # another signature: leave it alone
        return False


def _bf16_rounded(data):
    """float32 values as bf16 bit patterns, rounded to nearest even (as the GPU and torch do)."""
    import numpy as np

    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = np.isnan(np.ascontiguousarray(data, dtype=np.float32))
    return np.where(nan, ((bits >> 16) | np.uint32(0x40)).astype(np.uint16), rounded)


def _bf16_cast_truncates(builder_type) -> bool:
    """Whether the interpreter's float32 to bf16 cast truncates 1 + 2^-8 + 2^-9 (nearest: 1 + 2^-7)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    x = TensorHandle(np.array([1.005859375], dtype=np.float32), tl.float32)
    try:
        got = builder_type.cast_impl(object.__new__(builder_type), x, tl.bfloat16)
        return int(np.asarray(got.data).view(np.uint16).reshape(-1)[0]) != 0x3F81
    except Exception:  # another signature: leave it alone
        return False


def install_bf16_dot() -> bool:
    """Mends the interpreter's bf16 tl.dot and float32 to bf16 cast where probes find them wrong;
    True when it mended either."""
    global _bf16_installed
    if _bf16_installed:
        return True
    if os.environ.get("TRITON_INTERPRET", "") in ("", "0"):
        return False
    import triton.language as tl
    from triton.runtime import interpreter
    from triton.runtime.interpreter import TensorHandle

    builder = getattr(interpreter, "InterpreterBuilder", None)
    if builder is None:
        return False
    if _bf16_dot_fails(builder):
        original_dot = builder.create_dot

        def create_dot(self, a, b, d, *rest):
            if a.dtype == tl.bfloat16:
                a = _widened(a)
            if b.dtype == tl.bfloat16:
                b = _widened(b)
            return original_dot(self, a, b, d, *rest)

        builder.create_dot = create_dot
        _bf16_installed = True
    if _bf16_cast_truncates(builder):
        original_cast = builder.cast_impl

        def cast_impl(self, src, dst_type):
            if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
                return TensorHandle(_bf16_rounded(src.data), dst_type.scalar)
            return original_cast(self, src, dst_type)

        builder.cast_impl = cast_impl
        _bf16_installed = True
    return _bf16_installed


_bf16_installed = False


def install() -> bool:
    """Mends the interpreter where its probes find it failing: the scalar-to-index conversion and
    bf16 tl.dot (install_bf16_dot); True when it mended anything."""
    dot = install_bf16_dot()
    return _install_index() or dot


def _install_index() -> bool:
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
