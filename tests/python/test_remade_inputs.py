"""Inputs recorded as their recipe (capture's default for random inputs): re-made by the reader
bit for bit as the capture made them (docs/trace-format.md, "Inputs re-made from their seed")."""
import hashlib
import json
import struct

import numpy as np
import pytest

import tilescope
from tilescope import _random_inputs

M64 = 2**64 - 1


def header_of(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n])


@pytest.mark.parametrize("dtype,distribution,preset", [
    ("fp32", "normal", "none"), ("fp16", "uniform", "large_logits"), ("bf16", "normal", "all_equal_scores"),
    ("fp32", "uniform", "all_equal_scores"), ("bf16", "uniform", "none"), ("fp16", "normal", "large_logits")])
def test_a_recipe_trace_gives_the_inputs_of_the_trace_that_stores_them(capture, rng, dtype, distribution, preset):
    seed = int(rng.integers(0, 2**63)) * 2 + int(rng.integers(0, 2))
    scale = float(rng.choice([0.5, 1.0, 1.75, 3.0]))
    batch, heads_kv = int(rng.integers(1, 3)), int(rng.choice([1, 2]))
    heads = heads_kv * int(rng.choice([1, 2]))
    seq_kv = int(rng.integers(33, 160))
    args = ["--kernel", "splitk", "--batch", batch, "--heads", heads, "--heads-kv", heads_kv, "--seq-q", 8,
            "--seq-kv", seq_kv, "--splits", 2, "--dtype", dtype, "--seed", seed, "--distribution", distribution,
            "--input-scale", scale, "--preset", preset]
    if heads > 1 and rng.integers(0, 2):
        args += ["--trace-head", "1:%d" % heads]  # a subset of heads: the recipe lists those pairs only
    remade, stored = capture(*args), capture(*args, "--store-inputs")
    assert not any(k.startswith("inputs.") for k in header_of(remade)), "the recipe trace stores its inputs"
    assert {"inputs.q", "inputs.k", "inputs.v"} <= set(header_of(stored)), "--store-inputs stored nothing"
    r, s = tilescope.load(remade).inputs, tilescope.load(stored).inputs
    assert r is not None and s is not None
    for name in ("q_pairs", "kv_pairs", "q", "k", "v"):
        a, b = getattr(r, name), getattr(s, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), f"{name} re-made differs from the stored one"
    assert r.dtype == s.dtype == dtype
    assert np.std(r.k.astype(np.float64)) > 0
    b0, h0 = (int(x) for x in r.q_pairs[-1])
    assert r.keys(b0, h0).tobytes() == s.keys(b0, h0).tobytes()
    if preset == "all_equal_scores":
        assert (r.k == r.k[:, :1, :]).all(), "all_equal_scores: every key row is the first"


def mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def test_the_uniform_generator_is_the_definition(rng):
    """The numpy generator against the definition in Python integers (uniform: exact in float64)."""
    for _ in range(20):
        seed, tensor = int(rng.integers(0, 2**64, dtype=np.uint64)), int(rng.integers(0, 3))
        first, count = int(rng.integers(0, 2**40)), int(rng.integers(1, 40))
        scale = float(rng.choice([1.0, 0.25, 2.0]))
        key = mix64(seed ^ mix64(tensor + 0x632BE59BD9B4E019))
        want = []
        for i in range(first, first + count):
            x = mix64((key + i // 2) & M64)
            k = (x >> 40) if i % 2 == 0 else (x >> 16) & 0xFFFFFF
            want.append((2 * k + 1 - 2**24) * 2.0**-24 * scale)
        got = _random_inputs.random_values(seed, tensor, "uniform", scale, "none", 64, 128, first, count)
        np.testing.assert_array_equal(got, np.array(want, dtype=np.float32))


def test_large_slices_are_made_in_chunks_with_the_same_bits(rng, monkeypatch):
    a = {"batch": 1, "heads_q": 2, "heads_kv": 1, "seq_q": 3, "seq_kv": 50, "head_dim": 32, "dtype": "bf16"}
    seed = int(rng.integers(0, 2**63))
    whole = _random_inputs.make_head_inputs(a, seed, "normal", 1.0, "none", [(0, 1)], [(0, 0)])
    monkeypatch.setattr(_random_inputs, "CHUNK_ELEMENTS", 37)
    chunked = _random_inputs.make_head_inputs(a, seed, "normal", 1.0, "none", [(0, 1)], [(0, 0)])
    for name in "qkv":
        assert whole[name].tobytes() == chunked[name].tobytes()
        assert _random_inputs.sha256_hex(whole[name]) == hashlib.sha256(whole[name].tobytes()).hexdigest()
