"""A Split-K GQA decode attention kernel in Triton, in the manner of the Triton decode kernels of
vLLM and SGLang: stage 1 computes, per (batch, kv head, kv split), the partial state of the
query heads that share the kv head (scores folded with log2 e, exp2, a base-2 LSE); stage 2
merges the splits' partials per (batch, query head). Splits left empty by a short sequence are
skipped by both. Each stage records its states with tilescope.triton when launched with a
recording (TS=True); launched with tilescope.triton.NO_TRACE they are compiled out.

PLANTED (a tl.constexpr of the merge) plants the bug: the merge weighs the splits' base-2 LSEs
with the natural exp (and adds a natural log of the sum), as a base-2 LSE fed to a natural-log
merge does.

    out, lse = decode_attention(q, k, v, kv_lens, num_splits=4)            # production
    with tilescope.record(q[:, None], k, v, stages=STAGES, path=..., kv_lens=kv_lens) as rec:
        out, lse = decode_attention(q, k, v, kv_lens, num_splits=4, trace=rec)
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

import torch
import triton
import triton.language as tl

import tilescope.triton as tst

# The stage table the kernels' stage indices refer to (tilescope.record's `stages`).
STAGES = [("partial", "state"), ("merge", "merge")]
PARTIAL, MERGE = 0, 1
LOG2E = 1.4426950408889634


@triton.jit
def _split_range(seq_len, split, NUM_SPLITS: tl.constexpr):
    size = tl.cdiv(seq_len, NUM_SPLITS)
    start = split * size
    return start, tl.minimum(start + size, seq_len)


# [doc:triton-signature]
@triton.jit
def partial_kernel(Q, K, V, KV_LENS, PART_O, PART_LSE, qk_scale,
                   stride_qb, stride_qh, stride_kb, stride_ks, stride_kh, stride_vb, stride_vs, stride_vh,
                   stride_pb, stride_ph, stride_ps, HEAD_DIM, GROUP,
                   NUM_SPLITS: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                   TS_BUF, TS_META, TS: tl.constexpr):
    # [/doc]
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)
    seq_len = tl.load(KV_LENS + b)
    start, end = _split_range(seq_len, split, NUM_SPLITS)

    h = tl.arange(0, BLOCK_H)
    d = tl.arange(0, BLOCK_D)
    h_ok = h < GROUP
    d_ok = d < HEAD_DIM
    heads = kvh * GROUP + h
    q = tl.load(Q + b * stride_qb + heads[:, None] * stride_qh + d[None, :], mask=h_ok[:, None] & d_ok[None, :],
                other=0.0).to(tl.float32)
    e_max = tl.full([BLOCK_H], float("-inf"), tl.float32)
    e_sum = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, BLOCK_D], tl.float32)
    for n0 in range(start, end, BLOCK_N):
        n = n0 + tl.arange(0, BLOCK_N)
        n_ok = n < end
        kv_mask = n_ok[:, None] & d_ok[None, :]
        k = tl.load(K + b * stride_kb + kvh * stride_kh + n[:, None] * stride_ks + d[None, :], mask=kv_mask,
                    other=0.0).to(tl.float32)
        v = tl.load(V + b * stride_vb + kvh * stride_vh + n[:, None] * stride_vs + d[None, :], mask=kv_mask,
                    other=0.0).to(tl.float32)
        qk = tl.dot(q, tl.trans(k), input_precision="ieee") * qk_scale      # base-2 scores
        qk = tl.where(n_ok[None, :], qk, float("-inf"))
        n_max = tl.maximum(e_max, tl.max(qk, axis=1))
        rescale = tl.exp2(e_max - n_max)
        p = tl.exp2(qk - n_max[:, None])
        acc = acc * rescale[:, None] + tl.dot(p, v, input_precision="ieee")
        e_sum = e_sum * rescale + tl.sum(p, axis=1)
        e_max = n_max
    if end > start:
        out = acc / e_sum[:, None]
        lse = e_max + tl.log2(e_sum)
        part = b * stride_pb + heads * stride_ph + split * stride_ps
        tl.store(PART_O + part[:, None] + d[None, :], out, mask=h_ok[:, None] & d_ok[None, :])
        tl.store(PART_LSE + part // BLOCK_D, lse, mask=h_ok)
        # [doc:triton-record-heads]
        if TS:
            tst.record_heads(TS_BUF, TS_META, TS, stage=0, convention=tst.NORMALIZED | tst.LOG_BASE_2, batch=b,
                             head=kvh * GROUP, heads=GROUP, kv_head=kvh, q_begin=0, split=split, step=0,
                             key_begin=start, key_end=end, m=lse, l=e_sum, o=out)
        # [/doc]


@triton.jit
def merge_kernel(PART_O, PART_LSE, KV_LENS, OUT, OUT_LSE, stride_pb, stride_ph, stride_ps, stride_ob, stride_oh,
                 HEAD_DIM, GROUP, NUM_HEADS,
                 NUM_SPLITS: tl.constexpr, BLOCK_D: tl.constexpr, PLANTED: tl.constexpr,
                 TS_BUF, TS_META, TS: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    seq_len = tl.load(KV_LENS + b)
    d = tl.arange(0, BLOCK_D)
    d_ok = d < HEAD_DIM
    e_max = float("-inf")
    e_sum = 0.0
    acc = tl.zeros([BLOCK_D], tl.float32)
    for split in range(0, NUM_SPLITS):
        start, end = _split_range(seq_len, split, NUM_SPLITS)
        if end > start:
            part = b * stride_pb + h * stride_ph + split * stride_ps
            o = tl.load(PART_O + part + d, mask=d_ok, other=0.0)
            lse = tl.load(PART_LSE + part // BLOCK_D)
            n_max = tl.maximum(lse, e_max)
            if PLANTED:
                old = tl.exp(e_max - n_max)
                w = tl.exp(lse - n_max)
            else:
                old = tl.exp2(e_max - n_max)
                w = tl.exp2(lse - n_max)
            acc = acc * old + w * o
            e_sum = e_sum * old + w
            e_max = n_max
    out = acc / e_sum
    if PLANTED:
        lse_out = e_max + tl.log(e_sum)
    else:
        lse_out = e_max + tl.log2(e_sum)
    tl.store(OUT + b * stride_ob + h * stride_oh + d, out.to(OUT.dtype.element_ty), mask=d_ok)
    tl.store(OUT_LSE + b * NUM_HEADS + h, lse_out)
    # [doc:triton-record-rows]
    if TS:
        one = tl.zeros([1], tl.float32)
        tst.record_rows(TS_BUF, TS_META, TS, stage=1, convention=tst.NORMALIZED | tst.LOG_BASE_2, batch=b, head=h,
                        kv_head=h // GROUP, q_begin=0, rows=1, split=-1, step=0, key_begin=0, key_end=seq_len,
                        m=one + lse_out, l=one + e_sum, o=out[None, :])
    # [/doc]


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kv_lens: torch.Tensor, num_splits: int = 4,
                     scale: float = 0.0, planted: bool = False, trace: Optional[Any] = None,
                     block_n: int = 16, launches: Optional[List[Any]] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Decode attention of one query token per sequence.

    ``q`` [batch, heads_q, head_dim]; ``k``, ``v`` [batch, seq_kv, heads_kv, head_dim] (heads_q a
    multiple of heads_kv); ``kv_lens`` int32 [batch] (the keys each sequence has, <= seq_kv).
    Returns the output [batch, heads_q, head_dim] (q's dtype) and the base-2 LSE [batch, heads_q]
    (float32). ``trace``: an open tilescope.record(...) recording, or None. ``launches``: a list
    that receives what the two launches return (compiled: the compiled kernels).
    """
    batch, heads_q, head_dim = q.shape
    heads_kv = k.shape[2]
    assert heads_q % heads_kv == 0 and k.shape == v.shape and k.shape[0] == batch and k.shape[3] == head_dim
    assert q.stride(2) == 1 and k.stride(3) == 1 and v.stride(3) == 1
    group = heads_q // heads_kv
    block_d = triton.next_power_of_2(head_dim)
    block_h = max(16, triton.next_power_of_2(group))
    qk_scale = (scale or 1.0 / math.sqrt(head_dim)) * LOG2E
    part_o = torch.empty(batch, heads_q, num_splits, block_d, dtype=torch.float32, device=q.device)
    part_lse = torch.empty(batch, heads_q, num_splits, 1, dtype=torch.float32, device=q.device)
    assert part_o.stride(2) == block_d  # PART_LSE is indexed by PART_O's offset / BLOCK_D
    out = torch.empty(batch, heads_q, head_dim, dtype=q.dtype, device=q.device)
    out_lse = torch.empty(batch, heads_q, dtype=torch.float32, device=q.device)
    # [doc:triton-launch]
    ts = trace.triton if trace is not None else tst.NO_TRACE
    first = partial_kernel[(batch, heads_kv, num_splits)](
        q, k, v, kv_lens, part_o, part_lse, qk_scale, q.stride(0), q.stride(1), k.stride(0), k.stride(1),
        k.stride(2), v.stride(0), v.stride(1), v.stride(2), part_o.stride(0), part_o.stride(1), part_o.stride(2),
        head_dim, group, NUM_SPLITS=num_splits, BLOCK_H=block_h, BLOCK_N=block_n, BLOCK_D=block_d, **ts)
    second = merge_kernel[(batch, heads_q)](
        part_o, part_lse, kv_lens, out, out_lse, part_o.stride(0), part_o.stride(1), part_o.stride(2),
        out.stride(0), out.stride(1), head_dim, group, heads_q, NUM_SPLITS=num_splits, BLOCK_D=block_d,
        PLANTED=planted, **ts)
    # [/doc]
    if launches is not None:
        launches += [first, second]
    return out, out_lse
