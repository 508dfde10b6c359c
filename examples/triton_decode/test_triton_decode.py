"""The Triton Split-K decode example, recorded with tilescope.record and the tilescope.triton
helpers, on fresh seeded random inputs: compiled on a GPU, or in Triton's interpreter
(TRITON_INTERPRET=1, CPU tensors). tests/python/gpu_triton.sh runs it both ways."""
import math
import zlib

import numpy as np
import pytest
import torch

import tilescope
from conftest import INTERPRETED
from tilescope.testing import assert_attention_matches

from decode_attention import STAGES, decode_attention

HEAD_DIM = 64


def inputs(device, seed, dtype=torch.float32, batch=3, heads_q=8, heads_kv=2, seq_kv=90, num_splits=4):
    """Q [batch, heads_q, head_dim], K, V [batch, seq_kv, heads_kv, head_dim] and kv_lens: one
    sequence shorter than the split count (so some splits hold no key), the rest random."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads_q, HEAD_DIM, generator=g).to(dtype)
    k = torch.randn(batch, seq_kv, heads_kv, HEAD_DIM, generator=g).to(dtype)
    v = torch.randn(batch, seq_kv, heads_kv, HEAD_DIM, generator=g).to(dtype)
    lens = torch.randint(num_splits + 1, seq_kv + 1, (batch,), generator=g, dtype=torch.int32)
    # A short sequence: fewer keys than splits (with one split, a single key).
    lens[int(torch.randint(0, batch, (1,), generator=g))] = int(torch.randint(1, max(num_splits, 2), (1,), generator=g))
    return q.to(device), k.to(device), v.to(device), lens.to(device)


def seed_of(request):
    return zlib.crc32(request.node.name.encode())


def traced(tmp_path, q, k, v, lens, planted=False, num_splits=4, **record_args):
    """Runs the kernel under tilescope.record; returns (the recording, output, base-2 LSE)."""
    path = tmp_path / f"decode{'_planted' if planted else ''}.trace.safetensors"
    with tilescope.record(q[:, None], k, v, stages=STAGES, path=path, kv_lens=lens.tolist(), kernel="triton_decode",
                          **record_args) as rec:
        out, lse = decode_attention(q, k, v, lens, num_splits=num_splits, planted=planted, trace=rec)
        rec.set_output(out[:, None], lse=lse[:, :, None], lse_base="base2")
    return rec, out, lse


def split_ranges(n, num_splits):
    size = -(-n // num_splits)
    return [(s, s * size, min(s * size + size, n)) for s in range(num_splits) if s * size < min(s * size + size, n)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("num_splits", [1, 4])
def test_fixed_kernel_is_clean(tmp_path, request, device, dtype, num_splits):
    q, k, v, lens = inputs(device, seed_of(request), dtype, num_splits=num_splits)
    rec, out, lse = traced(tmp_path, q, k, v, lens, num_splits=num_splits)
    if dtype == torch.bfloat16 and device.type == "cpu":
        # Triton's interpreter (3.9) converts float32 to bfloat16 by truncation, the GPU and torch
        # to nearest even: its bf16 output may be one bf16 step off. Every state must still be clean,
        # and whatever is wrong must start at the output: the merge's float32 O truncated.
        report = tilescope.diff(rec.path)
        assert report.stages["partial"]["verdict"] == "clean" and report.stages["merge"]["verdict"] == "clean"
        assert report.clean or report.first_divergence["stage"] == "output", str(report)
        # (Truncated in Triton 3.9; rounded to nearest even by an interpreter that does as the GPU.)
        merge = rec.load().select(stage="merge")
        o = np.ascontiguousarray(merge.o[:, 0])
        truncated = (o.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        nearest = torch.from_numpy(o).to(torch.bfloat16).float().numpy()
        got = out.float().numpy()[merge.batch, merge.head]
        assert np.array_equal(got, truncated) or np.array_equal(got, nearest)
        assert report.clean or not np.array_equal(got, nearest)
    else:
        assert assert_attention_matches(rec).clean
    # Every non-empty split of every query head, then one merge per (batch, head).
    heads_q = q.shape[1]
    expected = sum(len(split_ranges(int(n), num_splits)) for n in lens.tolist()) * heads_q + len(lens) * heads_q
    assert rec.num_events == expected and rec.dropped_events == 0
    # The output against float64 attention computed here, independently of tilescope.
    for b, n in enumerate(lens.tolist()):
        kk = k[b, :n].double().cpu().repeat_interleave(heads_q // k.shape[2], dim=1)
        vv = v[b, :n].double().cpu().repeat_interleave(heads_q // k.shape[2], dim=1)
        s = torch.einsum("hd,nhd->hn", q[b].double().cpu(), kk) / math.sqrt(HEAD_DIM)
        ref = torch.einsum("hn,nhd->hd", torch.softmax(s, -1), vv)
        tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
        torch.testing.assert_close(out[b].double().cpu(), ref, atol=tol, rtol=tol)
        torch.testing.assert_close(lse[b].double().cpu() * math.log(2), torch.logsumexp(s, -1), atol=1e-5, rtol=1e-5)


def test_events_hold_what_the_kernel_computed(tmp_path, request, device):
    """The helpers' headers and payloads, read back: keys, splits, kv heads, conventions, and the
    merge's state equal to what the kernel returned."""
    q, k, v, lens = inputs(device, seed_of(request))
    rec, out, lse = traced(tmp_path, q, k, v, lens)
    t = rec.load()
    assert t.metadata["backend"] == device.type.replace("cuda", "gpu")
    group = q.shape[1] // k.shape[2]
    part = t.select(stage="partial")
    for i in range(len(part.rows)):
        b, h, s = int(part.batch[i]), int(part.head[i]), int(part.split[i])
        assert (s, *part.key_ranges[i][0]) in split_ranges(int(lens[b]), 4)
        assert part.kv_head[i] == h // group and part.rows[i] == 1 and part.q_begin[i] == 0
        # The program's linear index in its launch (grid batch x heads_kv x splits, x fastest).
        assert part.block[i] == b + q.shape[0] * (h // group + k.shape[2] * s)
    if device.type == "cpu":  # the interpreter has no SM id or global timer
        assert (t.events.where == -1).all() and (t.events.time_ns == 0).all()
    else:
        props = torch.cuda.get_device_properties(device)
        assert ((t.events.where >= 0) & (t.events.where < props.multi_processor_count)).all()
        span = int(t.events.time_ns.max()) - int(t.events.time_ns.min())
        assert (t.events.time_ns > 0).all() and span < 60 * 10**9, span  # one recording: well under a minute
    assert set(np.unique(part.convention).tolist()) == {1 | 2}  # normalized, base-2 LSE (tilescope/event.h)
    merge = t.select(stage="merge")
    assert len(merge.rows) == q.shape[0] * q.shape[1]
    for i in range(len(merge.rows)):
        b, h = int(merge.batch[i]), int(merge.head[i])
        assert [tuple(r) for r in merge.key_ranges[i]] == [(0, int(lens[b]))] and merge.split[i] == -1
        np.testing.assert_array_equal(merge.o[i, 0], out[b, h].float().cpu().numpy())
        assert merge.m[i, 0] == lse[b, h].item()


def test_untraced_launch_gives_the_same_output(tmp_path, request, device):
    q, k, v, lens = inputs(device, seed_of(request))
    _, out_traced, lse_traced = traced(tmp_path, q, k, v, lens)
    out, lse = decode_attention(q, k, v, lens)
    assert torch.equal(out, out_traced) and torch.equal(lse, lse_traced)


def test_planted_bug_is_located_in_the_merge(tmp_path, request, device):
    q, k, v, lens = inputs(device, seed_of(request))
    rec, _, _ = traced(tmp_path, q, k, v, lens, planted=True)
    report = tilescope.diff(rec.path)
    assert not report.clean
    assert report.first_divergence["stage"] == "merge"
    assert report.origin_stage == "merge"
    stages = report.stages
    assert stages["partial"]["verdict"] == "clean" and stages["partial"]["events"]["compared"] > 0
    assert stages["merge"]["verdict"] == "divergence" and stages["merge"]["events"]["failing"] > 0
    with pytest.raises(AssertionError) as failure:
        assert_attention_matches(rec)
    assert str(failure.value).endswith("\n" + str(report))
    print("\nThe planted bug's assertion message:\n" + str(failure.value))


def test_filter_and_full_buffer(tmp_path, request, device):
    q, k, v, lens = inputs(device, seed_of(request))
    keep = tilescope.TraceFilter(batch=(1, 3), head=(2, 6), stages=["merge"])
    rec, _, _ = traced(tmp_path, q, k, v, lens, filter=keep)
    t = rec.load()
    assert rec.num_events == 2 * 4 and rec.dropped_events == 0  # merges of batches 1-2, heads 2-5
    ev = t.events
    assert set(ev.stage.tolist()) == {1}
    assert set(ev.batch.tolist()) == {1, 2} and set(ev.head.tolist()) == {2, 3, 4, 5}
    assert_attention_matches(rec)
    small, _, _ = traced(tmp_path, q, k, v, lens, capacity=10)
    assert small.num_events == 10 and small.dropped_events > 0
    heads_q = q.shape[1]
    total = sum(len(split_ranges(int(n), 4)) for n in lens.tolist()) * heads_q + len(lens) * heads_q
    assert small.num_events + small.dropped_events == total


def test_kernels_without_the_helpers_compute_the_same(request, device):
    """untraced.py (what bench_helpers.py compares against) removes the helpers and nothing else."""
    from untraced import load_without_tracing
    import decode_attention

    plain = load_without_tracing(decode_attention.__file__, "decode_attention_untraced")
    import inspect
    source = inspect.getsource(plain)
    assert "TS_BUF" not in source and "tst.record" not in source and "PLANTED" in source
    q, k, v, lens = inputs(device, seed_of(request))
    out, lse = decode_attention.decode_attention(q, k, v, lens)
    out_plain, lse_plain = plain.decode_attention(q, k, v, lens)
    assert torch.equal(out, out_plain) and torch.equal(lse, lse_plain)


@pytest.mark.skipif(INTERPRETED, reason="compiles for a GPU target (not under TRITON_INTERPRET)")
@pytest.mark.parametrize("arch", [80, 90])
def test_helpers_compile_away(arch):
    """Compiled ahead of time (no GPU needed), the kernels launched with TS=False are the kernels
    without the helpers, instruction for instruction; with TS=True they compile too."""
    from compile_check import compare

    for name, k in compare(arch).items():
        assert k["ptx_identical_ts_false_vs_untraced"] and k["sass_identical_ts_false_vs_untraced"], (name, k)
        assert k["ptx_lines_ts_true"] > k["ptx_lines"], (name, k)
