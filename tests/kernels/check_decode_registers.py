#!/usr/bin/env python3
"""Checks what docs/perf.md says of the decode kernel's code generation: the Split-K partial
kernel (bf16, head_dim 128) in its plain build, and in the traced build's kernel of the blocks
that record nothing (the plain build's code behind a test of the block), spills nothing and has no
stack frame, on every architecture the project builds for; and the traced build's recording
kernel (the blocks that record an event: kernels/kernel_registry.h) lets as many blocks share an
SM as the plain build (up to the kSplitkBlocksPerSm the launcher holds the partial to), so that a
traced launch runs at the plain kernel's occupancy. The recording kernel's spills and stack frame
are printed, not checked: only blocks that record run it.

    check_decode_registers.py NVCC REPO_ROOT GENERATED_INCLUDE ARCH...      (ARCH: 80, 90a, ...)

GENERATED_INCLUDE: the build's folder of generated headers (base/kernel_list_entries.h, the
kernel list that kernels/kernel_smem.h checks).

Compiles tests/kernels/decode_kernel_registers.cu with `-Xptxas -v` and reads ptxas's report;
prints each kernel's registers and spills (the figures docs/perf.md quotes are measured so).
"""
import os
import re
import subprocess
import sys
import tempfile

VARIANTS = {"0": "plain", "1": "traced"}
THREADS = 128              # kernels/tile_shapes.h: kKernelThreads
REGISTERS_PER_SM = 65536   # every architecture the project builds for (sm_80, sm_90)
REGISTER_GRANULE = 8       # a thread's registers are allocated in multiples of 8


def held_blocks(root):
    """kSplitkBlocksPerSm (kernels/tile_shapes.h): the blocks an SM the launcher holds the partial to."""
    with open(os.path.join(root, "kernels", "tile_shapes.h")) as f:
        m = re.search(r"kSplitkBlocksPerSm = (\d+);", f.read())
    if not m:
        raise SystemExit("kernels/tile_shapes.h: no kSplitkBlocksPerSm")
    return int(m.group(1))


def blocks_per_sm(registers, held):
    """Blocks of THREADS threads an SM runs at this register count a thread: what its register
    file holds, at most the `held` blocks the launcher allows."""
    granted = -(-registers // REGISTER_GRANULE) * REGISTER_GRANULE
    return min(held, REGISTERS_PER_SM // (granted * THREADS))
ENTRY = re.compile(r"Compiling entry function '(_ZN2ts21splitk_partial_kernel\S*KernelVariantE(\d)\S*)' for 'sm_(\w+)'")
RECORDING_ENTRY = re.compile(r"Compiling entry function '(_ZN2ts38splitk_partial_recording_blocks_kernel\S*)' for 'sm_(\w+)'")
PROPERTIES = re.compile(r"Function properties for (\S+)")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")


def parse(report):
    """{(arch, variant): {"registers": n, "frame": bytes, "spills": bytes}} of the entry functions."""
    kernels, entry, described = {}, None, None
    for line in report.splitlines():
        m = ENTRY.search(line)
        if m:
            entry = (m.group(3), VARIANTS.get(m.group(2), m.group(2)))
            kernels[entry] = {"name": m.group(1)}
            continue
        m = RECORDING_ENTRY.search(line)
        if m:
            entry = (m.group(2), "recording")
            kernels[entry] = {"name": m.group(1)}
            continue
        m = PROPERTIES.search(line)
        if m:
            described = m.group(1)
            continue
        m = FRAME.search(line)
        if m and entry and described == kernels[entry]["name"]:
            kernels[entry]["frame"] = int(m.group(1))
            kernels[entry]["spills"] = int(m.group(2)) + int(m.group(3))
            described = None
            continue
        m = USED.search(line)
        if m and entry:
            kernels[entry]["registers"] = int(m.group(1))
    return kernels


def main(argv):
    if len(argv) < 5:
        print(__doc__)
        return 2
    nvcc, root, generated = argv[1], argv[2], argv[3]
    archs = [a.split("-")[0] for a in argv[4:]]  # CMake's 80-real / 90a-virtual forms
    source = os.path.join(root, "tests", "kernels", "decode_kernel_registers.cu")
    command = [nvcc, "-I" + root, "-I" + os.path.join(root, "instrumentation", "probe"), "-I" + generated,
               "-std=c++20", "-O2",
               "-DNDEBUG", "--expt-relaxed-constexpr", "-Xptxas", "-v", "-c", source]
    for arch in archs:
        command.append(f"--generate-code=arch=compute_{arch},code=sm_{arch}")
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(command + ["-o", os.path.join(out, "decode.o")], capture_output=True, text=True)
    if done.returncode != 0:
        print(" ".join(command))
        print(done.stdout + done.stderr)
        return 1
    kernels = parse(done.stdout + done.stderr)
    held = held_blocks(root)
    problems = []
    for arch in archs:
        found = {v: kernels.get((arch, v)) for v in ("plain", "traced", "recording")}
        if not all(k and "registers" in k for k in found.values()):
            problems.append(f"sm_{arch}: ptxas reported no plain, traced and recording decode kernel "
                            f"(found {sorted(kernels)})")
            continue
        for variant, k in found.items():
            print(f"sm_{arch} {variant:9s}: {k['registers']} registers, {k.get('frame', '?')} bytes stack frame, "
                  f"{k.get('spills', '?')} bytes spilled")
            if variant != "recording" and (k.get("spills", 0) != 0 or k.get("frame", 0) != 0):
                problems.append(f"sm_{arch} {variant}: spills or a stack frame ({k.get('spills')} bytes spilled, "
                                f"{k.get('frame')} bytes frame)")
        plain = found["plain"]["registers"]
        for variant in ("traced", "recording"):
            registers = found[variant]["registers"]
            if blocks_per_sm(registers, held) < blocks_per_sm(plain, held):
                problems.append(f"sm_{arch}: the {variant} kernel takes {registers} registers, the plain one "
                                f"{plain}: {blocks_per_sm(registers, held)} blocks an SM against "
                                f"{blocks_per_sm(plain, held)}, so a traced launch no longer runs at the plain "
                                f"kernel's occupancy")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
