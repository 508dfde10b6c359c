"""Poisoned files: every one refused with a TraceFormatError that names the file and the problem,
before anything the file claims is allocated."""
import json
import os
import signal
import stat
import struct

import numpy as np
import pytest

import tilescope
from tilescope import TraceFormatError

from conftest import run


SHAPE = ("--kernel", "splitk", "--heads", 2, "--seq-q", 8, "--seq-kv", 128, "--splits", 2, "--seed", 4)


@pytest.fixture(scope="module")
def good(capture):
    """A trace that stores its inputs (inputs.* tensors)."""
    return capture(*SHAPE, "--store-inputs")


@pytest.fixture(scope="module")
def recipe(capture):
    """The same capture, its inputs recorded as their recipe (capture's default)."""
    return capture(*SHAPE)


def split(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def join(header, data, pad=True):
    text = json.dumps(header).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def write(tmp_path, content, name="bad.trace.safetensors"):
    p = tmp_path / name
    p.write_bytes(content)
    return p


def refused(path, pattern):
    with pytest.raises(TraceFormatError, match=pattern) as info:
        tilescope.load(path)
    assert str(path) in str(info.value)
    return info.value


def poke(header, data, tensor, index, value):
    """data with element `index` of an I32 tensor set to value."""
    begin = header[tensor]["data_offsets"][0]
    data = bytearray(data)
    struct.pack_into("<i", data, begin + 4 * index, value)
    return bytes(data)


def test_the_good_file_loads(good):
    assert len(tilescope.load(good).events) > 0


def test_container_defects(good, tmp_path):
    raw = open(good, "rb").read()
    header, data = split(good)
    refused(write(tmp_path, raw[:5]), "too short")
    refused(write(tmp_path, struct.pack("<Q", 2**63) + raw[8:]), "exceeds the limit")
    refused(write(tmp_path, struct.pack("<Q", len(raw)) + raw[8:]), "runs past the end")
    refused(write(tmp_path, raw[:-1]), "data_offsets|bytes no tensor covers")
    refused(write(tmp_path, struct.pack("<Q", 4) + b"\xff\xfe{}" + b""), "not valid UTF-8")
    refused(write(tmp_path, struct.pack("<Q", 5) + b"[1,2]"), "not a JSON object")
    deep = b"[" * 100000 + b"]" * 100000
    refused(write(tmp_path, struct.pack("<Q", len(deep)) + deep), "not valid JSON")
    text = json.dumps(header).encode()
    dup = text[:-1] + b', "events.stage": ' + json.dumps(header["events.stage"]).encode() + b"}"
    refused(write(tmp_path, struct.pack("<Q", len(dup)) + dup + data), "duplicate key")

    def edited(change):
        h = json.loads(json.dumps(header))
        change(h)
        return write(tmp_path, join(h, data))

    refused(edited(lambda h: h["events.m"].update(dtype="F128")), "unknown dtype")
    refused(edited(lambda h: h["events.m"].update(shape=[-1, 8])), "non-negative integers")
    refused(edited(lambda h: h["events.m"].update(shape=[1] * 65)), "at most 64")
    refused(edited(lambda h: h["events.m"].update(data_offsets=[0, 2**62])), "outside the data buffer")
    refused(edited(lambda h: h["events.m"].update(shape=[h["events.m"]["shape"][0], 3])), "needs .* bytes")
    refused(edited(lambda h: h["__metadata__"].update(max_rows=8)), "not a string")
    refused(edited(lambda h: h["events.m"].update(extra=1)), "exactly dtype, shape and data_offsets")

    def overlap(h):
        a, b = h["events.stage"], h["events.batch"]
        b["data_offsets"] = list(a["data_offsets"])
    refused(edited(overlap), "overlaps|hole")


def test_schema_defects(good, tmp_path):
    header, data = split(good)

    def edited(change, d=data):
        h = json.loads(json.dumps(header))
        change(h)
        return write(tmp_path, join(h, d))

    meta = lambda **kv: (lambda h: h["__metadata__"].update(kv))  # noqa: E731
    refused(edited(meta(tilescope_format="1")), "format 1")
    refused(edited(meta(tilescope_format="3")), "format '3'")
    refused(edited(lambda h: h["__metadata__"].pop("tilescope_format")), "not a tilescope trace")
    refused(edited(meta(max_rows="-1")), "max_rows .* not a decimal")
    refused(edited(meta(max_rows="70000")), "max_rows = 70000 outside")
    refused(edited(meta(stages="[]")), "1 to 64 entries")
    refused(edited(meta(stages="[" * 100000 + "]" * 100000)), "stages is not valid JSON")
    refused(edited(meta(attention='{"batch": 1e999}')), "attention.batch")
    refused(edited(meta(stages='[{"name": "a", "kind": "bogus"}]')), "kind 'bogus'")
    refused(edited(meta(stages='[{"name": "a", "kind": "state"}, {"name": "a", "kind": "merge"}]')), "used twice")
    refused(edited(meta(stages='[{"name": "a\\u0001", "kind": "state"}]')), "control characters")
    att = json.loads(header["__metadata__"]["attention"])
    # The C++ validate()'s rules (base/attention_spec.cpp), which the CLI applies: the readers agree.
    for change, pattern in (({"heads_kv": 3}, "heads_kv = 3"), ({"seq_q": 0}, "seq_q"),
                            ({"dtype": "fp8"}, "dtype 'fp8'"), ({"causal": "diagonal"}, "causal"),
                            ({"kv_lens": [1, 2, 3]}, "kv_lens"), ({"head_dim": 16}, "head_dim"),
                            ({"scale": -0.5}, "scale = -0.5 must be a finite number >= 0"),
                            ({"softcap": -1}, "softcap = -1"), ({"window_left": 2**40}, "window_left"),
                            ({"head_dim": 2048, "batch": 1}, "head_dim = 2048"),
                            ({"alibi_slopes": [float("nan")] * att["heads_q"]}, "alibi_slopes")):
        refused(edited(meta(attention=json.dumps({**att, **change}))), pattern)
    refused(edited(lambda h: h.update({"extra.l": h.pop("events.l")})), "events.l is missing")
    refused(edited(lambda h: h["events.stage"].update(dtype="U32")), "events.stage is U32, must be I32")
    # Event headers out of range, one column at a time.
    for column, value, pattern in (("events.stage", 9, r"event 1: stage = 9"), ("events.rows", 99, "rows = 99"),
                                   ("events.head", 2, "head = 2"), ("events.q_begin", 7, "q_begin = 7"),
                                   ("events.num_key_ranges", 9, "num_key_ranges = 9"),
                                   ("events.convention", 16, "convention = 16"), ("events.step", -1, "step = -1"),
                                   ("events.key_ranges", 129 if False else 1000, "key range 0 = \\[")):
        index = 1 if column != "events.key_ranges" else 1 * 2 * header["events.key_ranges"]["shape"][1] + 1
        refused(edited(lambda h: None, poke(header, data, column, index, value)), pattern)


def test_stage_pass_limit_is_the_cli_s(good, tmp_path, cli):
    """A stage's pass runs from 0 to MAX_STAGE_PASS (1000) in the reader, the writer and the C++
    reader (kMaxStagePass) alike: 1000 is accepted by all three, 1001 refused by all three (was: the
    Python reader and writer took any pass the C++ reader refused)."""
    from tilescope.trace import MAX_STAGE_PASS
    from tilescope.writer import RecorderError, stage_table
    assert MAX_STAGE_PASS == 1000  # docs/trace-format.md
    header, data = split(good)
    stages = json.loads(header["__metadata__"]["stages"])
    for p in (MAX_STAGE_PASS, MAX_STAGE_PASS + 1):
        h = json.loads(json.dumps(header))
        h["__metadata__"]["stages"] = json.dumps([{**s, "pass": p} for s in stages])
        path = write(tmp_path, join(h, data), f"pass{p}.trace.safetensors")
        info = run(cli, "info", path, ok=(0, 2))
        if p <= 1000:
            assert info.returncode == 0, info.stderr
            assert [s.pass_ for s in tilescope.load(path).stages][:len(stages)] == [p] * len(stages)
            assert [s.pass_ for s in stage_table([(s["name"], s["kind"], p) for s in stages])] == [p] * len(stages)
        else:
            assert info.returncode == 2 and "[0, 1000]" in info.stderr, info.stderr
            refused(path, "pass 1001 must be an integer from 0 to 1000")
            with pytest.raises(RecorderError, match="pass 1001; a pass from 0 to 1000"):
                stage_table([(stages[0]["name"], stages[0]["kind"], p)])


def test_inputs_defects(good, tmp_path):
    header, data = split(good)
    refused(write(tmp_path, join(header, poke(header, data, "inputs.q_pairs", 1, 5))), "inputs.q_pairs: .* outside")
    refused(write(tmp_path, join(header, poke(header, data, "inputs.q_pairs", 3, 0))), "listed twice")
    h = json.loads(json.dumps(header))
    h.pop("inputs.v")
    # The data buffer must still be covered: drop v's bytes by giving them to an extra tensor.
    h["extra.v"] = header["inputs.v"]
    refused(write(tmp_path, join(h, data)), "must come together")


def edit_meta(tmp_path, path, change):
    """The file with its metadata changed by change(meta) (the data as it was)."""
    header, data = split(path)
    h = json.loads(json.dumps(header))
    change(h["__metadata__"])
    return write(tmp_path, join(h, data))


def edit_recipe(tmp_path, path, change):
    """The file with its inputs_generated JSON changed by change(recipe)."""
    def edit(meta):
        g = json.loads(meta["inputs_generated"])
        change(g)
        meta["inputs_generated"] = json.dumps(g)
    return edit_meta(tmp_path, path, edit)


def test_the_recipe_file_loads(recipe, good):
    header, _ = split(recipe)
    assert not any(k.startswith("inputs.") for k in header) and "inputs_generated" in header["__metadata__"]
    assert tilescope.load(recipe).inputs.k.shape == tilescope.load(good).inputs.k.shape


def test_recipe_edited_seed_or_hash_names_the_tensor_and_both_hashes(recipe, tmp_path, rng):
    meta = split(recipe)[0]["__metadata__"]
    hashes = json.loads(meta["inputs_generated"])["sha256"]
    seed = int(meta["inputs_seed"])
    other = int(rng.integers(0, 2**63)) * 2 + 1
    other = other if other != seed else seed + 1
    e = refused(edit_meta(tmp_path, recipe, lambda m: m.update(inputs_seed=str(other))),
                "inputs.q re-made from seed %d .* has SHA-256 [0-9a-f]{64}, the trace recorded %s"
                % (other, hashes["q"]))
    assert hashes["q"] in str(e)
    for name in ("q", "k", "v"):
        forged = "".join(rng.choice(list("0123456789abcdef"), 64))
        refused(edit_recipe(tmp_path, recipe, lambda g: g["sha256"].update({name: forged})),
                "inputs.%s re-made .* has SHA-256 %s, the trace recorded %s" % (name, hashes[name], forged))
    # The spec is part of what the hash covers: another distribution, scale or preset is refused.
    for key, value in (("inputs_distribution", "uniform"), ("inputs_scale", "1.5"), ("inputs_preset", "large_logits")):
        refused(edit_meta(tmp_path, recipe, lambda m: m.update({key: value})), "inputs.q re-made .* has SHA-256")


def test_recipe_fields_are_checked(recipe, good, tmp_path):
    meta = lambda **kv: (lambda m: m.update(kv))  # noqa: E731
    for change, pattern in (
            (meta(inputs_seed="-1"), "inputs_seed. = '-1' is not a whole number below 2\\^64"),
            (meta(inputs_seed=str(2**64)), "not a whole number below 2\\^64"),
            (meta(inputs_seed="1" * 5000), "not a whole number below 2\\^64"),
            (meta(inputs_seed="0x10"), "not a whole number"),
            (meta(inputs_seed=""), "not a whole number"),
            (meta(inputs_distribution="cauchy"), "inputs_distribution. = 'cauchy' is not normal or uniform"),
            (meta(inputs_preset="all_zero"), "inputs_preset. = 'all_zero' is not none"),
            (meta(inputs_scale="NaN"), "inputs_scale. = 'NaN' is not a finite number > 0"),
            (meta(inputs_scale="1e999"), "inputs_scale"),
            (meta(inputs_scale="-2"), "inputs_scale"),
            (meta(inputs_scale="0"), "inputs_scale"),
            (meta(inputs_scale="true"), "inputs_scale"),
            (meta(inputs_scale="[1]"), "inputs_scale"),
            (lambda m: m.pop("inputs_seed"), "metadata key 'inputs_seed' is missing"),
            (lambda m: m.pop("inputs_preset"), "metadata key 'inputs_preset' is missing"),
            (meta(inputs_generated="[1, 2]"), "inputs_generated' is not a JSON object"),
            (meta(inputs_generated="{" * 100000), "inputs_generated' is not a JSON object"),
    ):
        refused(edit_meta(tmp_path, recipe, change), pattern)
    for change, pattern in (
            (lambda g: g.update(generator="tilescope-counter-2"), "generator 'tilescope-counter-2', which this reader"),
            (lambda g: g.pop("generator"), "does not name its generator"),
            (lambda g: g.update(q_pairs=[[0, 2]]), "'q_pairs' holds \\[0, 2\\], outside the attention"),
            (lambda g: g.update(q_pairs=[[1, 0]]), "'q_pairs' holds \\[1, 0\\], outside"),
            (lambda g: g.update(kv_pairs=[[0, -1]]), "'kv_pairs' holds \\[0, -1\\], outside"),
            (lambda g: g.update(kv_pairs=[[0, 2**40]]), "outside the attention"),
            (lambda g: g.update(q_pairs=[[0, 1], [0, 1]]), "lists \\[0, 1\\] twice"),
            (lambda g: g.update(q_pairs=[[0, 0]] * 10**5), "lists 100000 pairs; the attention has 1 x 2"),
            (lambda g: g.update(q_pairs=[[0, 1.0]]), "not a \\[batch, head\\] pair"),
            (lambda g: g.update(q_pairs=[[0, True]]), "not a \\[batch, head\\] pair"),
            (lambda g: g.update(q_pairs=[[0]]), "not a \\[batch, head\\] pair"),
            (lambda g: g.update(q_pairs={"0": 1}), "no list 'q_pairs'"),
            (lambda g: g.pop("kv_pairs"), "no list 'kv_pairs'"),
            (lambda g: g.pop("sha256"), "no 'sha256' object"),
            (lambda g: g["sha256"].update(k=g["sha256"]["k"].upper()), "sha256 of k is not 64 lowercase hex"),
            (lambda g: g["sha256"].update(v=g["sha256"]["v"][:63]), "sha256 of v is not 64 lowercase hex"),
            (lambda g: g["sha256"].pop("q"), "sha256 of q is not 64 lowercase hex"),
    ):
        refused(edit_recipe(tmp_path, recipe, change), pattern)
    # A trace holds its inputs or their recipe, never both.
    generated = split(recipe)[0]["__metadata__"]
    recipe_keys = {k: v for k, v in generated.items() if k.startswith("inputs_")}
    both = edit_meta(tmp_path, good, lambda m: m.update(recipe_keys))
    refused(both, "inputs.\\* tensors and an inputs_generated recipe")


def test_recipe_of_absurd_size_is_refused_before_anything_is_made(recipe, tmp_path, monkeypatch):
    made = []
    real = tilescope.trace._random_inputs.make_head_inputs
    monkeypatch.setattr(tilescope.trace._random_inputs, "make_head_inputs",
                        lambda *a, **k: made.append(1) or real(*a, **k))
    header = split(recipe)[0]
    att = json.loads(header["__metadata__"]["attention"])
    # A sequence of 2^31 - 1 keys: the events still fit it, the K and V it implies do not.
    huge = edit_meta(tmp_path, recipe, lambda m: m.update(attention=json.dumps({**att, "seq_kv": 2**31 - 1})))
    refused(huge, "re-making them takes %d bytes .* more than the" % (4 * 64 * (2 * 8 + 2 * 2 * (2**31 - 1))))
    assert not made
    # The stated bound, exactly: the file's own size is allowed, one byte less is not.
    size = 4 * 64 * (2 * 8 + 2 * 2 * 128)
    monkeypatch.setattr(tilescope.trace, "MAX_REMADE_INPUT_BYTES", size - 1)
    refused(recipe, "re-making them takes %d bytes" % size)
    assert not made
    monkeypatch.setattr(tilescope.trace, "MAX_REMADE_INPUT_BYTES", size)
    assert tilescope.load(recipe).inputs.v.shape == (2, 128, 64) and made


def sparse_file(path, header, data_bytes):
    """A safetensors file: `header`, then `data_bytes` of data that are a hole (no disk, no time)."""
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + data_bytes)
    return path


def load_error_within_2_gib(path):
    """What loading `path` raises, in a process that cannot hold more than 2 GiB: its type and text."""
    script = (
        "import resource, sys, tilescope\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "try:\n"
        "    tilescope.load(sys.argv[1])\n"
        "except BaseException as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_damaged_header_is_refused_before_the_data_are_read(tmp_path):
    # 8 GiB of (sparse) data behind a header whose tensor does not cover them: refused from the
    # header, in a process that could not even hold the data (it read them all and died of a
    # MemoryError, or took the machine's memory).
    path = sparse_file(tmp_path / "bad.trace.safetensors",
                       {"t": {"dtype": "U8", "shape": [16], "data_offsets": [0, 16]}}, 8 << 30)
    error = load_error_within_2_gib(path)
    assert error.startswith("TraceFormatError"), error
    assert str(path) in error and "no tensor covers" in error, error


def test_a_file_larger_than_the_memory_available_is_refused_with_its_size(tmp_path):
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    path = sparse_file(tmp_path / "huge.trace.safetensors",
                       {"t": {"dtype": "U8", "shape": [2 * memory], "data_offsets": [0, 2 * memory]}}, 2 * memory)
    with pytest.raises(OSError, match="more than the memory available to read it into") as info:
        tilescope.load(path)
    assert str(path) in str(info.value)


def test_files_that_cannot_be_read(tmp_path):
    with pytest.raises(FileNotFoundError):
        tilescope.load(tmp_path / "absent.trace.safetensors")
    # A folder is named in the message (was: "[Errno 21] Is a directory: 3", the descriptor).
    with pytest.raises(OSError, match="not a regular file") as folder:
        tilescope.load(tmp_path)
    assert str(tmp_path) in str(folder.value)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        tilescope.load(fifo)


def test_outputs_replace_only_regular_files(tmp_path):
    """A trace written over a FIFO, a folder or a dangling link is refused and they stay; a link to
    a file writes the file and stays a link (was: a FIFO, or as root a device, replaced by the
    trace; a link replaced by a file)."""
    from tilescope._safetensors import read_safetensors, write_safetensors
    tensors = {"x": ("F32", np.arange(3, dtype=np.float32))}
    fifo, folder, dangling = tmp_path / "fifo", tmp_path / "folder", tmp_path / "dangling"
    os.mkfifo(fifo)
    folder.mkdir()
    dangling.symlink_to(tmp_path / "nowhere")
    for target, what in ((fifo, "FIFO"), (folder, "folder"), (dangling, "symbolic link to nothing")):
        with pytest.raises(OSError, match=what):
            write_safetensors(target, tensors, {})
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and folder.is_dir() and dangling.is_symlink()
    real, link = tmp_path / "real.safetensors", tmp_path / "link.safetensors"
    real.write_bytes(b"the previous file")
    link.symlink_to(real)
    write_safetensors(link, tensors, {})
    assert link.is_symlink()
    assert read_safetensors(real)[0]["x"].dtype == "F32"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "fifo", "folder", "link.safetensors",
                                                         "real.safetensors"]


def test_a_trace_replaces_only_a_trace(good, tmp_path, rng):
    """The trace writer replaces nothing but an empty file or a tilescope trace: someone's notes, a
    safetensors file of other tensors, or the file a link leads to stay as they were (was: replaced
    by the trace)."""
    from tilescope._safetensors import write_safetensors
    tensors = {"x": ("F32", np.arange(3, dtype=np.float32))}
    notes = tmp_path / "notes.txt"
    notes.write_bytes(bytes(rng.integers(0, 256, size=int(rng.integers(1, 3000)), dtype=np.uint8)))
    weights = tmp_path / "weights.safetensors"
    write_safetensors(weights, tensors, {"owner": "someone"})
    link = tmp_path / "link.safetensors"
    link.symlink_to(notes)
    for target in (notes, weights, link):
        before = target.read_bytes()
        with pytest.raises(OSError, match="is not a tilescope trace"):
            write_safetensors(target, tensors, {"tilescope_format": "2"}, replaces_only="tilescope_format")
        assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.safetensors", "notes.txt", "weights.safetensors"]
    # A trace, an empty file and a new path are written.
    trace = tmp_path / "old.trace.safetensors"
    trace.write_bytes(good.read_bytes())
    empty = tmp_path / "empty.safetensors"
    empty.write_bytes(b"")
    for target in (trace, empty, tmp_path / "new.safetensors"):
        write_safetensors(target, tensors, {"tilescope_format": "2"}, replaces_only="tilescope_format")
        assert target.stat().st_size > 0


def test_a_shape_of_no_elements_but_huge_dimensions_is_a_format_error(good, tmp_path):
    """A tensor of zero elements whose other dimensions are huge is refused as the C++ reader refuses
    it (its byte size overflows), naming the file (was: numpy's ValueError)."""
    header, data = split(good)
    header["extra.zero"] = {"dtype": "F32", "shape": [2**62, 0, 2**62], "data_offsets": [len(data), len(data)]}
    refused(write(tmp_path, join(header, data)), "byte size overflows")
    header["extra.zero"]["dtype"] = "U8"  # within uint64 dimension by dimension; numpy still cannot hold it
    header["extra.zero"]["shape"] = [2**62, 0, 2**61]
    refused(write(tmp_path, join(header, data)), "extra.zero")


def test_written_files_get_the_usual_permissions_and_errors_name_the_users_path(good, tmp_path):
    """A trace written from Python gets mode 0666 less the umask, as the CLI's (was: 0600 from its
    temporary file, also over a 0644 trace); a missing folder, an empty path and a folder that cannot
    be written name the user's path, not a temporary file's, and leave nothing behind."""
    from tilescope._safetensors import write_safetensors
    tensors = {"x": ("F32", np.arange(3, dtype=np.float32))}
    old = os.umask(0o022)
    try:
        target = tmp_path / "t.trace.safetensors"
        target.write_bytes(good.read_bytes())
        os.chmod(target, 0o644)
        write_safetensors(target, tensors, {"tilescope_format": "2"}, replaces_only="tilescope_format")
        assert stat.S_IMODE(target.stat().st_mode) == 0o644
        os.umask(0o027)
        fresh = tmp_path / "fresh.trace.safetensors"
        write_safetensors(fresh, tensors, {"tilescope_format": "2"})
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o640
    finally:
        os.umask(old)
    with pytest.raises(OSError, match=r"missing/dir/x\.trace\.safetensors: the folder .* does not exist"):
        write_safetensors(tmp_path / "missing" / "dir" / "x.trace.safetensors", tensors, {})
    with pytest.raises(OSError, match="the output path is empty"):
        write_safetensors("", tensors, {})
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(OSError, match=r"cannot write .*locked/x\.trace\.safetensors: cannot create a file"):
            write_safetensors(locked / "x.trace.safetensors", tensors, {})
    assert not [p for p in tmp_path.rglob(".tilescope-*")]


WRITER = '''
import os, signal, sys, time
import numpy as np
from tilescope import _safetensors as s
real_fsync = os.fsync
def slow_fsync(fd):
    print("writing", flush=True)
    time.sleep(30)
    real_fsync(fd)
os.fsync = slow_fsync
s.write_safetensors(sys.argv[1], {"x": ("F32", np.zeros(1 << 20, dtype=np.float32))}, {"tilescope_format": "2"},
                    replaces_only="tilescope_format")
'''


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_while_a_trace_is_written_leaves_the_previous_file_and_no_temporary_one(good, tmp_path, sig):
    """SIGTERM, SIGHUP (was: a full-size hidden temporary file left in the folder) and SIGINT in the
    middle of a write: the process ends by the signal, the previous trace is as it was, and no
    temporary file is left."""
    import subprocess
    import sys
    target = tmp_path / "t.trace.safetensors"
    target.write_bytes(good.read_bytes())
    before = target.read_bytes()
    def not_ignored():  # a test runner may start us with the signals ignored, which exec keeps
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_DFL)

    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True,
                            preexec_fn=not_ignored)
    try:
        assert proc.stdout.readline().strip() == "writing"
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tilescope-")]
        proc.send_signal(sig)
        proc.wait(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -sig  # SIGINT too: Python ends an unhandled KeyboardInterrupt by the signal
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.trace.safetensors"]


@pytest.mark.parametrize("which", ["good", "recipe"])
def test_random_corruption_never_escapes_as_another_error(which, request, tmp_path, rng):
    """Random byte flips anywhere in the file: loaded (a payload flip) or TraceFormatError."""
    raw = bytearray(open(request.getfixturevalue(which), "rb").read())
    for _ in range(300):
        bad = bytearray(raw)
        for at in rng.integers(0, len(raw), size=int(rng.integers(1, 4))):
            bad[at] = int(rng.integers(0, 256))
        p = write(tmp_path, bytes(bad), "flip.trace.safetensors")
        try:
            tilescope.load(p)
        except TraceFormatError:
            pass
