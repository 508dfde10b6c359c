"""A PyTorch extension's Split-K kernel, recorded with tilescope.record and asserted in pytest.

Needs torch with CUDA, a GPU, nvcc and the tilescope CLI (TILESCOPE_CLI); tests/python/gpu_torch.sh
runs it. The extension is built twice (torch.utils.cpp_extension.load, or setup.py where ninja is
missing): fixed, and with the planted bug (-DFLASH_ATTENTION_PLANTED_BUG).
"""
import importlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA device", allow_module_level=True)

from torch.utils import cpp_extension  # noqa: E402

import tilescope  # noqa: E402
from tilescope.testing import assert_attention_matches  # noqa: E402

HERE = Path(__file__).resolve().parent
STAGES = [("partial", "state"), ("reduce", "merge")]  # the kernel's kStagePartial, kStageReduce
KV_TILE = 32  # the kernel's TILE_SIZE_N: keys per kv tile


def build(planted: bool):
    """The extension, fixed or planted: torch.utils.cpp_extension.load when ninja is there, else
    setup.py's setuptools build (into TORCH_EXTENSIONS_DIR or a temporary folder)."""
    name = "splitk_attention_planted" if planted else "splitk_attention"
    flags = ["-O2", "-DTILESCOPE_TRACE=1"] + (["-DFLASH_ATTENTION_PLANTED_BUG"] if planted else [])
    if cpp_extension.is_ninja_available():
        return cpp_extension.load(name=name, sources=[str(HERE / "splitk_attention.cu")],
                                  extra_include_paths=[tilescope.get_include(), str(HERE)],
                                  extra_cuda_cflags=flags, verbose=False)
    out = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or tempfile.mkdtemp()) / f"{name}-setuptools"
    env = {**os.environ, "SPLITK_ATTENTION_PLANTED": "1" if planted else "0",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(tilescope.__file__).parent.parent),
                                                       os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, str(HERE / "setup.py"), "build_ext", "--build-lib", str(out),
                    "--build-temp", str(out / "tmp")], check=True, env=env, cwd=HERE)
    sys.path.insert(0, str(out))
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def fixed():
    return build(planted=False)


@pytest.fixture(scope="module")
def planted():
    return build(planted=True)


def inputs(dtype, batch=2, heads=4, kv_heads=2, seq_q=96, seq_kv=320, head_dim=64, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(batch, heads, seq_q, head_dim, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(batch, kv_heads, seq_kv, head_dim, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(batch, kv_heads, seq_kv, head_dim, device="cuda", dtype=dtype, generator=g)
    return q, k, v


def run(ext, q, k, v, path, causal=False):
    with tilescope.record(q, k, v, stages=STAGES, path=path, layout="bhsd", capacity=1 << 16,
                          causal="bottom_right" if causal else "none", kernel="splitk_attention") as rec:
        o, lse = ext.forward(q, k, v, causal, rec.view)
        rec.set_output(o, lse=lse)
    return rec, o, lse


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_fixed_kernel_matches(fixed, tmp_path, dtype, causal):
    q, k, v = inputs(dtype, seed=3)
    rec, o, lse = run(fixed, q, k, v, tmp_path / "fixed.trace.safetensors", causal)
    t = rec.load()
    kv_tiles = -(-320 // KV_TILE)
    assert len(t.select(stage="partial")) == len(t.select(stage="reduce")) == 2 * 4 * 96 * kv_tiles
    assert t.dropped_events == 0 and t.dtype == {torch.float32: "fp32", torch.float16: "fp16",
                                                 torch.bfloat16: "bf16"}[dtype]
    assert t.output.shape == (2, 4, 96, 64)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(2, 1),
                                                           v.float().repeat_interleave(2, 1), is_causal=False) \
        if not causal else None
    if ref is not None:
        torch.testing.assert_close(o.float(), ref, atol=2e-2, rtol=2e-2)
    report = assert_attention_matches(rec)
    assert report.clean


def test_planted_bug_is_located(planted, tmp_path):
    q, k, v = inputs(torch.float32, seed=4)
    rec, _, _ = run(planted, q, k, v, tmp_path / "planted.trace.safetensors")
    report = tilescope.diff(rec.path)
    assert not report.clean
    assert report.origin_stage == "reduce" and report.first_divergence["stage"] == "reduce"
    assert report.stages["partial"]["verdict"] == "clean"
    assert report.symptom_kind == "reduce_scaled_by_l"
    with pytest.raises(AssertionError) as info:
        assert_attention_matches(rec.path)
    print("\nThe planted bug's assertion message:\n" + str(info.value))
    assert "reduce_scaled_by_l" in str(info.value) and "first divergence:" in str(info.value)


def test_tracing_off_and_cpu_tensors(fixed, tmp_path):
    q, k, v = inputs(torch.float16, seed=5)
    o_off, _ = fixed.forward(q, k, v, False, None)
    _, o_on, _ = run(fixed, q, k, v, tmp_path / "on.trace.safetensors")
    assert torch.equal(o_off, o_on)  # the probes do not change the result
    with pytest.raises(tilescope.RecorderError, match="must be CUDA tensors"):
        tilescope.record(q.cpu(), k.cpu(), v.cpu(), stages=STAGES, path=tmp_path / "x")


def test_kernel_on_a_side_stream(fixed, tmp_path):
    q, k, v = inputs(torch.bfloat16, seed=6)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        rec, _, _ = run(fixed, q, k, v, tmp_path / "side.trace.safetensors")
    assert rec.stream == side
    assert_attention_matches(rec)
