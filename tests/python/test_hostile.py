"""Poisoned files: every one refused with a TraceFormatError that names the file and the problem,
before anything the file claims is allocated."""
import json
import os
import struct

import pytest

import tilescope
from tilescope import TraceFormatError


@pytest.fixture(scope="module")
def good(capture):
    return capture("--kernel", "splitk", "--heads", 2, "--seq-q", 8, "--seq-kv", 128, "--splits", 2, "--seed", 4)


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
    for change, pattern in (({"heads_kv": 3}, "not a multiple"), ({"seq_q": 0}, "seq_q"),
                            ({"dtype": "fp8"}, "dtype 'fp8'"), ({"causal": "diagonal"}, "causal"),
                            ({"kv_lens": [1, 2, 3]}, "kv_lens"), ({"head_dim": 16}, "head_dim")):
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


def test_inputs_defects(good, tmp_path):
    header, data = split(good)
    refused(write(tmp_path, join(header, poke(header, data, "inputs.q_pairs", 1, 5))), "inputs.q_pairs: .* outside")
    refused(write(tmp_path, join(header, poke(header, data, "inputs.q_pairs", 3, 0))), "listed twice")
    h = json.loads(json.dumps(header))
    h.pop("inputs.v")
    # The data buffer must still be covered: drop v's bytes by giving them to an extra tensor.
    h["extra.v"] = header["inputs.v"]
    refused(write(tmp_path, join(h, data)), "must come together")


def test_files_that_cannot_be_read(tmp_path):
    with pytest.raises(FileNotFoundError):
        tilescope.load(tmp_path / "absent.trace.safetensors")
    with pytest.raises(OSError):
        tilescope.load(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        tilescope.load(fifo)


def test_random_corruption_never_escapes_as_another_error(good, tmp_path, rng):
    """Random byte flips anywhere in the file: loaded (a payload flip) or TraceFormatError."""
    raw = bytearray(open(good, "rb").read())
    for _ in range(300):
        bad = bytearray(raw)
        for at in rng.integers(0, len(raw), size=int(rng.integers(1, 4))):
            bad[at] = int(rng.integers(0, 256))
        p = write(tmp_path, bytes(bad), "flip.trace.safetensors")
        try:
            tilescope.load(p)
        except TraceFormatError:
            pass
