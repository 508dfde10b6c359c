"""What `tilescope diff` must say about the examples' traces (tests/sdk/examples_from_install.sh).

    check_example_reports.py TILESCOPE WORK_DIR [--gpu]

WORK_DIR holds splitk_fixed, splitk_bug, splitk_bug_causal, decode and the wmma_* traces of
examples_from_install.sh. The fixed Split-K, the decode kernel and the correct wmma prefill must be
clean; each wmma planted bug must be found in the state stage at the step where it first acts, with
its mechanism or none, never another (check_wmma_bugs); the planted bug (the reduce weighting each
partial O by its local_sum again) must be found where it is: the reduce, at the first kv tile it
merges (split 0), from the first query row of the first block whose l is not 1, with every partial
right and the mechanism named (the merge weighting O by l again). The reports
docs/your-own-kernel.md shows for splitk_fixed and splitk_bug must be what tilescope prints.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

tilescope, work = sys.argv[1], sys.argv[2]
# Traces recorded on a GPU (tests/sdk/gpu_examples.sh): the wmma missing barrier's race depends on
# the hardware's schedule there, and TILESCOPE_CPU_PERTURB_SEED does nothing.
on_gpu = sys.argv[3:] == ["--gpu"]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def diff(name):
    run = subprocess.run([tilescope, "diff", f"{work}/{name}.trace.safetensors", "--json"],
                         capture_output=True, text=True)
    if run.returncode not in (0, 1):
        sys.exit(f"tilescope diff {name} failed with {run.returncode}: {run.stderr}")
    return run.returncode, json.loads(run.stdout)


def stage(report, name):
    return report["stages"][name]["events"]


def check_clean(name, stages):
    code, r = diff(name)
    check(code == 0, f"{name}: exit {code}, expected 0 (clean)")
    check(r["verdict"] == "clean", f"{name}: verdict {r['verdict']}: {r['symptom']}")
    for s in stages:
        ev = stage(r, s)
        check(ev["compared"] > 0 and ev["failing"] == 0, f"{name}: stage {s}: {ev}")
    return r


def check_planted_bug(name, first_row):
    code, r = diff(name)
    d = r["first_divergence"]
    check(code == 1, f"{name}: exit {code}, expected 1 (divergence)")
    check(r["verdict"] == "divergence", f"{name}: verdict {r['verdict']}")
    check(r["symptom_kind"] == "reduce_scaled_by_l", f"{name}: symptom {r['symptom_kind']}: {r['symptom']}")
    check("weights each merged state's O by its sum l again" in r["symptom"], f"{name}: symptom text: {r['symptom']}")
    check(d["stage"] == "split_k_reduce" and d["stage_kind"] == "merge", f"{name}: first divergence in {d['stage']}")
    check(d["split"] == 0 and d["step"] == 0, f"{name}: first divergence at split {d['split']}, step {d['step']}")
    check((d["batch"], d["head"], d["query_rows"]) == (0, 0, [first_row]),
          f"{name}: first divergence at batch {d['batch']} head {d['head']} rows {d['query_rows']}")
    check(d["keys"] == [[0, 64]], f"{name}: first divergence's keys {d['keys']}")
    check(d["quantities"] == ["o_norm", "o_raw"], f"{name}: wrong quantities {d['quantities']}")
    partial, reduce = stage(r, "split_k_partial"), stage(r, "split_k_reduce")
    check(partial["compared"] > 0 and partial["failing"] == 0, f"{name}: partials {partial}")
    if first_row == 0:
        check(reduce["failing"] == reduce["compared"] > 0, f"{name}: reduce {reduce}")
    else:  # rows that see one key (l = 1) stay right
        check(0 < reduce["failing"] < reduce["compared"], f"{name}: reduce {reduce}")


check_clean("splitk_fixed", ["split_k_partial", "split_k_reduce", "output"])
decode = check_clean("decode", ["decode.step", "output"])
check("base-2" in decode["stages"]["decode.step"]["convention"],
      f"decode: convention {decode['stages']['decode.step']['convention']}")
check_planted_bug("splitk_bug", 0)
# Causal: query 0 sees one key, its l is 1 and weighting by it again changes nothing; query 1 is
# the first row the bug shows in. The mechanism must still be named: it reproduces the wrong rows
# and the right row 0 alike.
check_planted_bug("splitk_bug_causal", 1)


def check_wmma_bugs():
    """The wmma prefill (examples/wmma_prefill): 96 queries x 160 keys in kv tiles of 64 (steps
    0-2, the last one partial), two heads, one batch."""
    for name in ("wmma_none", "wmma_none_causal", "wmma_none_perturbed", "wmma_kv_tail_off_by_one_causal"):
        # (the off-by-one lets in key seq_kv, which the causal mask hides from every row)
        check_clean(name, ["wmma.step", "wmma.final", "output"])

    def located(name, step, mechanism):
        code, r = diff(name)
        d = r["first_divergence"]
        check(code == 1 and r["verdict"] == "divergence", f"{name}: exit {code}, verdict {r['verdict']}")
        check(d["stage"] == "wmma.step" and r["origin_stage"] == "wmma.step",
              f"{name}: first divergence in {d['stage']}, origin {r['origin_stage']}: {r['symptom']}")
        check(d["step"] == step and d["q_begin"] == 0, f"{name}: first divergence at step {d['step']} q {d['q_begin']}")
        named = r["mechanism"]["id"] if r["mechanism"] else None
        check(named == mechanism, f"{name}: mechanism {named}, expected {mechanism}: {r['symptom']}")
        check(r["also_wrong"] == [], f"{name}: also wrong {r['also_wrong']}")
        for later in ("wmma.final", "output"):
            check(later in r["symptom"], f"{name}: the symptom does not say {later} is wrong only through it")
        return r

    # K^T's fragment loaded row_major: every score wrong from the first step; no model of one
    # step's change reproduces a transposed 16 x 16 block, so nothing may be named.
    r = located("wmma_k_row_major", 0, None)
    check("No mechanism tested reproduces it" in r["symptom"], f"wmma_k_row_major: {r['symptom']}")
    # V loaded with the unpadded ldm: m and l right, O wrong from the first step (reading the
    # shared padding, never written: NaN on the CPU); nothing named.
    r = located("wmma_v_unpadded_ldm", 0, None)
    wrong = r["first_divergence"]["quantities"]
    check("o_norm" in wrong and "m" not in wrong and "l" not in wrong, f"wmma_v_unpadded_ldm: quantities {wrong}")
    # O not rescaled: step 0 has nothing to rescale; named at step 1.
    located("wmma_o_not_rescaled", 1, "o_not_rescaled")
    # The tail mask's off-by-one: only the last (partial) kv tile, one zero key more.
    r = located("wmma_kv_tail_off_by_one", 2, "key_set_changed")
    check(r["mechanism"]["numbers"].get("zero_keys") == 1, f"wmma_kv_tail_off_by_one: {r['mechanism']['numbers']}")
    # The missing barrier between the score store and the softmax: under perturbed schedules the
    # state stage is wrong with nothing named, and the two runs differ: a race. On a GPU, whether
    # it shows is the hardware's; if it does, nothing may be named.
    if on_gpu:
        for seed in (1, 2):
            code, r = diff(f"wmma_no_score_barrier_{seed}")
            check(r["mechanism"] is None, f"wmma_no_score_barrier_{seed} (GPU): named {r['symptom']}")
        return
    for seed in (1, 2):
        code, r = diff(f"wmma_no_score_barrier_{seed}")
        check(code == 1 and r["origin_stage"] == "wmma.step" and r["mechanism"] is None,
              f"wmma_no_score_barrier_{seed}: exit {code}, origin {r['origin_stage']}: {r['symptom']}")
    ab = subprocess.run([tilescope, "diff", f"{work}/wmma_no_score_barrier_1.trace.safetensors", "--against",
                         f"{work}/wmma_no_score_barrier_2.trace.safetensors", "--json"], capture_output=True, text=True)
    r = json.loads(ab.stdout)
    check(ab.returncode == 1 and r["symptom_kind"] == "race", f"wmma_no_score_barrier A/B: {r['symptom_kind']}: {r['symptom']}")


check_wmma_bugs()

# docs/your-own-kernel.md shows the two Split-K reports: each line it shows must be a line of the
# report as tilescope prints it now, in the same order (the guide may leave lines out). They are
# the CPU path's reports: a GPU's rounding gives other error figures in the stage table.
guide = Path(__file__).resolve().parents[2] / "docs" / "your-own-kernel.md"
blocks = re.findall(r"^```text\n(.*?)^```", guide.read_text(), re.S | re.M)
for name, verdict in () if on_gpu else (("splitk_fixed", "clean"), ("splitk_bug", "DIVERGENCE")):
    shown = [b for b in blocks if b.startswith(f"verdict:          {verdict}\n")]
    check(len(shown) == 1, f"{guide.name}: {len(shown)} text blocks start with verdict {verdict}, expected 1")
    report = subprocess.run([tilescope, "diff", f"{work}/{name}.trace.safetensors"], capture_output=True,
                            text=True).stdout.splitlines()
    for block in shown:
        at = 0
        for line in block.splitlines():
            while at < len(report) and report[at] != line:
                at += 1
            if at == len(report):
                check(False, f"{guide.name}: the {name} report shown has a line tilescope diff does not print "
                             f"there: {line!r}")
                break
            at += 1

info = subprocess.run([tilescope, "info", f"{work}/splitk_bug.trace.safetensors"], capture_output=True, text=True)
check(info.returncode == 0 and "split_k_reduce" in info.stdout, f"tilescope info: {info.returncode} {info.stdout}")
# A recorder's trace holds no kernel time: the captured line says nothing of it (was: "kernels  ms").
captured = [line for line in info.stdout.splitlines() if line.startswith("captured ")]
check(len(captured) == 1 and not re.search(r"kernels\s+ms", captured[0]), f"tilescope info: {captured}")

for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print("every example's report is as expected")
