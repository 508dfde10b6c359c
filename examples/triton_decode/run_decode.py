"""Records the example once into a trace: compiled on the GPU, or in Triton's interpreter when
TRITON_INTERPRET=1 (CPU tensors). The same seed gives the same inputs either way, so the two
traces can be compared (`tilescope diff A --against B`).

    python run_decode.py OUT.trace.safetensors [--planted] [--seed N] [--dtype fp32|fp16|bf16]
"""
import argparse
import os

import torch

import interpreter_compat
import tilescope
from decode_attention import STAGES, decode_attention

interpreter_compat.install()  # under TRITON_INTERPRET=1 with Triton 3.5/3.6 and NumPy >= 2.4 only


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--planted", action="store_true")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "fp16", "bf16"])
    args = ap.parse_args()
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    device = "cpu" if os.environ.get("TRITON_INTERPRET", "") not in ("", "0") else "cuda"
    g = torch.Generator().manual_seed(args.seed)
    batch, heads_q, heads_kv, seq, dim, splits = 4, 16, 4, 200, 64, 4
    q = torch.randn(batch, heads_q, dim, generator=g).to(dtype).to(device)
    k = torch.randn(batch, seq, heads_kv, dim, generator=g).to(dtype).to(device)
    v = torch.randn(batch, seq, heads_kv, dim, generator=g).to(dtype).to(device)
    lens = torch.tensor([200, 117, 3, 64], dtype=torch.int32, device=device)  # 3 keys: one split empty
    # [doc:triton-record]
    with tilescope.record(q[:, None], k, v, stages=STAGES, path=args.path, kv_lens=lens.tolist(),
                          kernel="triton_decode" + ("_planted" if args.planted else ""),
                          run=f"seed {args.seed}, {args.dtype}, {device}") as rec:
        out, lse = decode_attention(q, k, v, lens, num_splits=splits, planted=args.planted, trace=rec)
        rec.set_output(out[:, None], lse=lse[:, :, None], lse_base="base2")
    report = tilescope.diff(rec.path)
    # [/doc]
    print(f"{args.path}: {rec.num_events} events ({rec.dropped_events} dropped), {rec.metadata['device']}: "
          f"{report.verdict}")


if __name__ == "__main__":
    main()
