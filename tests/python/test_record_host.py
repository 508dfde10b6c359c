"""The host side of tilescope.record without a GPU: the device buffer's layout against a C++
compiler's, and collect + write_trace on a buffer laid out as a kernel leaves it (slots in the
atomic counter's order, a gap, dropped events) re-making a CLI trace that diffs the same."""
import json
import os
import shutil
import subprocess

from dataclasses import replace

import numpy as np
import pytest

import tilescope
from tilescope._layout import EVENT_HEADER, TRACE_VIEW_FIELDS, TRACE_VIEW_SIZE, BufferLayout, pack_trace_view
from tilescope.writer import HostInputs, RecorderError, TraceFilter, collect, stage_table, write_trace


CXX_PROGRAM = r"""
#include <cstddef>
#include <cstdio>
#include "tilescope/event.h"
#include "tilescope/trace_view.h"
using tilescope::EventHeader; using tilescope::TraceView;
#define F(T, f) std::printf(#f " %zu\n", offsetof(T, f));
int main() {
  std::printf("sizeof_header %zu\nsizeof_view %zu\n", sizeof(EventHeader), sizeof(TraceView));
  F(EventHeader, stage) F(EventHeader, convention) F(EventHeader, batch) F(EventHeader, head)
  F(EventHeader, kv_head) F(EventHeader, q_begin) F(EventHeader, rows) F(EventHeader, split)
  F(EventHeader, step) F(EventHeader, block) F(EventHeader, where) F(EventHeader, num_key_ranges)
  F(EventHeader, keys) F(EventHeader, time_ns)
  F(TraceView, headers) F(TraceView, m) F(TraceView, l) F(TraceView, o) F(TraceView, capacity)
  F(TraceView, next_slot) F(TraceView, dropped) F(TraceView, slot_base) F(TraceView, num_stages)
  F(TraceView, events_per_block) F(TraceView, max_rows) F(TraceView, head_dim)
  F(TraceView, filter.batch_begin) F(TraceView, filter.batch_end) F(TraceView, filter.head_begin)
  F(TraceView, filter.head_end) F(TraceView, filter.query_begin) F(TraceView, filter.query_end)
  F(TraceView, filter.stage_mask)
}
"""


def test_layouts_are_the_headers(tmp_path):
    """Every offset Python packs is the C++ compiler's, on the headers the package ships."""
    cxx = os.environ.get("TILESCOPE_TEST_CXX") or shutil.which("c++")
    if not cxx:
        pytest.skip("no C++ compiler (tests/python/run.sh passes CMake's)")
    src = tmp_path / "layout.cpp"
    src.write_text(CXX_PROGRAM)
    exe = tmp_path / "layout"
    subprocess.run([cxx, "-std=c++20", "-I", tilescope.get_include(), str(src), "-o", str(exe)], check=True)
    got = dict(line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                                       check=True).stdout.splitlines())
    assert int(got["sizeof_header"]) == EVENT_HEADER.itemsize
    assert int(got["sizeof_view"]) == TRACE_VIEW_SIZE
    for name in EVENT_HEADER.names:
        assert int(got[name if name != "keys" else "keys"]) == EVENT_HEADER.fields[name][1], name
    for name, (offset, _) in TRACE_VIEW_FIELDS.items():
        assert int(got[name]) == offset, name
    packed = pack_trace_view({"capacity": 7, "filter.stage_mask": 2**64 - 1, "max_rows": 3})
    assert packed[32:40] == (7).to_bytes(8, "little") and packed[104:112] == b"\xff" * 8


def device_buffer(t, rng, capacity, dropped):
    """The bytes a kernel would leave: the trace's events at random slots (atomic order), the
    rest 0xFF (never written), the counters."""
    n = len(t.events)
    lay = BufferLayout(capacity, t.max_rows, t.head_dim)
    buf = np.full(lay.total, 0xFF, dtype=np.uint8)
    slots = rng.permutation(capacity - 1)[:n]  # the last slot stays unwritten: trimmed by collect
    headers = np.zeros(n, dtype=EVENT_HEADER)
    e = t.events
    for name in ("stage", "convention", "batch", "head", "kv_head", "q_begin", "rows", "split", "step", "block",
                 "where", "num_key_ranges"):
        headers[name] = getattr(e, name)
    r = e.key_ranges.shape[1]
    headers["keys"][:, :r] = e.key_ranges
    headers["time_ns"] = e.time_ns.view(np.uint64)
    buf[:capacity * 120].view(EVENT_HEADER)[slots] = headers
    buf[lay.m_offset:lay.m_offset + capacity * t.max_rows * 4].view("<f4").reshape(capacity, -1)[slots] = e.m
    buf[lay.l_offset:lay.l_offset + capacity * t.max_rows * 4].view("<f4").reshape(capacity, -1)[slots] = e.l
    o = buf[lay.o_offset:lay.o_offset + capacity * t.max_rows * t.head_dim * 4].view("<f4")
    o.reshape(capacity, t.max_rows, t.head_dim)[slots] = e.o
    buf[lay.counters_offset:].view("<u8")[:] = [n + dropped, dropped]
    return buf, lay


def bhsd_inputs(t):
    a = t.attention
    q = np.zeros((a["batch"], a["heads_q"], a["seq_q"], a["head_dim"]), np.float32)
    k = np.zeros((a["batch"], a["heads_kv"], a["seq_kv"], a["head_dim"]), np.float32)
    v = np.zeros_like(k)
    for i, (b, h) in enumerate(t.inputs.q_pairs):
        q[b, h] = t.inputs.q[i]
    for i, (b, h) in enumerate(t.inputs.kv_pairs):
        k[b, h], v[b, h] = t.inputs.k[i], t.inputs.v[i]
    return q, k, v


@pytest.mark.parametrize("fault", ["none", "double_count_l"])
def test_collect_and_write_remake_the_trace(cli, capture, tmp_path, rng, fault):
    path = capture("--kernel", "splitk", "--fault", fault, "--heads", 2, "--batch", 2, "--seq-q", 16,
                   "--seq-kv", 256, "--splits", 4, "--seed", 31)
    t = tilescope.load(path)
    stages = stage_table([(s.name, s.kind, s.pass_) for s in t.stages])
    buf, lay = device_buffer(t, rng, capacity=len(t.events) + 9, dropped=0)
    headers, m, l_, o, next_slot, dropped = collect(buf, lay)
    assert next_slot == len(t.events) and dropped == 0 and len(headers) <= lay.capacity - 1
    q, k, v = bhsd_inputs(t)
    out = tmp_path / "remade.trace.safetensors"
    n = write_trace(str(out), t.attention, stages, headers, m, l_, o, t.max_rows, dropped,
                    HostInputs(q, k, v, "fp32"), TraceFilter(), (t.output.transpose(0, 1, 2, 3), "fp32"), None,
                    {"kernel": "remade"})
    assert n == len(t.events)
    r = tilescope.load(out)
    # The kernel's own order: the same events as the CLI's planned trace, in the same order.
    for name in ("stage", "batch", "head", "q_begin", "rows", "split", "step", "block", "key_ranges", "m", "l", "o"):
        np.testing.assert_array_equal(getattr(r.events, name), getattr(t.events, name), err_msg=name)
    np.testing.assert_array_equal(r.inputs.q, t.inputs.q)
    np.testing.assert_array_equal(r.output, t.output)
    assert r.metadata["kernel"] == "remade" and r.metadata["tool_version"].startswith("tilescope python")
    # A structured metadata value is stored as JSON, which the reader parses back (was: its repr).
    structured = tmp_path / "structured.trace.safetensors"
    write_trace(str(structured), t.attention, stages, headers, m, l_, o, t.max_rows, dropped,
                HostInputs(q, k, v, "fp32"), TraceFilter(), None, None, {"run": {"lr": 0.5, "tags": ["a"]}})
    assert tilescope.load(structured).metadata["run"] == {"lr": 0.5, "tags": ["a"]}
    with pytest.raises(RecorderError, match="metadata 'run'"):
        write_trace(str(structured), t.attention, stages, headers, m, l_, o, t.max_rows, dropped,
                    HostInputs(q, k, v, "fp32"), TraceFilter(), None, None, {"run": {"f": object()}})
    mine, theirs = tilescope.diff(out), tilescope.diff(path)
    assert mine.clean == theirs.clean == (fault == "none")
    assert mine.symptom_kind == theirs.symptom_kind
    assert mine.data["stages"]["splitk.reduce"]["verdict"] == theirs.data["stages"]["splitk.reduce"]["verdict"]


def test_write_refuses_what_cannot_be_stored(capture, tmp_path, rng):
    t = tilescope.load(capture("--kernel", "fa1", "--heads", 2, "--seq-q", 32, "--seq-kv", 64, "--seed", 2))
    stages = stage_table([(s.name, s.kind, s.pass_) for s in t.stages])
    q, k, v = bhsd_inputs(t)
    buf, lay = device_buffer(t, rng, capacity=len(t.events) + 1, dropped=3)
    headers, m, l_, o, _, dropped = collect(buf, lay)
    assert dropped == 3
    out = tmp_path / "x.trace.safetensors"
    write_trace(str(out), t.attention, stages, headers, m, l_, o, t.max_rows, dropped, HostInputs(q, k, v, "fp32"),
                TraceFilter(head=(1, None)))
    r = tilescope.load(out)
    assert r.dropped_events == 3 and r.requested_events == len(t.events) + 3
    assert r.inputs.q_pairs.tolist() == [[0, 1]]
    # What to do about the dropped events, in the recorder's terms (was: capture's --capacity).
    whole = tmp_path / "whole.trace.safetensors"
    write_trace(str(whole), t.attention, stages, headers, m, l_, o, t.max_rows, dropped, HostInputs(q, k, v, "fp32"),
                TraceFilter())
    with pytest.raises(tilescope.CliError, match=r"tilescope\.record's capacity= and filter=") as info:
        tilescope.diff(whole)
    assert "--capacity" not in str(info.value)
    written = np.nonzero(headers["stage"] != -1)[0]
    bad = headers.copy()
    bad["rows"][written[0]] = t.max_rows + 1
    with pytest.raises(RecorderError, match=r"rows = .*start the recording with max_rows >= "):
        write_trace(str(out), t.attention, stages, bad, m, l_, o, t.max_rows, 0, HostInputs(q, k, v, "fp32"),
                    TraceFilter())
    bad = headers.copy()
    bad["stage"][written[0]] = 7
    with pytest.raises(RecorderError, match="declare every stage"):
        write_trace(str(out), t.attention, stages, bad, m, l_, o, t.max_rows, 0, HostInputs(q, k, v, "fp32"),
                    TraceFilter())
    with pytest.raises(RecorderError, match="Q has shape"):
        write_trace(str(out), t.attention, stages, headers, m, l_, o, t.max_rows, 0, HostInputs(q[:, :1], k, v, "fp32"),
                    TraceFilter())
    with pytest.raises(RecorderError, match="kind 'reduce'"):
        stage_table([("a", "reduce")])


def test_the_attention_and_stages_a_recording_declares_follow_the_readers_rules(capture, tmp_path, rng):
    """What the readers refuse is refused when the recording is declared, before a kernel runs (was:
    a negative scale or softcap, a window past int32, NaN ALiBi slopes and a stage name holding
    DEL were written, and the CLI then refused the trace; a float window, length or batch was
    silently truncated)."""
    from tilescope.writer import Attention
    base = dict(batch=2, heads_q=4, seq_q=8, seq_kv=32, head_dim=16, heads_kv=2)
    assert Attention(**base).to_json("bf16")["heads_kv"] == 2
    assert Attention(**base, window_left=np.int64(3), alibi_slopes=[0.5] * 4).to_json("fp16")["window_left"] == 3
    for change, pattern in (({"scale": -1.0}, "scale = -1.0 must be a finite number >= 0"),
                            ({"softcap": -0.5}, "softcap"), ({"scale": None}, "scale = None"),
                            ({"window_left": 2**40}, "window_left"), ({"window_right": 3.7}, "window_right = 3.7"),
                            ({"q_lens": [15.5, 2]}, "q_lens"), ({"batch": 1.9}, "batch = 1.9"),
                            ({"heads_kv": 3}, "heads_kv"), ({"head_dim": 4096}, "head_dim"),
                            ({"alibi_slopes": [float("nan"), 0.5, 0.5, 0.5]}, "alibi_slopes"),
                            ({"causal": "diagonal"}, "causal")):
        with pytest.raises(RecorderError, match=pattern):
            Attention(**{**base, **change}).to_json("fp32")
    with pytest.raises(RecorderError, match="dtype 'fp64'"):
        Attention(**base).to_json("fp64")
    for name in ("a\x7f", "a\x01", "\ud800", ""):
        with pytest.raises(RecorderError, match="no control characters"):
            stage_table([(name, "state")])
    # The filter: indices that fit the kernel's int32 view, a stage name given alone.
    stages = stage_table([("a", "state"), ("reduce", "merge")])
    with pytest.raises(RecorderError, match=r"filter head = \(0, 1099511627776\)"):
        TraceFilter(head=(0, 2**40)).view_fields(stages)
    with pytest.raises(RecorderError, match="filter batch"):
        TraceFilter(batch=(-1, None)).view_fields(stages)
    assert TraceFilter(stages="reduce").view_fields(stages)["filter.stage_mask"] == 2
    assert json.loads(TraceFilter(stages="reduce").to_json(stages))["stages"] == ["reduce"]


def test_a_report_says_nothing_of_an_lse_that_was_not_recorded(capture, tmp_path, rng):
    """A kernel's output recorded without its LSE (convention NO_MAX, no output.lse): the measured
    quantities name O alone (was: "LSE right; O wrong", of an LSE never compared), and the two
    forms of the fragment mix-up, which differ only in the LSE, are not told apart."""
    from tilescope.trace import NO_MAX, NORMALIZED
    t = tilescope.load(capture("--kernel", "fa2", "--fault", "fragment_rows", "--heads", 2, "--seq-q", 64,
                               "--seq-kv", 128, "--head-dim", 64, "--dtype", "fp16", "--seed", 3))
    assert "LSE right; O wrong" in str(tilescope.diff(t))  # recorded with its LSE
    buf, lay = device_buffer(t, rng, capacity=len(t.events) + 1, dropped=0)
    headers, m, l_, o, _, dropped = collect(buf, lay)
    normalized = (headers["convention"] & NORMALIZED) != 0
    assert normalized.any()
    headers["convention"][normalized] |= NO_MAX
    q, k, v = bhsd_inputs(t)
    out = tmp_path / "no_lse.trace.safetensors"
    write_trace(str(out), t.attention, stage_table(list(t.stages)), headers, m, l_, o, t.max_rows, dropped,
                HostInputs(q, k, v, "fp16"), TraceFilter(), (t.output, "fp16"), None)
    report = tilescope.diff(out)
    measured = [line for line in str(report).splitlines() if line.startswith("measured:")]
    assert not report.clean and measured
    assert "O wrong" in measured[0] and "LSE" not in measured[0] and " m " not in measured[0], measured
    assert "cannot tell them apart" in report.symptom


def test_record_needs_torch_or_cuda_tensors():
    try:
        import torch
    except ImportError:
        with pytest.raises(ImportError, match="needs PyTorch"):
            tilescope.record(None, None, None, stages=[("s", "state")], path="x")
        return
    q = torch.zeros(1, 8, 1, 16)
    with pytest.raises(RecorderError, match="must be CUDA tensors"):
        tilescope.record(q, q, q, stages=[("s", "state")], path="x")


KERNEL_STAGES = [("partial", "state"), ("reduce", "merge")]  # examples/torch_extension's stage table


def run_record_host(tmp_path, rng, variant, causal, capacity=1 << 14):
    """tilescope.record's host side around examples/torch_extension's kernels, run on the CPU path:
    the package lays out, clears and describes the buffer; the kernel writes it; the package
    collects it and writes the trace."""
    exe = os.environ.get(f"TILESCOPE_TEST_RECORD_HOST_{variant.upper()}")
    if not exe:
        pytest.skip("the CPU-path kernels are built by CMake (CTest passes them)")
    from tilescope._layout import BufferLayout
    from tilescope.writer import Attention, write_recording
    b, h, hkv, sq, skv, d = 2, 4, 2, 40, 200, 32
    q = rng.standard_normal((b, h, sq, d), dtype=np.float32)
    k = rng.standard_normal((b, hkv, skv, d), dtype=np.float32)
    v = rng.standard_normal((b, hkv, skv, d), dtype=np.float32)
    stages = stage_table(KERNEL_STAGES)
    lay = BufferLayout(capacity, 1, d)
    fields = lay.view_fields(0, len(stages), 0)  # pointers as offsets: the program moves them
    keep = TraceFilter()
    fields.update(keep.view_fields(stages))
    init = np.empty(lay.total, dtype=np.uint8)
    for begin, end, byte in lay.clear_ranges():
        init[begin:end] = byte
    (tmp_path / "view.bin").write_bytes(pack_trace_view(fields))
    init.tofile(tmp_path / "init.bin")
    np.concatenate([q.ravel(), k.ravel(), v.ravel()]).tofile(tmp_path / "qkv.bin")
    args = [exe, tmp_path / "view.bin", tmp_path / "init.bin", tmp_path / "qkv.bin", b, h, hkv, sq, skv, d,
            int(causal), tmp_path / "buffer.bin", tmp_path / "o.bin", tmp_path / "lse.bin"]
    subprocess.run([str(a) for a in args], check=True, capture_output=True)
    buffer = np.fromfile(tmp_path / "buffer.bin", dtype=np.uint8)
    o = np.fromfile(tmp_path / "o.bin", dtype=np.float32).reshape(b, h, sq, d)
    lse = np.fromfile(tmp_path / "lse.bin", dtype=np.float32).reshape(b, h, sq)
    attention = Attention(batch=b, heads_q=h, heads_kv=hkv, seq_q=sq, seq_kv=skv, head_dim=d,
                          causal="bottom_right" if causal else "none").to_json("fp32")
    path = tmp_path / f"{variant}.trace.safetensors"
    n, dropped = write_recording(str(path), buffer, lay, attention, stages, HostInputs(q, k, v, "fp32"), keep,
                                 (o, "fp32"), lse, {"kernel": "splitk_attention", "backend": "cpu"})
    return path, n, dropped, (q, k, v, o, lse)


@pytest.mark.parametrize("causal", [False, True])
def test_record_host_side_with_the_example_kernel(tmp_path, rng, causal):
    path, n, dropped, (q, k, v, o, lse) = run_record_host(tmp_path, rng, "fixed", causal)
    kv_tiles = -(-200 // 32)
    assert dropped == 0 and n == 2 * 2 * 4 * 40 * kv_tiles
    t = tilescope.load(path)
    assert len(t.select(stage="partial")) == len(t.select(stage="reduce")) == 2 * 4 * 40 * kv_tiles
    assert t.inputs.kv_pairs.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]  # GQA: K, V once per kv head
    np.testing.assert_array_equal(t.inputs.keys(1, 3), k[1, 1])
    np.testing.assert_array_equal(t.output, o)
    np.testing.assert_array_equal(t.output_lse, lse)
    assert set(t.select(stage="partial").kv_head.tolist()) == {0, 1}
    # The kernel's own order: pass, block, step.
    passes = np.array([s.pass_ for s in t.stages])[t.events.stage]
    order = np.lexsort((t.events.step, t.events.block, passes))
    np.testing.assert_array_equal(order[:len(order)], np.arange(len(order)))
    report = tilescope.diff(path)
    assert report.clean, report.text


def test_record_host_side_locates_the_planted_bug(tmp_path, rng):
    path, *_ = run_record_host(tmp_path, rng, "planted", causal=False)
    report = tilescope.diff(path)
    assert not report.clean
    assert report.symptom_kind == "reduce_scaled_by_l" and report.origin_stage == "reduce"
    assert report.stages["partial"]["verdict"] == "clean"


def test_record_host_side_counts_what_a_full_buffer_drops(tmp_path, rng):
    path, n, dropped, _ = run_record_host(tmp_path, rng, "fixed", causal=False, capacity=1000)
    kv_tiles = -(-200 // 32)
    assert n == 1000 and dropped == 2 * 2 * 4 * 40 * kv_tiles - 1000
    t = tilescope.load(path)
    assert t.dropped_events == dropped and t.requested_events == n + dropped


def test_stage_table_declares_p_rounded(capture, tmp_path, rng):
    """A kernel that rounds P to the input dtype before P V (FA-2 on tensor cores; a Triton kernel's
    tl.dot(p.to(v.dtype), v)) declares it in its stage table: as a 4th tuple element or a
    tilescope.Stage. The CLI's fa2 bf16 trace, written back with the flag, diffs clean as the
    CLI's own; written without it, its steps fail (the float32 yardstick does not round P)."""
    path = capture("--kernel", "fa2", "--dtype", "bf16", "--heads", 2, "--seq-q", 70, "--seq-kv", 130,
                   "--seed", int(rng.integers(1 << 30)))
    t = tilescope.load(path)
    declared = [(s.name, s.kind, s.pass_, s.p_rounded) for s in t.stages]
    assert [d[3] for d in declared] == [True, False]
    # (fa2.step also declares exp2_folded, which a tuple does not carry: compared without it.)
    assert stage_table(declared) == stage_table([tilescope.Stage(s.name, s.kind, p_rounded=s.p_rounded)
                                                 for s in t.stages]) == [replace(s, exp2_folded=False) for s in t.stages]
    def bf16_bits(a):  # the reader widens bf16 exactly; the writer takes its bit patterns
        return (np.ascontiguousarray(a, np.float32).view(np.uint32) >> 16).astype(np.uint16)

    q, k, v = (bf16_bits(a) for a in bhsd_inputs(t))
    buf, lay = device_buffer(t, rng, capacity=len(t.events) + 3, dropped=0)
    headers, m, l_, o, _, dropped = collect(buf, lay)
    reports = {}
    for flagged in (True, False):
        stages = stage_table([d if flagged else d[:3] for d in declared])
        out = tmp_path / f"remade_{flagged}.trace.safetensors"
        write_trace(str(out), t.attention, stages, headers, m, l_, o, t.max_rows, dropped,
                    HostInputs(q, k, v, "bf16"), TraceFilter(), (bf16_bits(t.output), "bf16"), None,
                    {"kernel": "remade"})
        assert tilescope.load(out).stages[0].p_rounded is flagged
        reports[flagged] = tilescope.diff(out)
    assert tilescope.diff(path).clean and reports[True].clean, str(reports[True])
    assert not reports[False].clean and reports[False].data["stages"]["fa2.step"]["verdict"] != "pass"
    with pytest.raises(RecorderError, match=r"\(name, kind\[, pass\[, p_rounded\]\]\)"):
        stage_table([("a", "state", 0, True, "extra")])
    with pytest.raises(RecorderError, match="p_rounded 'yes' must be True or False"):
        stage_table([("a", "state", 0, "yes")])
