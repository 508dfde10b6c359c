#!/usr/bin/env python3
"""Compares the plain and instrumented builds of each attention kernel in a compiled object:
registers (from ptxas -v output, if given), and the kv main loop's SASS, instruction for
instruction. Used for docs/perf.md, "Instrumented kernels with tracing off".

  nvcc ... -Xptxas -v -c build/<dir>/kernels/generated/gpu/splitk_partial_bf16.cu -o X.o 2> X.ptxas
  cuobjdump -sass -arch sm_90a X.o > X.sass
  scripts/kernel_sass_diff.py X.sass [X.ptxas]

cuobjdump is not in the Debian-less CUDA install here; `pip install nvidia-cuda-cuobjdump`
(in a virtual environment) provides it, and `nvidia-cuda-nvdisasm` the disassembler it calls. A
kv loop is a loop (backward branch) holding barriers and inside no other such loop. The plain
loop is compared with the traced build's shortest one: where the traced build is two kernels
(FA-1, FA-2, the Split-K partial: kernels/kernel_registry.h) its `KernelVariant::traced` entry is
the kernel of the blocks that record nothing, which should hold the plain loop, and the recording
kernel (named without a KernelVariant, or FA-1's with a second bool argument, true) is not
compared; a traced build of one kernel whose kv loop is compiled twice (Split-K 2's, with and
without the events: fa2_forward.cuh) has two loops, the shorter the one that runs when a block
records no step. Loops of the split-K reduce (no barriers) are not compared.
"Identical" allows a renaming of uniform registers and branch targets outside the loop.
"""
import collections
import re
import sys

INSTRUCTION = re.compile(r'/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z0-9_.]+)([^;]*);')
VARIANTS = {'0': 'plain', '1': 'traced', '2': 'faulty'}


def parse_sass(path):
    functions, current = {}, None
    for line in open(path):
        m = re.search(r'Function : (\S+)', line)
        if m:
            current = m.group(1)
            functions[current] = []
            continue
        m = INSTRUCTION.search(line)
        if m and current:
            functions[current].append((int(m.group(1), 16), (m.group(2) or '').strip(),
                                       m.group(3), m.group(4).strip()))
    return functions


def parse_registers(path):
    registers, current = {}, None
    for line in open(path):
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            current = m.group(1)
        m = re.search(r'Used (\d+) registers', line)
        if m and current:
            registers[current] = int(m.group(1))
            current = None
    return registers


def body(ins, lo, hi):
    return [x for x in ins if lo <= x[0] <= hi]


def backward_branches(ins):
    for address, _, op, args in ins:
        if op.startswith('BRA'):
            m = re.search(r'(0x[0-9a-f]+)', args)
            if m and int(m.group(1), 16) <= address:
                yield int(m.group(1), 16), address


def kv_loops(ins):
    """The outermost loops holding barriers, shortest first."""
    spans = [(lo, hi) for lo, hi in backward_branches(ins)
             if any(x[2].startswith('BAR') for x in body(ins, lo, hi))]
    outer = [(lo, hi) for lo, hi in spans
             if not any(a <= lo and hi <= b and (a, b) != (lo, hi) for a, b in spans)]
    return sorted((body(ins, lo, hi) for lo, hi in outer), key=len)


def rebased(loop):
    lo, hi = loop[0][0], loop[-1][0]

    def target(m):
        t = int(m.group(0), 16)
        return f'+{t - lo:#x}' if lo <= t <= hi else 'OUT'
    return [(x[1], x[2], re.sub(r'0x[0-9a-f]{3,}', target, x[3])
             if x[2].startswith(('BRA', 'BSSY', 'CALL')) else x[3]) for x in loop]


def identical(a, b):
    if len(a) != len(b):
        return False
    forward, backward = {}, {}
    for x, y in zip(rebased(a), rebased(b)):
        if x[:2] != y[:2]:
            return False
        xs, ys = re.split(r'(UR\d+)', x[2]), re.split(r'(UR\d+)', y[2])
        if len(xs) != len(ys):
            return False
        for u, v in zip(xs, ys):
            if u.startswith('UR') and v.startswith('UR'):
                if forward.setdefault(u, v) != v or backward.setdefault(v, u) != u:
                    return False
            elif u != v:
                return False
    return True


def main(argv):
    functions = parse_sass(argv[1])
    registers = parse_registers(argv[2]) if len(argv) > 2 else {}
    kernels = collections.defaultdict(dict)
    for name, ins in functions.items():
        m = re.search(r'KernelVariantE(\d)E', name)
        if m:
            kernels[name.replace(m.group(0), 'KernelVariantE?E')][VARIANTS[m.group(1)]] = (name, ins)
    print('kernel | registers plain/traced | kv loop instructions plain/traced (the traced build\'s '
          'loops, shortest first) | loop identical')
    for key in sorted(kernels):
        k = kernels[key]
        if 'plain' not in k or 'traced' not in k:
            continue
        (pn, p), (tn, t) = k['plain'], k['traced']
        plain_loops, traced_loops = kv_loops(p), kv_loops(t)
        if not plain_loops or not traced_loops:
            continue
        lp, lt = plain_loops[-1], traced_loops[0]
        label = re.sub(r'_ZN2ts\d+(\w+?)I(\w+?)(Li(\d+)E)?LNS.*', r'\1 \2 D\4', key)
        regs = f'{registers.get(pn, "?")}/{registers.get(tn, "?")}'
        others = ''.join(f', {len(x)}' for x in traced_loops[1:])
        print(f'{label} | {regs} | {len(lp)}/{len(lt)} ({len(lt) - len(lp):+d}){others} | '
              f'{"yes" if identical(lp, lt) else "no"}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
