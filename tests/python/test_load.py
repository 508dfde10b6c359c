"""tilescope.load on traces the CLI captures from fresh seeded random inputs: every array checked
against what was given, what the CLI says, what it exports, and a float64 recomputation."""
import importlib.util
import json

import numpy as np
import pytest

import tilescope
from tilescope._safetensors import round_to_bf16, widen_bf16

from conftest import REPO, events_line, run


def write_inputs(tmp_path, rng, dtype, b, h, hkv, s_q, s_kv, d):
    """Seeded random Q, K, V [batch, heads, seq, head_dim] in files the CLI reads: .npy for fp32
    and fp16, one .safetensors (written by the package's writer) for bf16."""
    from tilescope._safetensors import write_safetensors
    q = rng.standard_normal((b, h, s_q, d), dtype=np.float32)
    k = rng.standard_normal((b, hkv, s_kv, d), dtype=np.float32)
    v = rng.standard_normal((b, hkv, s_kv, d), dtype=np.float32)
    if dtype == "bf16":
        path = tmp_path / "qkv.safetensors"
        write_safetensors(path, {n: ("BF16", round_to_bf16(a)) for n, a in (("q", q), ("k", k), ("v", v))}, {})
        return tuple(widen_bf16(round_to_bf16(a)) for a in (q, k, v)), [path]
    paths = []
    for name, a in (("q", q), ("k", k), ("v", v)):
        paths.append(tmp_path / f"{name}.npy")
        np.save(paths[-1], a.astype(np.float16 if dtype == "fp16" else np.float32))
    if dtype == "fp16":
        q, k, v = (a.astype(np.float16) for a in (q, k, v))
    return (q, k, v), paths


def test_bf16_rounding_is_to_nearest_even(rng):
    x = (rng.standard_normal(100000) * 10.0 ** rng.integers(-30, 30, 100000)).astype(np.float32)
    y = widen_bf16(round_to_bf16(x))
    assert not np.any(y.view(np.uint32) & 0xFFFF)
    # The nearest of the two bf16 neighbours (truncated and one ulp up), ties to even.
    lo = (x.view(np.uint32) & 0xFFFF0000).view(np.float32)
    hi = ((x.view(np.uint32) & 0xFFFF0000) + 0x10000).view(np.float32)
    dlo, dhi = np.abs(x.astype(np.float64) - lo), np.abs(hi.astype(np.float64) - x)
    even_lo = ((lo.view(np.uint32) >> 16) & 1) == 0
    want = np.where((dlo < dhi) | ((dlo == dhi) & even_lo), lo, hi)
    np.testing.assert_array_equal(y, want)
    assert np.isnan(widen_bf16(round_to_bf16(np.array([np.nan], np.float32))))[0]


def reference_state(q, k, v, scale):
    """float64 unnormalised state of rows q over keys k: m, l, O."""
    s = scale * (q.astype(np.float64) @ k.astype(np.float64).T)
    m = s.max(axis=1)
    p = np.exp(s - m[:, None])
    return m, p.sum(axis=1), p @ v.astype(np.float64)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_inputs_output_and_events_are_what_the_kernel_saw(cli, tmp_path, rng, dtype):
    b, h, hkv, s_q, s_kv, d, splits = 2, 4, 2, 24, 320, 32, 3  # GQA: two query heads per kv head
    (q, k, v), paths = write_inputs(tmp_path, rng, dtype, b, h, hkv, s_q, s_kv, d)
    trace_path = tmp_path / "run.trace.safetensors"
    done = run(cli, "capture", "--backend", "cpu", "--workers", "2", "--kernel", "splitk", "--dtype", dtype,
               "--batch", b, "--heads", h, "--heads-kv", hkv, "--seq-q", s_q, "--seq-kv", s_kv, "--head-dim", d, "--splits", splits,
               "--inputs", *paths, "-o", trace_path)
    t = tilescope.load(trace_path)
    a = t.attention
    assert (a["batch"], a["heads_q"], a["heads_kv"], a["seq_q"], a["seq_kv"], a["head_dim"], a["dtype"]) == \
        (b, h, hkv, s_q, s_kv, d, dtype)
    # Inputs: exactly what was given (bf16: rounded to nearest even, widened exactly).
    def stored(x):
        return x  # as given (bf16: the widened bits written)
    for i, (pb, ph) in enumerate(t.inputs.q_pairs):
        np.testing.assert_array_equal(t.inputs.q[i], stored(q[pb, ph]))
        np.testing.assert_array_equal(t.inputs.query(int(pb), int(ph)), stored(q[pb, ph]))
    assert len(t.inputs.kv_pairs) == b * hkv  # K and V once per kv head
    for i, (pb, ph) in enumerate(t.inputs.kv_pairs):
        np.testing.assert_array_equal(t.inputs.k[i], stored(k[pb, ph]))
        np.testing.assert_array_equal(t.inputs.v[i], stored(v[pb, ph]))
    for pb in range(b):
        for ph in range(h):
            np.testing.assert_array_equal(t.inputs.keys(pb, ph), stored(k[pb, ph // (h // hkv)]))
    assert t.inputs.q.dtype == (np.float16 if dtype == "fp16" else np.float32)
    if dtype == "bf16":
        assert not np.any(t.inputs.k.view(np.uint32) & 0xFFFF), "bf16 widened with low bits set"
        assert t.output.dtype == np.float32 and not np.any(t.output.view(np.uint32) & 0xFFFF)
    # Events per stage: what the CLI said it recorded.
    counts = events_line(done.stdout)
    assert {s.name: len(t.select(stage=s.name)) for s in t.stages} == counts
    assert t.dropped_events == 0 and t.requested_events == len(t.events)
    said = t.events.kv_head >= 0
    assert said.any()
    np.testing.assert_array_equal(t.events.kv_head[said], t.events.head[said] // (h // hkv))
    # Every partial state, recomputed in float64 from the inputs over its own key ranges.
    scale = 1 / np.sqrt(d)
    partial = t.select(stage="splitk.partial")
    checked = 0
    for i in range(len(partial)):
        e = partial[i]
        r0, n = int(e.q_begin[0]), int(e.rows[0])
        if not e.num_key_ranges[0] or not n:
            continue
        keys = np.concatenate([np.arange(lo, hi) for lo, hi in e.key_ranges[0][:int(e.num_key_ranges[0])]])
        if keys.size == 0:  # an empty split: nothing to recompute
            continue
        qi = t.inputs.query(int(e.batch[0]), int(e.head[0]))[r0:r0 + n]
        m, l_, o = reference_state(qi, t.inputs.keys(int(e.batch[0]), int(e.head[0]))[keys],
                                   t.inputs.values(int(e.batch[0]), int(e.head[0]))[keys], scale)
        np.testing.assert_allclose(e.m[0, :n], m, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(e.l[0, :n], l_, rtol=1e-4)
        np.testing.assert_allclose(e.o[0, :n], o, rtol=1e-3, atol=1e-3)
        checked += 1
    assert checked >= b * h * splits
    # The output: softmax attention of the stored inputs (to the dtype's precision).
    for pb in range(b):
        for ph in range(h):
            m, l_, o = reference_state(t.inputs.query(pb, ph), t.inputs.keys(pb, ph), t.inputs.values(pb, ph), scale)
            tol = {"bf16": 2e-2, "fp16": 4e-3, "fp32": 1e-4}[dtype]
            np.testing.assert_allclose(t.output[pb, ph], o / l_[:, None], atol=tol, rtol=tol)


def test_selection_matches_the_columns(capture):
    path = capture("--kernel", "splitk", "--heads", 3, "--batch", 2, "--seq-q", 20, "--seq-kv", 200,
                   "--splits", 4, "--seed", 11)
    t = tilescope.load(path)
    ev = t.events
    names = ev.stage_names()
    for stage in ("splitk.tile", "splitk.reduce"):
        for head in range(3):
            for rows in ((0, 5), (7, 8), 19, range(10, 20)):
                lo, hi = (rows, rows + 1) if isinstance(rows, int) else \
                    ((rows.start, rows.stop) if isinstance(rows, range) else rows)
                want = [i for i in range(len(ev)) if names[i] == stage and ev.head[i] == head
                        and ev.q_begin[i] < hi and ev.q_begin[i] + ev.rows[i] > lo]
                got = t.select(stage=stage, head=head, rows=rows)
                assert len(got) == len(want) > 0
                np.testing.assert_array_equal(got.o, ev.o[want])
                np.testing.assert_array_equal(got.time_ns, ev.time_ns[want])
    assert len(t.select(batch=[0, 1])) == len(ev)
    # O / l where unnormalised (the tile states), O as is where normalised (the final output).
    tile, final = t.select(stage="splitk.tile"), t.select(stage="final")
    assert not np.any(tile.convention & 1) and np.all(final.convention & 1)
    np.testing.assert_array_equal(tile.o_normalized(), (tile.o / tile.l[:, :, None]).astype(np.float32))
    np.testing.assert_array_equal(final.o_normalized(), final.o)
    assert len(t.select(stage=["splitk.tile", 2])) == len(t.select(stage="splitk.tile")) + len(t.select(stage=2))
    with pytest.raises(KeyError, match="no stage 'nope'"):
        t.select(stage="nope")
    # A slice of rows is a range; what is not an index is refused, not matched against nothing or
    # taken for one (was: head="1" selected no event, stage=True stage 1, a slice an unpacking error).
    assert len(t.select(rows=slice(10, 20))) == len(t.select(rows=range(10, 20))) > 0
    assert len(t.select(rows=slice(None, 5))) == len(t.select(rows=(0, 5)))
    for bad in (dict(head="1"), dict(batch=1.0), dict(stage=True), dict(rows="3"), dict(split=[0, "1"])):
        with pytest.raises(TypeError):
            t.select(**bad)
    # One event by its index, as a sequence indexes (was: an empty Events past either end).
    n = len(ev)
    assert len(ev[n - 1]) == len(ev[-n]) == 1 and ev[-n].o.tobytes() == ev[0].o.tobytes()
    for past in (n, -n - 1, 1000):
        with pytest.raises(IndexError, match=f"event {past} of {n} events"):
            ev[past]


def test_same_arrays_as_the_documented_numpy_loader(capture):
    """docs/trace-format.md's loader (tests/trace/trace_numpy_load.py) reads the same values."""
    path = capture("--kernel", "fa1", "--dtype", "bf16", "--heads", 2, "--seq-q", 40, "--seq-kv", 72,
                   "--causal", "--seed", 5)
    spec = importlib.util.spec_from_file_location("doc_loader", REPO / "tests/trace/trace_numpy_load.py")
    loader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    tensors, meta = loader.load_trace(str(path))
    t = tilescope.load(path)
    assert set(tensors) == set(t.tensors)
    for name, array in tensors.items():
        mine = t.tensors[name]
        if name in ("inputs.q", "inputs.k", "inputs.v", "output.o"):  # bf16: stored bits, values widened
            mine = widen_bf16(mine)
        np.testing.assert_array_equal(np.asarray(array), mine, err_msg=name)
    assert t.metadata["attention"]["causal"] == json.loads(meta["attention"])["causal"] == "bottom_right"
    assert t.raw_metadata == meta


def test_events_cover_what_export_grids_cover(cli, capture, tmp_path):
    """`tilescope export`'s per-stage grids (.npy, -1 where no event covered a cell) have traced
    cells exactly in the query rows the loader's events of that stage, batch and head cover."""
    path = capture("--kernel", "splitk", "--heads", 2, "--seq-q", 16, "--seq-kv", 256, "--splits", 4,
                   "--trace-queries", "3:11", "--seed", 9)
    out = tmp_path / "export"
    run(cli, "export", path, "-o", out)
    t = tilescope.load(path)
    checked = 0
    for stage in t.stages:
        for head in range(2):
            grid_file = out / f"{stage.name.replace('.', '_')}_b0_h{head}.npy"
            if not grid_file.exists():
                continue
            grid = np.load(grid_file)
            traced_rows = set(np.nonzero((grid >= 0).any(axis=1))[0])
            ev = t.select(stage=stage.name, batch=0, head=head)
            covered = {r for q0, n in zip(ev.q_begin, ev.rows) for r in range(q0, q0 + n)}
            assert traced_rows == covered, stage.name
            checked += 1
    assert checked >= 6


def test_to_torch_needs_torch(capture):
    t = tilescope.load(capture("--kernel", "fa1", "--seq-q", 8, "--seq-kv", 8, "--seed", 1))
    if importlib.util.find_spec("torch") is None:
        with pytest.raises(ImportError, match="needs PyTorch"):
            t.to_torch()
    else:
        tensors = t.to_torch()
        assert tensors["events.o"].shape == t.events.o.shape


def test_stage_flags_read_and_write_back(capture):
    """An fa2 trace's step stage declares p_rounded (the kernel rounds P to 16 bits before P V) and
    exp2_folded (its weights are exp2 with the scale and log2 e folded in); the reader keeps them,
    the others read False, and the writer writes them back."""
    from tilescope.writer import stage_table
    t = tilescope.load(capture("--kernel", "fa2", "--dtype", "bf16", "--seq-q", 70, "--seq-kv", 130,
                               "--seed", 3))
    assert {s.name: (s.p_rounded, s.exp2_folded) for s in t.stages} == {"fa2.step": (True, True),
                                                                        "final": (False, False)}
    assert t.metadata["stages"][0] == {"name": "fa2.step", "kind": "state", "pass": 0, "p_rounded": True,
                                       "exp2_folded": True}
    assert "p_rounded" not in t.metadata["stages"][1] and "exp2_folded" not in t.metadata["stages"][1]
    assert [(s.p_rounded, s.exp2_folded) for s in stage_table(t.stages)] == [(True, True), (False, False)]
    assert [(s.p_rounded, s.exp2_folded) for s in stage_table([tilescope.Stage("s", "state", 0, exp2_folded=True)])] \
        == [(False, True)]
    assert all(not s.p_rounded and not s.exp2_folded
               for s in tilescope.load(capture("--kernel", "fa1", "--seq-q", 8, "--seq-kv", 8, "--seed", 1)).stages)
