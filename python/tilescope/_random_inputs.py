"""tilescope's random inputs re-made with numpy (generator "tilescope-counter-1").

The one numpy home of the generator that docs/trace-format.md ("Inputs re-made from their seed")
defines in full and base/random_inputs.cpp implements in C++. A trace captured with generated
inputs stores the generator's spec and the SHA-256 of each tensor instead of the tensors; the
reader (tilescope.trace) re-makes them here. tests/trace/random_inputs_numpy.py runs this module
against the C++ generator (the bits must agree).

This file needs numpy and the standard library only: the C++ tests load it by its path, without
importing the package.
"""
from __future__ import annotations

import hashlib
from typing import Dict, Sequence, Tuple

import numpy as np

GENERATOR = "tilescope-counter-1"
DISTRIBUTIONS = ("normal", "uniform")
PRESETS = ("none", "large_logits", "all_equal_scores")
#: Elements made at a time (bounds the temporaries: about 40 bytes an element).
CHUNK_ELEMENTS = 1 << 20

_U64 = np.uint64
_F = np.float32


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic)."""
    x = x + _U64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U64(27))) * _U64(0x94D049BB133111EB)
    return x ^ (x >> _U64(31))


def stream_key(seed: int, tensor: int) -> np.uint64:
    """key(t) = mix64(seed ^ mix64(t + 0x632be59bd9b4e019)); tensor: 0 q, 1 k, 2 v."""
    with np.errstate(over="ignore"):
        inner = _mix64(np.array([tensor + 0x632BE59BD9B4E019], dtype=_U64))
        return _mix64(np.array([seed], dtype=_U64) ^ inner)[0]


def _pairs(key: np.uint64, first_pair: int, count: int, distribution: str, scale: np.float32) -> np.ndarray:
    """Values of counter pairs [first_pair, first_pair + count): float32 [2 * count]."""
    with np.errstate(over="ignore"):
        x = _mix64(key + np.arange(first_pair, first_pair + count, dtype=_U64))
    out = np.empty(2 * count, dtype=_F)
    if distribution == "uniform":
        for half, bits in ((0, x >> _U64(40)), (1, (x >> _U64(16)) & _U64(0xFFFFFF))):
            k = bits.astype(np.int64)
            out[half::2] = (2 * k + 1 - (1 << 24)).astype(_F) * _F(2.0**-24) * scale
        return out
    # normal: r = sqrt(-2 ln u), u = n / 2^24 with n = 2a + 1 odd; n = m 2^e, m in [sqrt(1/2), sqrt(2))
    n = (((x >> _U64(41)) << _U64(1)) | _U64(1)).astype(_F)
    nb = n.view(np.uint32)
    mant = nb & np.uint32(0x007FFFFF)
    big = ((mant | np.uint32(0x3F800000)).view(_F) > _F(float.fromhex("0x1.6a09e6p+0"))).astype(np.uint32)
    e = (nb >> np.uint32(23)).astype(np.int32) - 127 + big.astype(np.int32)
    m = (mant | ((np.uint32(127) - big) << np.uint32(23))).view(_F)
    s = (m - _F(1)) / (m + _F(1))
    s2 = s * s
    p = _F(1) / _F(9)
    for k in (7, 5, 3):
        p = p * s2 + _F(1) / _F(k)
    p = p * s2 + _F(1)
    ln_u = (e - 24).astype(_F) * _F(float.fromhex("0x1.62e430p-1")) + (_F(2) * s) * p
    r = np.sqrt(_F(-2) * ln_u)
    # the angle: quadrant from the top 2 of 24 bits, phi = f pi/2 from the other 22
    b = ((x >> _U64(17)) & _U64(0xFFFFFF)).astype(np.uint32)
    quadrant = b >> np.uint32(22)
    phi = (b & np.uint32(0x3FFFFF)).astype(np.int32).astype(_F) * _F(2.0**-22) * _F(float.fromhex("0x1.921fb6p+0"))
    p2 = phi * phi
    t = -(_F(1) / _F(39916800))
    t = t * p2 + _F(1) / _F(362880)
    t = t * p2 - _F(1) / _F(5040)
    t = t * p2 + _F(1) / _F(120)
    t = t * p2 - _F(1) / _F(6)
    sin_phi = phi + phi * p2 * t
    c = _F(1) / _F(479001600)
    c = c * p2 - _F(1) / _F(3628800)
    c = c * p2 + _F(1) / _F(40320)
    c = c * p2 - _F(1) / _F(720)
    c = c * p2 + _F(1) / _F(24)
    c = c * p2 - _F(1) / _F(2)
    cos_phi = _F(1) + p2 * c
    odd = (quadrant & np.uint32(1)) == 1
    first = np.where(odd, sin_phi, cos_phi)   # (cos, sin) by quadrant: (c, s), (-s, c), (-c, -s), (s, -c)
    second = np.where(odd, cos_phi, sin_phi)
    cos_a = np.where(((quadrant + np.uint32(1)) & np.uint32(2)) != 0, -first, first)
    sin_a = np.where((quadrant & np.uint32(2)) != 0, -second, second)
    out[0::2] = r * cos_a * scale
    out[1::2] = r * sin_a * scale
    return out


def _scaled(scale: float, preset: str, tensor: int) -> np.float32:
    factor = 4.0 if preset == "large_logits" and tensor != 2 else 1.0
    with np.errstate(over="ignore"):
        return _F(scale * factor)


def _run(key: np.uint64, first: int, count: int, distribution: str, scale: np.float32) -> np.ndarray:
    """float32 elements [first, first + count) of one stream."""
    p0 = first >> 1
    values = _pairs(key, p0, ((first + count + 1) >> 1) - p0, distribution, scale)
    return values[first - 2 * p0: first - 2 * p0 + count]


def random_values(seed: int, tensor: int, distribution: str, scale: float, preset: str, head_dim: int, seq_kv: int,
                  first: int, count: int) -> np.ndarray:
    """float32 elements [first, first + count) of the full tensor 0 (q), 1 (k) or 2 (v), before
    the dtype (the generator's definition, any range)."""
    s = _scaled(scale, preset, tensor)
    key = stream_key(seed, tensor)
    if tensor != 1 or preset != "all_equal_scores":
        return _run(key, first, count, distribution, s)
    per_head = seq_kv * head_dim  # every key row of a (batch, head) is its first row
    idx = np.arange(first, first + count, dtype=np.int64)
    src = (idx // per_head) * per_head + idx % head_dim
    out = np.empty(count, dtype=_F)
    for h in np.unique(src // per_head):
        row = _run(key, int(h) * per_head, head_dim, distribution, s)
        here = src // per_head == h
        out[here] = row[src[here] - int(h) * per_head]
    return out


def to_dtype(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 -> the stored dtype: fp32 as is, fp16 as float16, bf16 as uint16 bits (round to
    nearest even)."""
    if dtype == "fp32":
        return values
    if dtype == "fp16":
        with np.errstate(over="ignore"):
            return values.astype(np.float16)
    u = values.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


#: numpy dtype of each stored dtype's bytes (bf16 as its bits), little-endian as in the file.
STORED = {"fp32": np.dtype("<f4"), "fp16": np.dtype("<f2"), "bf16": np.dtype("<u2")}


def _slice(seed: int, tensor: int, distribution: str, scale: float, preset: str, dtype: str, head_dim: int,
           seq_kv: int, first: int, count: int, out: np.ndarray) -> None:
    """Writes elements [first, first + count) of a tensor, in its dtype, into out [count]."""
    if tensor == 1 and preset == "all_equal_scores":  # one row, repeated
        row = to_dtype(random_values(seed, 1, distribution, scale, preset, head_dim, seq_kv, first, head_dim), dtype)
        out.reshape(-1, head_dim)[:] = row
        return
    for at in range(0, count, CHUNK_ELEMENTS):
        n = min(CHUNK_ELEMENTS, count - at)
        out[at:at + n] = to_dtype(random_values(seed, tensor, distribution, scale, preset, head_dim, seq_kv,
                                                first + at, n), dtype)


def make_head_inputs(attention: Dict, seed: int, distribution: str, scale: float, preset: str,
                     q_pairs: Sequence[Tuple[int, int]], kv_pairs: Sequence[Tuple[int, int]]
                     ) -> Dict[str, np.ndarray]:
    """{"q", "k", "v"}: the slices of the (batch, head) pairs, [pairs, seq, head_dim] in the
    stored dtype (STORED; bf16 as uint16 bits). The caller checks the pairs and the sizes."""
    a = attention
    d, dtype = int(a["head_dim"]), a["dtype"]
    hq, hkv = int(a["heads_q"]), int(a.get("heads_kv", a["heads_q"]))
    out = {}
    for name, tensor, pairs, heads, seq in (("q", 0, q_pairs, hq, int(a["seq_q"])),
                                            ("k", 1, kv_pairs, hkv, int(a["seq_kv"])),
                                            ("v", 2, kv_pairs, hkv, int(a["seq_kv"]))):
        t = np.empty((len(pairs), seq, d), dtype=STORED[dtype])
        flat = t.reshape(len(pairs), seq * d)
        for i, (b, h) in enumerate(pairs):
            _slice(seed, tensor, distribution, scale, preset, dtype, d, int(a["seq_kv"]),
                   ((int(b) * heads + int(h)) * seq) * d, seq * d, flat[i])
        out[name] = t
    return out


def sha256_hex(t: np.ndarray) -> str:
    """SHA-256 of a tensor's bytes (C order, little-endian), 64 lowercase hex digits."""
    sha = hashlib.sha256()
    flat = np.ascontiguousarray(t).reshape(-1)
    step = max(1, (4 << 20) // max(1, flat.itemsize))
    for at in range(0, flat.size, step):
        sha.update(flat[at:at + step].tobytes())
    return sha.hexdigest()
