"""Compiles the example's kernels ahead of time for a GPU target (no GPU needed: Triton's own
LLVM and ptxas) three ways: instrumented with TS=True, instrumented with TS=False, and with the
helpers removed from the source (untraced.py); and compares the code of the last two (PTX without
debug lines). Also used by bench_helpers.py on the GPU.

    python compile_check.py [--arch 90] [--json PATH]      (not under TRITON_INTERPRET)
"""
import argparse
import json
import sys
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import decode_attention as instrumented
from untraced import load_without_tracing

INT_PARAMS = {"stride_qb", "stride_qh", "stride_kb", "stride_ks", "stride_kh", "stride_vb", "stride_vs", "stride_vh",
              "stride_pb", "stride_ph", "stride_ps", "stride_ob", "stride_oh", "HEAD_DIM", "GROUP", "NUM_HEADS"}
POINTERS = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "OUT": "*fp16", "KV_LENS": "*i32", "PART_O": "*fp32",
            "PART_LSE": "*fp32", "OUT_LSE": "*fp32", "TS_BUF": "*u8", "TS_META": "*i64"}
CONSTEXPRS = {"partial_kernel": {"NUM_SPLITS": 8, "BLOCK_H": 16, "BLOCK_N": 16, "BLOCK_D": 128},
              "merge_kernel": {"NUM_SPLITS": 8, "BLOCK_D": 128, "PLANTED": False}}


def compile_kernel(fn, name, ts, arch):
    """``fn`` compiled for sm_``arch``; ``ts``: True, False, or None (a kernel without TS params)."""
    consts = dict(CONSTEXPRS[name])
    if ts is not None:
        consts["TS"] = ts
        if not ts:
            consts.update(TS_BUF=None, TS_META=None)  # what tilescope.triton.NO_TRACE passes
    sig = {}
    for a in fn.arg_names:
        sig[a] = "constexpr" if a in consts else POINTERS.get(a, "i32" if a in INT_PARAMS else "fp32")
    src = ASTSource(fn=fn, signature=sig, constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()})
    return triton.compile(src, target=GPUTarget("cuda", arch, 32))


def code(kernel):
    """The PTX without debug information (.loc/.file lines, comments, debug sections: they name
    the source file and its lines, which differ)."""
    lines = []
    for line in kernel.asm["ptx"].splitlines():
        s = line.strip()
        if s.startswith(".section") and "debug" in s:
            break
        if s.startswith((".loc", ".file", "//")) or not s:
            continue
        lines.append(s)
    return lines


def sass(kernel):
    """The machine code as cuobjdump disassembles it (Triton's bundled one), without comments
    and addresses."""
    from triton.tools.disasm import get_sass

    out = []
    for line in get_sass(kernel.asm["cubin"]).splitlines():
        s = line.split("/*")[0].strip() if "/*" in line else line.strip()
        if s and not s.startswith(("//", ".")):
            out.append(s)
    return out


def compare(arch):
    plain = load_without_tracing(Path(instrumented.__file__), "untraced_for_compile_check")
    result = {}
    for name in ("partial_kernel", "merge_kernel"):
        on = compile_kernel(getattr(instrumented, name), name, True, arch)
        off = compile_kernel(getattr(instrumented, name), name, False, arch)
        bare = compile_kernel(getattr(plain, name), name, None, arch)
        c_off, c_bare, c_on = code(off), code(bare), code(on)
        differing = sum(1 for a, b in zip(c_off, c_bare) if a != b) + abs(len(c_off) - len(c_bare))
        result[name] = {"ptx_identical_ts_false_vs_untraced": c_off == c_bare, "ptx_lines": len(c_bare),
                        "ptx_lines_differing": differing, "ptx_lines_ts_true": len(c_on),
                        "sass_identical_ts_false_vs_untraced": sass(off) == sass(bare), "sass_lines": len(sass(bare)),
                        "cubin_bytes": {"ts_true": len(on.asm["cubin"]), "ts_false": len(off.asm["cubin"]),
                                        "untraced": len(bare.asm["cubin"])}}
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--json")
    args = ap.parse_args()
    result = {"triton": triton.__version__, "arch": f"sm_{args.arch}", "kernels": compare(args.arch)}
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    same = all(k["ptx_identical_ts_false_vs_untraced"] and k["sass_identical_ts_false_vs_untraced"]
               for k in result["kernels"].values())
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
