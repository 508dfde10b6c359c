#!/usr/bin/env python3
"""PyTorch SDPA on the shapes of tests/kernels/bench_kernels_gpu, beside tilescope's kernels.

Times torch.nn.functional.scaled_dot_product_attention with each backend PyTorch offers
(flash, efficient, cudnn, math) and keeps the fastest, on:
  * Split-K decode: B=8, H=32, Sq=1, Skv=32768, D=128, bf16
  * prefill:        B=4, H=16, S=2048, D=64, bf16 (not causal): FA-1 and FA-2 (tensor cores), and
                    Split-K 2 (FA-2's partial) and Split-K with 4 kv splits
reporting time (CUDA events, mean of 20 runs after 3 warm-up runs; with --rounds N the median of
N such means, as bench_kernels_gpu --rounds N, which --ours passes on), GB/s (Q, K, V read + O
written) and TFLOP/s (4 * B * H * Sq * Skv * D), the same formulas as bench_kernels_gpu.

  python3 scripts/bench_sdpa.py                                   # SDPA alone
  python3 scripts/bench_sdpa.py --ours build/release/tests/kernels/bench_kernels_gpu [--rounds 7]
                                     # runs ours too, then SDPA's fastest backend of each shape
                                     # again, and prints one table with the ratios to SDPA
                                     # timed before ours and after it
  python3 scripts/bench_sdpa.py --ours BENCH --interleave N [--only splitk_decode] [--rounds R]
                                     # ours and SDPA's fastest backend timed in turn, N pairs
                                     # (each R rounds), a fresh process of ours each time: the
                                     # ratio of each pair, and their median, min and max
  python3 scripts/bench_sdpa.py --check DIR   # after `bench_kernels_gpu --dump DIR`: our
                                     # outputs against SDPA's and a float64 reference
Exit status: 0, or 1 when --check finds an output outside the correctness rule.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

SHAPES = {
    "splitk_decode": dict(b=8, h=32, sq=1, skv=32768, d=128, dtype=torch.bfloat16),
    "fa1_prefill": dict(b=4, h=16, sq=2048, skv=2048, d=64, dtype=torch.bfloat16),
}
OURS = {  # bench_kernels_gpu's plain benchmarks of each shape: (kernel, benchmark name)
    "splitk_decode": [("splitk", "splitk_decode_B8_H32_Skv32768_D128_bf16")],
    "fa1_prefill": [("fa1", "fa1_prefill_B4_H16_S2048_D64_bf16"), ("fa2", "fa2_prefill_B4_H16_S2048_D64_bf16"),
                    ("splitk2", "splitk2_prefill_B4_H16_S2048_D64_bf16_4splits"),
                    ("splitk", "splitk_prefill_B4_H16_S2048_D64_bf16_4splits")],
}


def backends():
    """(name, context manager factory) for each SDPA backend this PyTorch has."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        names = ["FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"]
        return [(n.lower(), (lambda b: (lambda: sdpa_kernel(b)))(getattr(SDPBackend, n)))
                for n in names if hasattr(SDPBackend, n)]
    except ImportError:  # PyTorch < 2.3
        ctx = torch.backends.cuda.sdp_kernel
        return [("flash", lambda: ctx(enable_flash=True, enable_math=False, enable_mem_efficient=False)),
                ("efficient", lambda: ctx(enable_flash=False, enable_math=False, enable_mem_efficient=True)),
                ("math", lambda: ctx(enable_flash=False, enable_math=True, enable_mem_efficient=False))]


def time_ms(fn, warmup=3, runs=20):
    for _ in range(warmup):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(runs):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / runs


def measures(s, ms):
    elem = torch.tensor([], dtype=s["dtype"]).element_size()
    moved = s["b"] * s["h"] * s["d"] * elem * (2 * s["sq"] + 2 * s["skv"])
    flops = 4.0 * s["b"] * s["h"] * s["sq"] * s["skv"] * s["d"]
    return moved / (ms / 1e3) / 1e9, flops / (ms / 1e3) / 1e12


def median_ms(fn, rounds):
    times = sorted(time_ms(fn) for _ in range(rounds))
    return times[len(times) // 2]


def bench_sdpa(rounds, only=None, quiet=False):
    """The fastest backend of each shape; `only` ({shape: backend}): times just those shapes, and
    of each just that backend (None: every backend)."""
    torch.manual_seed(0)
    out = {}
    for name, s in SHAPES.items():
        if only is not None and name not in only:
            continue
        q = torch.randn(s["b"], s["h"], s["sq"], s["d"], device="cuda", dtype=s["dtype"])
        k = torch.randn(s["b"], s["h"], s["skv"], s["d"], device="cuda", dtype=s["dtype"])
        v = torch.randn_like(k)
        best = None
        for backend, ctx in backends():
            if only is not None and only[name] is not None and backend != only[name]:
                continue
            try:
                with ctx():
                    ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v), rounds)
            except RuntimeError as e:  # backend not available for this shape / GPU
                if not quiet:
                    print(f"  sdpa {backend:10s} {name}: unavailable ({str(e).splitlines()[0][:80]})")
                continue
            gbs, tflops = measures(s, ms)
            again = " (again, after ours)" if only is not None else ""
            if not quiet:
                print(f"  sdpa {backend:10s} {name}{again}: {ms:.4f} ms  {gbs:8.1f} GB/s  {tflops:7.3f} TFLOP/s")
            if best is None or ms < best["ms"]:
                best = dict(backend=backend, ms=ms, gbs=gbs, tflops=tflops)
        out[name] = best
    return out


def run_ours(binary, rounds, bench=None, check=True, quiet=False):
    """bench_kernels_gpu's results by name: every benchmark, or those named like `bench`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ours.json")
        args = [binary, "--json", path, "--rounds", str(rounds)] + (["--filter", bench] if bench else []) + \
            ([] if check else ["--no-check"])
        rc = subprocess.run(args, check=False, stdout=subprocess.DEVNULL if quiet else None).returncode
        if not os.path.exists(path):
            sys.exit(f"bench_sdpa.py: {binary} wrote no results (exit status {rc})")
        with open(path) as f:
            return {r["name"]: r for r in json.load(f)}


def interleave(binary, pairs, rounds, only):
    """Each of our plain benchmarks and SDPA's fastest backend of its shape timed in turn, `pairs`
    times (ours first checked against the float64 reference, then timed with --no-check): a GPU's
    speed drifts by a few tenths of a percent over minutes (docs/perf.md), and a pair's two
    timings are seconds apart. Prints each pair's ratio (SDPA's time / ours: above 1, ours is
    faster), then their median, min and max."""
    fastest = bench_sdpa(1, None if only is None else {only: None}, quiet=True)
    for name, best in fastest.items():
        if best is None or (only is not None and name != only):
            continue
        for kernel, bench in OURS[name]:
            ratios = []
            print(f"\n{name}: tilescope {kernel} and sdpa ({best['backend']}) in turn, {pairs} pairs of {rounds} round(s)")
            for i in range(pairs):
                r = run_ours(binary, rounds, bench, check=i == 0, quiet=True).get(bench)
                if r is None or "error" in r:
                    print(f"  pair {i + 1}: ours {'ERROR: ' + r['error'] if r else 'did not run'}")
                    break
                theirs = bench_sdpa(rounds, {name: best["backend"]}, quiet=True)[name]
                ratios.append(theirs["ms"] / r["ms"])
                print(f"  pair {i + 1}: ours {r['ms']:.4f} ms  sdpa {theirs['ms']:.4f} ms  {ratios[-1]:.4f}x")
            if ratios:
                ordered = sorted(ratios)
                print(f"  {name} tilescope {kernel}: median {ordered[len(ordered) // 2]:.4f}x "
                      f"(min {ordered[0]:.4f}x, max {ordered[-1]:.4f}x, {sum(x >= 1.0 for x in ratios)} of "
                      f"{len(ratios)} pairs at or above 1.0x)")


def check(directory):
    """Our dumped outputs vs SDPA's and vs a float64 reference (flash-attention's rule)."""
    import numpy as np

    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    with open(os.path.join(directory, "cases.json")) as f:
        cases = json.load(f)
    ok = True
    for c in cases:
        base = os.path.join(directory, c["name"])
        dt = dtypes[c["dtype"]]

        def load(t):
            a = np.load(f"{base}.{t}.npy")
            if dt == torch.bfloat16:  # stored as the uint16 bit patterns (numpy has no bf16)
                return torch.from_numpy(a.view(np.int16)).cuda().view(torch.bfloat16)
            return torch.from_numpy(a).cuda().to(dt)

        q, k, v = load("q"), load("k"), load("v")
        ours = torch.from_numpy(np.load(f"{base}.o.npy")).cuda().double()
        sq, skv = c["seq_q"], c["seq_kv"]
        scale = c["softmax_scale"] or 1.0 / math.sqrt(c["head_dim"])
        mask = None
        if c["causal"]:  # bottom-right aligned: query i sees keys j <= i + skv - sq
            i = torch.arange(sq, device="cuda")[:, None]
            j = torch.arange(skv, device="cuda")[None, :]
            mask = j <= i + (skv - sq)
        sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale).double()
        s = torch.einsum("bhqd,bhkd->bhqk", q.double(), k.double()) * scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        p = torch.softmax(s, dim=-1)
        ref = torch.einsum("bhqk,bhkd->bhqd", p, v.double())
        seen = torch.isfinite(s).any(dim=-1)  # rows that see a key (SDPA gives NaN elsewhere)
        ref = torch.where(seen[..., None], ref, torch.zeros_like(ref))
        err_ours = (ours - ref)[seen].abs().max().item()
        err_sdpa = (sdpa - ref)[seen].abs().max().item()
        diff = (ours - sdpa)[seen].abs().max().item()
        unseen_zero = bool((ours[~seen] == 0).all().item()) if (~seen).any() else True
        passed = err_ours <= 2 * err_sdpa + 1e-5 and unseen_zero and math.isfinite(err_ours)
        ok &= passed
        print(f"{c['name']:32s} max|ours-ref64| {err_ours:.3e}  max|sdpa-ref64| {err_sdpa:.3e}  "
              f"max|ours-sdpa| {diff:.3e}  {'ok' if passed else 'FAIL'}  ({c['device']})")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", help="path to bench_kernels_gpu: run it and print one table")
    ap.add_argument("--check", metavar="DIR", help="check a `bench_kernels_gpu --dump DIR` directory")
    ap.add_argument("--rounds", type=int, default=1, help="time every benchmark N rounds, report the medians")
    ap.add_argument("--interleave", type=int, metavar="N", help="with --ours: ours and SDPA in turn, N pairs")
    ap.add_argument("--only", choices=sorted(SHAPES), help="with --interleave: just this shape")
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit("bench_sdpa.py: --rounds must be at least 1")
    if args.interleave is not None and (args.interleave < 1 or not args.ours):
        sys.exit("bench_sdpa.py: --interleave takes a count of 1 or more, and --ours")
    if not torch.cuda.is_available():
        sys.exit("bench_sdpa.py: no CUDA device visible to PyTorch")
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    if args.check:
        sys.exit(0 if check(args.check) else 1)
    if args.interleave:
        interleave(args.ours, args.interleave, args.rounds, args.only)
        return
    sdpa = bench_sdpa(args.rounds)
    ours = run_ours(args.ours, args.rounds) if args.ours else {}
    # SDPA's fastest backend again after ours: a GPU's speed drifts over minutes (a few tenths of a
    # percent: docs/perf.md), and ours runs between the two.
    after = bench_sdpa(args.rounds, {n: b["backend"] for n, b in sdpa.items() if b}) if args.ours else {}
    print(f"\n{'shape':16s} {'who':28s} {'ms':>9s} {'GB/s':>8s} {'TFLOP/s':>8s} {'vs SDPA':>8s}"
          + (f" {'vs after':>8s}" if after else ""))
    for name, best in sdpa.items():
        if best is None:
            print(f"{name:16s} sdpa: no backend ran")
            continue
        print(f"{name:16s} {'sdpa (' + best['backend'] + ')':28s} {best['ms']:9.4f} {best['gbs']:8.1f} "
              f"{best['tflops']:8.3f} {'1.000x':>8s}")
        late = after.get(name)
        if late is not None:
            print(f"{name:16s} {'sdpa, again after ours':28s} {late['ms']:9.4f} {late['gbs']:8.1f} "
                  f"{late['tflops']:8.3f} {best['ms'] / late['ms']:7.3f}x {'1.000x':>8s}")
        for kernel, bench in OURS[name]:
            r = ours.get(bench)
            if r is None:
                continue
            who = f"tilescope {kernel}" + (f" (splits {r['num_splits']})" if kernel.startswith("splitk") else "")
            if "error" in r:
                print(f"{name:16s} {who:28s} ERROR: {r['error']}")
                continue
            print(f"{name:16s} {who:28s} {r['ms']:9.4f} "
                  f"{r['GB/s']:8.1f} {r['TFLOP/s']:8.3f} {best['ms'] / r['ms']:7.3f}x"
                  + (f" {late['ms'] / r['ms']:7.3f}x" if late is not None else ""))


if __name__ == "__main__":
    main()
