"""The prefill kernel (prefill_attention.py) recorded with tilescope.triton, compiled on a GPU or
in Triton's interpreter (conftest.py), on fresh random inputs: the fixed kernel diffs clean in
several shapes (sequences not a multiple of the blocks, seq_q above and below seq_kv under the
bottom-right causal mask, GQA); each planted bug is located in its stage, at its first event, with
its mechanism; a kernel that rounds P without declaring it is told so."""
import pytest
import torch
import triton
import triton.language as tl

import tilescope
from conftest import INTERPRETED
from prefill_attention import BUGS, STAGES
from run_prefill import record_run

# (batch, heads_q, heads_kv, seq_q, seq_kv, head_dim, causal)
SHAPES = {
    "causal_q_below_kv": (1, 4, 2, 50, 77, 48, True),
    "causal_q_above_kv": (2, 6, 3, 77, 50, 64, True),  # rows 0-26 see no key
    "full_mqa": (1, 4, 1, 45, 70, 32, False),
}
# bf16 in the interpreter needs conftest's interpreter_compat.install(): Triton's interpreter
# multiplies bf16 tl.dot operands as their bit patterns (test_bf16_dot_is_exact).
DTYPES = ["fp32", "fp16", "bf16"]


def run(tmp_path, seed, shape="causal_q_below_kv", dtype="fp16", bug="none", stages=STAGES, fp32_dot="ieee"):
    b, hq, hk, sq, skv, d, causal = SHAPES[shape]
    path = tmp_path / f"{bug}_{dtype}_{shape}.trace.safetensors"
    device = torch.device("cpu") if INTERPRETED else torch.device("cuda")
    out, lse = record_run(path, b, hq, hk, sq, skv, d, dtype, causal, bug, seed, device=device, stages=stages,
                          fp32_dot=fp32_dot)
    return path, out, lse


def reference(q, k, v, causal):
    """float64 attention of [B, S, H, D] inputs, bottom-right causal, GQA; (out, lse)."""
    q, k, v = (t.double().permute(0, 2, 1, 3) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        sq, skv = s.shape[-2:]
        i = torch.arange(sq)[:, None]
        j = torch.arange(skv)[None, :]
        s = s.masked_fill(j > i + skv - sq, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return (p @ v).permute(0, 2, 1, 3), lse


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_fixed_kernel_is_clean(tmp_path, seed, shape, dtype):
    path, out, lse = run(tmp_path, seed, shape, dtype)
    report = tilescope.diff(path)
    assert report.clean, f"seed {seed}\n{report}"
    t = tilescope.load(path)
    b, hq, hk, sq, skv, d, causal = SHAPES[shape]
    # Every program recorded a state per kv block it visited and its output, nothing dropped.
    blocks = -(-sq // 32)
    visited = 0
    for m in range(blocks):
        hi = min(skv, max((m + 1) * 32 + skv - sq, 0)) if causal else skv
        visited += -(-hi // 32)
    assert t.dropped_events == 0
    assert len(t.select(stage="step")) == b * hq * visited
    assert len(t.select(stage="final")) == b * hq * blocks
    # The recorded output is what the kernel returned, and the trace's inputs are the kernel's.
    torch.testing.assert_close(torch.from_numpy(t.output.astype("float32")),
                               out.float().permute(0, 2, 1, 3).cpu(), rtol=0, atol=0)
    # The diff's verdict against an independent float64 reference of the same inputs.
    q = torch.from_numpy(t.inputs.q.astype("float64")).reshape(b, hq, sq, d).permute(0, 2, 1, 3)
    kv = lambda a: torch.from_numpy(a.astype("float64")).reshape(b, hk, skv, d).permute(0, 2, 1, 3)
    want, want_lse = reference(q, kv(t.inputs.k), kv(t.inputs.v), causal)
    tol = {"fp32": 1e-4, "fp16": 4e-3, "bf16": 3e-2}[dtype]
    torch.testing.assert_close(out.double().cpu(), want, rtol=tol, atol=tol, msg=lambda m: f"seed {seed}: {m}")
    seen = torch.isfinite(want_lse)
    torch.testing.assert_close(lse.double().cpu()[seen], want_lse[seen], rtol=tol, atol=tol)


# What each planted bug must be called, and where it must be found first.
EXPECTED = {
    "acc_not_rescaled": ("o_not_rescaled", "step"),
    "causal_off_by_one": ("key_set_changed", "step"),
    "o_divided_twice": ("o_divided_by_l", "final"),
    "o_not_divided": ("o_times_l", "final"),
    "gqa_mapping": ("wrong_kv_input", "output"),
}


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "fp32"])
@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_planted_bug_is_located_and_named(tmp_path, seed, bug, dtype):
    path, _, _ = run(tmp_path, seed, "causal_q_below_kv", dtype, bug)
    report = tilescope.diff(path)
    mechanism, stage = EXPECTED[bug]
    msg = f"seed {seed}\n{report}"
    assert not report.clean, msg
    assert report.mechanism is not None and report.mechanism["id"] == mechanism, msg
    assert report.origin_stage == stage and report.first_divergence["stage"] == stage, msg
    first = report.first_divergence
    assert (first["batch"], first["head"]) == ((0, 1) if bug == "gqa_mapping" else (0, 0)), msg
    if stage == "step":
        assert report.data["stages"]["final"]["verdict"] != "pass" or bug == "acc_not_rescaled", msg
        # Not rescaling shows first where the max can rise: from the second kv block on.
        assert first["step"] == (1 if bug == "acc_not_rescaled" else 0), msg
    else:
        assert report.data["stages"]["step"]["events"]["failing"] == 0, msg
    if bug == "gqa_mapping":
        # The kernel records the kv head it read: its states contradict the mapping and are not compared.
        assert report.data["stages"]["step"]["events"]["not_compared"] > 0, msg
        assert "reads kv head 0" in str(report), msg


def test_undeclared_p_rounding_is_told(tmp_path, seed):
    """The same correct kernel with its step stage not declared p_rounded: in fp16 its states miss
    the float32 textbook by P's rounding; the report says that declaring it makes the run clean."""
    path, _, _ = run(tmp_path, seed, "causal_q_below_kv", "fp16", stages=[("step", "state"), ("final", "final")])
    report = tilescope.diff(path)
    msg = f"seed {seed}\n{report}"
    assert not report.clean and report.mechanism is None and report.origin_stage == "step", msg
    fits = [f for f in report.data["findings"] if f["id"] == "p_rounded_fits"]
    assert fits and fits[0]["numbers"]["run_clean"] == 1, msg
    assert "declare step p_rounded" in report.data["next_measurement"], msg


def test_tf32_dot_is_not_float32(tmp_path, seed):
    """tl.dot of float32 operands with Triton's default input_precision ("tf32"): compiled, Q, K, P
    and V are rounded to 10 mantissa bits and every state misses the float32 textbook (m, l and O
    wrong from the first step); the interpreter multiplies in float32 and is clean. The one place
    where the two disagree on a correct kernel (docs/your-own-kernel.md, "A Triton kernel")."""
    path, _, _ = run(tmp_path, seed, "causal_q_below_kv", "fp32", fp32_dot="tf32")
    report = tilescope.diff(path)
    msg = f"seed {seed}\n{report}"
    if INTERPRETED:
        assert report.clean, msg
    else:
        assert not report.clean and report.origin_stage == "step" and report.first_divergence["step"] == 0, msg
        wrong = report.data["stages"]["step"]
        assert wrong["events"]["failing"] == wrong["events"]["compared"], msg


@triton.jit
def _dot_kernel(A, B, C, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(A + r[:, None] * N + r[None, :])
    b = tl.load(B + r[:, None] * N + r[None, :])
    tl.store(C + r[:, None] * N + r[None, :], tl.dot(a, b))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_dot_of_16_bit_operands_is_exact(device, seed, dtype):
    """tl.dot of small integers (exact in fp16 and bf16, sums exact in float32) gives their exact
    product, compiled and in the interpreter: there with the bf16 mend of interpreter_compat,
    whose absence gives products of the bit patterns (about 1e9)."""
    g = torch.Generator().manual_seed(seed)
    a, b = (torch.randint(-8, 9, (16, 16), generator=g).to(dtype).to(device) for _ in range(2))
    c = torch.empty(16, 16, device=device)
    _dot_kernel[(1,)](a, b, c, N=16)
    torch.testing.assert_close(c.cpu(), a.double().cpu().matmul(b.double().cpu()).float(), rtol=0, atol=0)


@triton.jit
def _to_bf16_kernel(X, Y, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(Y + r, tl.load(X + r).to(tl.bfloat16))


def test_float32_to_bf16_rounds_to_nearest_even(device, seed):
    """x.to(tl.bfloat16) gives torch's bits (round to nearest even), compiled and in the
    interpreter: there with interpreter_compat's mend, whose absence truncates."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(4096, generator=g)
    # Exact ties between two bf16 values, both ways of rounding to even.
    x[:4] = torch.tensor([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8 + 2**-9), 65504.0])
    y = torch.empty(4096, dtype=torch.bfloat16, device=device)
    _to_bf16_kernel[(1,)](x.to(device), y, N=4096)
    assert torch.equal(y.cpu().view(torch.int16), x.to(torch.bfloat16).view(torch.int16))
