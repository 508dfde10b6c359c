"""A prefill FlashAttention forward in Triton, recorded with tilescope.triton.

One program per (query block of BLOCK_M rows, query head, batch). It walks the kv blocks of
BLOCK_N keys with an online softmax in base 2 (the scale and log2 e folded into the scores, exp2),
with a causal mask aligned bottom-right (query i sees keys j <= i + seq_kv - seq_q) and GQA (query
head h reads kv head h // (heads_q / heads_kv)). Q, K, V and O are [batch, seq, heads, head_dim]
(flash-attention's layout); the LSE [batch, heads, seq_q] is natural-log.

Recorded, when launched with a recording: stage 0 ("step") the running state of the block's rows
after each kv block (m in base-2 units, l, the unnormalised O), stage 1 ("final") the output as
written with its LSE (normalised, base 2).

BUG plants one bug of the kind real kernels have (0: none):
  1  the accumulator is not rescaled by alpha when the running max rises (l is);
  2  the causal mask is off by one (j < i + offset: the diagonal key is masked);
  3  the output is divided by l twice;
  4  the output is not divided by l;
  5  the wrong GQA head mapping: kv head h % heads_kv instead of h // group.
"""
import math

import torch
import triton
import triton.language as tl

import tilescope.triton as tst

STAGES = [("step", "state", 0, True), ("final", "final")]  # P is rounded to the input dtype for P V
BUGS = {"none": 0, "acc_not_rescaled": 1, "causal_off_by_one": 2, "o_divided_twice": 3, "o_not_divided": 4,
        "gqa_mapping": 5}
LOG2E = 1.4426950408889634


@triton.jit
def prefill_kernel(Q, K, V, O, LSE, qk_scale_log2,
                   stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh,
                   stride_vb, stride_vs, stride_vh, stride_ob, stride_os, stride_oh, stride_lb, stride_lh,
                   SEQ_Q, SEQ_KV, HEAD_DIM, HEADS_KV, GROUP,
                   CAUSAL: tl.constexpr, BUG: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_D: tl.constexpr, DOT_PRECISION: tl.constexpr, TS_BUF, TS_META, TS: tl.constexpr):
    pid_m = tl.program_id(0)
    h = tl.program_id(1)
    b = tl.program_id(2)
    if BUG == 5:
        kvh = h % HEADS_KV
    else:
        kvh = h // GROUP
    q0 = pid_m * BLOCK_M
    offs_m = q0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < SEQ_Q
    col_ok = offs_d < HEAD_DIM
    q = tl.load(Q + b * stride_qb + offs_m[:, None] * stride_qs + h * stride_qh + offs_d[None, :],
                mask=row_ok[:, None] & col_ok[None, :], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    diag = SEQ_KV - SEQ_Q  # bottom-right: query i sees key j when j <= i + diag
    hi = SEQ_KV
    if CAUSAL:
        hi = tl.minimum(SEQ_KV, tl.maximum(q0 + BLOCK_M + diag, 0))
    k_base = K + b * stride_kb + kvh * stride_kh
    v_base = V + b * stride_vb + kvh * stride_vh
    step = 0
    for n0 in range(0, hi, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        key_ok = offs_n < SEQ_KV
        k = tl.load(k_base + offs_n[None, :] * stride_ks + offs_d[:, None], mask=key_ok[None, :] & col_ok[:, None],
                    other=0.0)
        s = tl.dot(q, k, input_precision=DOT_PRECISION) * qk_scale_log2
        visible = key_ok[None, :]
        if CAUSAL:
            if BUG == 2:
                visible = visible & (offs_n[None, :] < offs_m[:, None] + diag)
            else:
                visible = visible & (offs_n[None, :] <= offs_m[:, None] + diag)
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)  # rows that have seen no key yet
        alpha = tl.math.exp2(m_i - m_ref)
        p = tl.math.exp2(s - m_ref[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + offs_n[:, None] * stride_vs + offs_d[None, :], mask=key_ok[:, None] & col_ok[None, :],
                    other=0.0)
        if BUG != 1:
            acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
        m_i = m_new
        if TS:
            tst.record_rows(TS_BUF, TS_META, TS, stage=0, convention=tst.LOG_BASE_2, batch=b, head=h,
                            kv_head=kvh, q_begin=q0, rows=tl.minimum(SEQ_Q - q0, BLOCK_M), split=-1, step=step,
                            key_begin=0, key_end=tl.minimum(n0 + BLOCK_N, SEQ_KV), m=m_i, l=l_i, o=acc)
        step += 1
    l_div = tl.where(l_i == 0.0, 1.0, l_i)  # a row that sees no key writes 0
    if BUG == 3:
        out = acc / l_div[:, None] / l_div[:, None]
    elif BUG == 4:
        out = acc
    else:
        out = acc / l_div[:, None]
    lse2 = m_i + tl.math.log2(l_i)
    tl.store(O + b * stride_ob + offs_m[:, None] * stride_os + h * stride_oh + offs_d[None, :],
             out.to(O.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])
    tl.store(LSE + b * stride_lb + h * stride_lh + offs_m, lse2 * 0.6931471805599453, mask=row_ok)
    if TS:
        tst.record_rows(TS_BUF, TS_META, TS, stage=1, convention=tst.NORMALIZED | tst.LOG_BASE_2, batch=b, head=h,
                        kv_head=kvh, q_begin=q0, rows=tl.minimum(SEQ_Q - q0, BLOCK_M), split=-1, step=step,
                        key_begin=0, key_end=SEQ_KV, m=lse2, l=l_i, o=out)


def prefill_attention(q, k, v, causal=True, bug=0, block_m=32, block_n=32, fp32_dot="ieee", trace=None):
    """q [B, Sq, Hq, D], k and v [B, Skv, Hkv, D] -> (out [B, Sq, Hq, D], lse [B, Hq, Sq] natural).
    ``fp32_dot``: tl.dot's input_precision for float32 inputs; compiled, Triton's default "tf32"
    rounds Q, K, P and V to 10 mantissa bits, which a float32 kernel's check must not."""
    batch, seq_q, heads_q, head_dim = q.shape
    seq_kv, heads_kv = k.shape[1], k.shape[2]
    assert heads_q % heads_kv == 0
    out = torch.empty_like(q)
    lse = torch.empty((batch, heads_q, seq_q), dtype=torch.float32, device=q.device)
    block_d = max(16, triton.next_power_of_2(head_dim))
    ts = trace.triton if trace is not None else tst.NO_TRACE
    grid = (triton.cdiv(seq_q, block_m), heads_q, batch)
    prefill_kernel[grid](q, k, v, out, lse, LOG2E / math.sqrt(head_dim),
                         q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                         v.stride(0), v.stride(1), v.stride(2), out.stride(0), out.stride(1), out.stride(2),
                         lse.stride(0), lse.stride(1), seq_q, seq_kv, head_dim, heads_kv, heads_q // heads_kv,
                         CAUSAL=causal, BUG=bug, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d,
                         DOT_PRECISION=fp32_dot if q.dtype == torch.float32 else None, **ts)
    return out, lse
