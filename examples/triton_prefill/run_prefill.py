"""One recording of the prefill kernel on seeded random inputs, then its diff.

    TRITON_INTERPRET=1 python run_prefill.py --bug acc_not_rescaled --path out.trace.safetensors
"""
import argparse
import os

import torch

import tilescope
from prefill_attention import BUGS, STAGES, prefill_attention

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def record_run(path, batch=1, heads_q=4, heads_kv=2, seq_q=50, seq_kv=77, head_dim=48, dtype="fp16", causal=True,
               bug="none", seed=0, block_m=32, block_n=32, device=None, stages=STAGES, fp32_dot="ieee"):
    device = device or torch.device("cpu" if os.environ.get("TRITON_INTERPRET", "") not in ("", "0") else "cuda")
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, s, h, head_dim, generator=g).to(DTYPES[dtype]).to(device)
               for s, h in ((seq_q, heads_q), (seq_kv, heads_kv), (seq_kv, heads_kv)))
    kv_blocks = -(-seq_kv // block_n)
    capacity = batch * heads_q * -(-seq_q // block_m) * (kv_blocks + 1)
    with tilescope.record(q, k, v, stages=stages, path=path, causal="bottom_right" if causal else "none",
                          capacity=capacity, max_rows=block_m, kernel="triton_prefill_" + bug,
                          run=f"seed {seed}, {dtype}") as rec:
        out, lse = prefill_attention(q, k, v, causal=causal, bug=BUGS[bug], block_m=block_m, block_n=block_n,
                                     fp32_dot=fp32_dot, trace=rec)
        rec.set_output(out, lse=lse)
    return out, lse


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bug", default="none", choices=sorted(BUGS))
    ap.add_argument("--path", default="prefill.trace.safetensors")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", default="fp16", choices=sorted(DTYPES))
    ap.add_argument("--shape", default="1,4,2,50,77,48", help="batch,heads_q,heads_kv,seq_q,seq_kv,head_dim")
    ap.add_argument("--no-causal", action="store_true")
    args = ap.parse_args()
    b, hq, hk, sq, skv, d = (int(x) for x in args.shape.split(","))
    record_run(args.path, b, hq, hk, sq, skv, d, args.dtype, not args.no_causal, args.bug, args.seed)
    print(tilescope.diff(args.path))
