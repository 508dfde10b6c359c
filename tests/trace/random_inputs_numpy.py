"""tilescope's random inputs re-made with numpy alone (generator "tilescope-counter-1").

A trace captured with generated inputs may hold, instead of the inputs, the generator's spec and
the SHA-256 of what `inputs.q`, `inputs.k` and `inputs.v` would hold (docs/trace-format.md, "Inputs
re-made from their seed"). `remake_inputs(meta)` returns those five tensors, bit for bit (fp16 as
numpy float16, bf16 as its uint16 bit patterns), and checks the hashes. The tests run this file
against the C++ generator (base/random_inputs.cpp) and against captured traces.

    python3 random_inputs_numpy.py TRACE [OUT.npz]   # re-make, check the hashes, optionally save
"""
import hashlib
import json
import sys

import numpy as np

GENERATOR = "tilescope-counter-1"
_U64 = np.uint64
_F = np.float32


def _mix64(x):
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic)."""
    x = x + _U64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U64(27))) * _U64(0x94D049BB133111EB)
    return x ^ (x >> _U64(31))


def _stream_key(seed, tensor):
    """tensor: 0 q, 1 k, 2 v."""
    with np.errstate(over="ignore"):
        inner = _mix64(np.array([tensor + 0x632BE59BD9B4E019], dtype=_U64))
        return _mix64(np.array([seed], dtype=_U64) ^ inner)[0]


def _pairs(key, first_pair, count, distribution, scale):
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


def random_values(seed, tensor, distribution, scale, preset, head_dim, seq_kv, first, count):
    """float32 elements [first, first + count) of tensor 0 (q), 1 (k) or 2 (v), before the dtype."""
    factor = 4.0 if preset == "large_logits" and tensor != 2 else 1.0
    scale = _F(scale * factor)
    key = _stream_key(seed, tensor)

    def run(a, n):
        p0 = a >> 1
        values = _pairs(key, p0, ((a + n + 1) >> 1) - p0, distribution, scale)
        return values[a - 2 * p0: a - 2 * p0 + n]

    if tensor != 1 or preset != "all_equal_scores":
        return run(first, count)
    per_head = seq_kv * head_dim  # every key row of a (batch, head) is its first row
    idx = np.arange(first, first + count, dtype=np.int64)
    src = (idx // per_head) * per_head + idx % head_dim
    heads = np.unique(src // per_head)
    rows = {h: run(int(h) * per_head, head_dim) for h in heads}
    return np.concatenate([rows[h][src[src // per_head == h] - h * per_head] for h in heads]) if count else run(0, 0)


def to_dtype(values, dtype):
    """float32 -> the stored dtype: fp32 as is, fp16 as float16, bf16 as uint16 bits (round to
    nearest even)."""
    if dtype == "fp32":
        return values
    if dtype == "fp16":
        return values.astype(np.float16)
    u = values.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def remake_inputs(meta):
    """The tensors inputs.q_pairs, inputs.q, inputs.kv_pairs, inputs.k, inputs.v of a trace that
    stored its inputs' generator instead (metadata keys of docs/trace-format.md); raises
    ValueError when a hash differs."""
    a = json.loads(meta["attention"])
    g = json.loads(meta["inputs_generated"])
    if g["generator"] != GENERATOR:
        raise ValueError("inputs made by generator %r; this script re-makes %r" % (g["generator"], GENERATOR))
    seed, dist = int(meta["inputs_seed"]), meta["inputs_distribution"]
    scale, preset = float(meta["inputs_scale"]), meta["inputs_preset"]
    d, hq, hkv = a["head_dim"], a["heads_q"], a.get("heads_kv", a["heads_q"])
    out = {}
    for name, tensor, pairs, heads, seq in (("q", 0, g["q_pairs"], hq, a["seq_q"]),
                                            ("k", 1, g["kv_pairs"], hkv, a["seq_kv"]),
                                            ("v", 2, g["kv_pairs"], hkv, a["seq_kv"])):
        parts = [random_values(seed, tensor, dist, scale, preset, d, a["seq_kv"], ((b * heads + h) * seq) * d, seq * d)
                 for b, h in pairs]
        flat = np.concatenate(parts) if parts else np.zeros(0, dtype=_F)
        t = to_dtype(flat, a["dtype"]).reshape(len(pairs), seq, d)
        digest = hashlib.sha256(t.tobytes()).hexdigest()
        if digest != g["sha256"][name]:
            raise ValueError("inputs.%s re-made from the seed has SHA-256 %s, the trace recorded %s" %
                             (name, digest, g["sha256"][name]))
        out["inputs." + name] = t
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
