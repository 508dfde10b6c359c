"""What the tilescope.triton helpers cost the example's kernels when launched without a recording
(TS=False), against the same kernels with the helpers removed from the source (untraced.py), on a
GPU: the code of the launched kernels compared (PTX without debug lines, SASS, registers, spills:
compile_check.py's) and the time of both
launches (triton.testing.do_bench, median, rounds interleaved); also the time with a recording.

    python bench_helpers.py [--json PATH]
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import triton

import tilescope
import decode_attention as instrumented
from compile_check import code, sass
from untraced import load_without_tracing

plain = load_without_tracing(Path(instrumented.__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    batch, heads_q, heads_kv, seq, dim, splits = 32, 32, 8, 4096, 128, 8
    g = torch.Generator().manual_seed(7)
    q = torch.randn(batch, heads_q, dim, generator=g).half().cuda()
    k = torch.randn(batch, seq, heads_kv, dim, generator=g).half().cuda()
    v = torch.randn(batch, seq, heads_kv, dim, generator=g).half().cuda()
    lens = torch.full((batch,), seq, dtype=torch.int32).cuda()
    off, bare = [], []
    out_off, _ = instrumented.decode_attention(q, k, v, lens, num_splits=splits, launches=off)
    out_bare, _ = plain.decode_attention(q, k, v, lens, num_splits=splits, launches=bare)
    assert torch.equal(out_off, out_bare), "the kernels without the helpers compute something else"
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "shape": dict(batch=batch, heads_q=heads_q, heads_kv=heads_kv, seq_kv=seq, head_dim=dim, splits=splits,
                            dtype="fp16"), "kernels": {}}
    for a, b in zip(off, bare):
        ca, cb = code(a), code(b)
        result["kernels"][a.name] = {"ptx_identical": ca == cb, "ptx_lines": len(ca),
                                     "sass_identical": sass(a) == sass(b),
                                     "regs": [getattr(a, "n_regs", None), getattr(b, "n_regs", None)],
                                     "spills": [getattr(a, "n_spills", None), getattr(b, "n_spills", None)]}
    # "recording": traced, each call preceded by a reset of the buffer's counters (one small launch).
    times = {"helpers_off": [], "no_helpers": [], "recording": []}
    cap = batch * heads_q * (splits + 1)
    for _ in range(args.rounds):
        times["helpers_off"].append(triton.testing.do_bench(
            lambda: instrumented.decode_attention(q, k, v, lens, num_splits=splits), return_mode="median"))
        times["no_helpers"].append(triton.testing.do_bench(
            lambda: plain.decode_attention(q, k, v, lens, num_splits=splits), return_mode="median"))
        with tilescope.record(q[:, None], k, v, stages=instrumented.STAGES, path="/tmp/bench_helpers.trace.safetensors",
                              capacity=cap, kv_lens=lens.tolist()) as rec:
            times["recording"].append(triton.testing.do_bench(
                lambda: (rec.buffer[rec.layout_of_buffer.counters_offset:].zero_(),
                         instrumented.decode_attention(q, k, v, lens, num_splits=splits, trace=rec)),
                return_mode="median"))
            rec.set_output(out_off[:, None])
    result["ms"] = {k: {"median": statistics.median(v), "rounds": v} for k, v in times.items()}
    base = result["ms"]["no_helpers"]["median"]
    result["helpers_off_over_no_helpers"] = result["ms"]["helpers_off"]["median"] / base - 1
    result["recording_over_no_helpers"] = result["ms"]["recording"]["median"] / base - 1
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    return 0 if all(k["ptx_identical"] and k["sass_identical"] for k in result["kernels"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
