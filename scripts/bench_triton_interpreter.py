#!/usr/bin/env python3
"""tilescope's CPU backend beside Triton's CPU interpreter (docs/perf.md's target: "FA-1 forward,
one head, S=1024, D=64, fp32, several times faster than Triton's CPU interpreter runs a textbook
flash-attention kernel of the same size").

The Triton kernel below is a textbook flash-attention forward (one program per 64-row query
tile, a loop over 64-key tiles with an online softmax), run with TRITON_INTERPRET=1 on CPU
tensors, so that Triton's interpreter executes it on the CPU. It is checked against a float64
reference before it is timed. tilescope's FA-1 kernel runs on the CPU through the SIMT runtime
(`tilescope capture --backend cpu --no-trace`; the time is the kernels' own, as the CLI
reports it).

Needs PyTorch and Triton (the GPU machine has both; this development machine has neither).

    python3 scripts/bench_triton_interpreter.py [--tilescope PATH] [--seq 1024] [--head-dim 64] [--runs 3]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: run kernels on the CPU

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def textbook_flash_forward(q_ptr, k_ptr, v_ptr, o_ptr, scale, SEQ: tl.constexpr,
                           HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    tile = tl.program_id(0)
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, HEAD_DIM)
    row_ok = rows < SEQ
    q = tl.load(q_ptr + rows[:, None] * HEAD_DIM + cols[None, :], mask=row_ok[:, None], other=0.0)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start in range(0, SEQ, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        key_ok = keys < SEQ
        k = tl.load(k_ptr + keys[:, None] * HEAD_DIM + cols[None, :], mask=key_ok[:, None], other=0.0)
        v = tl.load(v_ptr + keys[:, None] * HEAD_DIM + cols[None, :], mask=key_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(key_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        l = l * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m = m_new
    out = acc / l[:, None]
    tl.store(o_ptr + rows[:, None] * HEAD_DIM + cols[None, :], out, mask=row_ok[:, None])


def run_triton(q, k, v, block=64):
    seq, d = q.shape
    o = torch.full_like(q, float("nan"))  # poisoned: an unwritten element shows
    textbook_flash_forward[(triton.cdiv(seq, block),)](q, k, v, o, 1.0 / d ** 0.5, SEQ=seq,
                                                        HEAD_DIM=d, BLOCK_M=block, BLOCK_N=block)
    return o


def reference(q, k, v):
    q, k, v = q.double(), k.double(), v.double()
    return torch.softmax(q @ k.T / q.shape[1] ** 0.5, dim=-1) @ v


def time_runs(fn, runs):
    fn()  # warm-up (the interpreter's first call also builds the kernel)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), times


def run_tilescope(exe, seq, d, workers, runs):
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs + 1):
            out = subprocess.run([exe, "capture", "--kernel", "fa1", "--backend", "cpu", "--seq-q", str(seq),
                                  "--seq-kv", str(seq), "--head-dim", str(d), "--dtype", "fp32", "--seed", "1",
                                  "--no-trace", "--workers", str(workers), "-o", os.path.join(tmp, "x.trace.safetensors")],
                                 capture_output=True, text=True, check=True)
            found = re.search(r"kernels ([0-9.]+) ms", out.stdout + out.stderr)
            if not found:
                sys.exit("bench_triton_interpreter: no kernel time in tilescope's output:\n" + out.stdout + out.stderr)
            times.append(float(found.group(1)))
    return statistics.median(times[1:]), times[1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tilescope", help="the tilescope CLI, to time its CPU backend on the same machine")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", default="1,2,all", help="tilescope CPU worker counts to time (all = every core)")
    a = ap.parse_args()

    torch.manual_seed(2024)
    q, k, v = (torch.randn(a.seq, a.head_dim, dtype=torch.float32) for _ in range(3))
    o = run_triton(q, k, v)
    err = (o.double() - reference(q, k, v)).abs().max().item()
    if not err < 1e-4:
        sys.exit(f"bench_triton_interpreter: the Triton kernel is wrong (max |O - ref64| = {err}); not timed")
    ms, all_ms = time_runs(lambda: run_triton(q, k, v), a.runs)
    print(f"machine: {os.cpu_count()} cores; torch {torch.__version__}, triton {triton.__version__}")
    print(f"FA-1 forward, 1 head, S={a.seq}, D={a.head_dim}, fp32 (median of {a.runs} runs after a warm-up)")
    print(f"{'implementation':48s} {'ms':>10s}   runs (ms)")
    print(f"{'Triton interpreter (TRITON_INTERPRET=1), textbook':48s} {ms:10.1f}   "
          + " ".join(f"{t:.1f}" for t in all_ms) + f"   max|O-ref64| {err:.2e}")
    if a.tilescope:
        for w in a.workers.split(","):
            workers = 0 if w == "all" else int(w)
            t, all_t = run_tilescope(a.tilescope, a.seq, a.head_dim, workers, a.runs)
            label = f"tilescope CPU backend, {w} worker{'s' if w != '1' else ''}"
            print(f"{label:48s} {t:10.1f}   " + " ".join(f"{x:.1f}" for x in all_t) + f"   {ms / t:.1f}x faster")


if __name__ == "__main__":
    main()
