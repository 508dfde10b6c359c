"""tilescope.diff, the Report object, the pytest assertion and `python -m tilescope`: all through
the CLI, checked against the CLI's own output."""
import json
import os
import subprocess
import sys

import pytest

import tilescope
from tilescope.testing import assert_attention_matches

from conftest import REPO, installed, run


def test_version_is_the_cli_and_the_cmake_projects(cli):
    out = run(cli, "--version").stdout
    assert out.split()[1] == tilescope.__version__, out
    from tilescope._paths import cmake_version_of
    assert cmake_version_of(REPO / "CMakeLists.txt") == tilescope.__version__
    if installed():
        from importlib.metadata import version
        assert version("tilescope") == tilescope.__version__


def test_a_file_name_that_starts_with_a_dash(capture, tmp_path, monkeypatch):
    """Was: tilescope.diff("-run.trace.safetensors") failed with the CLI's "run is required"."""
    trace = capture("--kernel", "fa1", "--seq-q", 16, "--seq-kv", 64, "--seed", 3)
    (tmp_path / "-run.trace.safetensors").write_bytes(open(trace, "rb").read())
    monkeypatch.chdir(tmp_path)
    assert tilescope.diff("-run.trace.safetensors").clean
    assert tilescope.diff("-run.trace.safetensors", against="-run.trace.safetensors").clean


def test_a_loaded_trace_is_diffed_from_its_own_file(capture, tmp_path, monkeypatch):
    """tilescope.diff(trace) analyses the file load() read, wherever the process has moved since, and
    refuses one that changed after it (was: the relative path was re-read from the new working
    folder, so a clean trace was reported as diverging because a faulty file of that name sat
    there); a report's text is refused once its file changed."""
    args = ("--kernel", "splitk", "--heads", 2, "--seq-q", 16, "--seq-kv", 256, "--splits", 4, "--seed", 23)
    clean, bad = capture(*args), capture(*args[:2], "--fault", "double_count_l", *args[2:])
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    (here / "run.trace.safetensors").write_bytes(open(clean, "rb").read())
    (there / "run.trace.safetensors").write_bytes(open(bad, "rb").read())
    monkeypatch.chdir(here)
    t = tilescope.load("run.trace.safetensors")
    assert t.path == "run.trace.safetensors"
    monkeypatch.chdir(there)
    assert tilescope.diff(t).clean
    assert not tilescope.diff("run.trace.safetensors").clean
    report = tilescope.diff(b"run.trace.safetensors")  # a bytes path, as load() takes
    assert not report.clean
    (there / "run.trace.safetensors").write_bytes(open(clean, "rb").read())
    with pytest.raises(OSError, match="changed since the report was made"):
        report.text
    (here / "run.trace.safetensors").write_bytes(open(bad, "rb").read())
    with pytest.raises(OSError, match="changed since run.trace.safetensors was loaded"):
        tilescope.diff(t)
    with pytest.raises(TypeError, match="returned None"):
        assert_attention_matches(lambda: None)


def test_clean_and_faulty_reports(cli, capture):
    clean = capture("--kernel", "splitk", "--heads", 2, "--seq-q", 16, "--seq-kv", 256, "--splits", 4, "--seed", 21)
    bad = capture("--kernel", "splitk", "--fault", "double_count_l", "--heads", 2, "--seq-q", 16, "--seq-kv", 256,
                  "--splits", 4, "--seed", 21)
    r = tilescope.diff(clean)
    assert r.clean and r.first_divergence is None and r.mechanism is None
    assert r.verdict == json.loads(run(cli, "diff", clean, "--json").stdout)["verdict"]
    f = tilescope.diff(tilescope.load(bad))
    cli_json = json.loads(run(cli, "diff", bad, "--json", ok=(1,)).stdout)
    assert not f.clean
    assert f.data == cli_json
    assert f.symptom_kind == "reduce_scaled_by_l" and f.origin_stage == "splitk.reduce"
    assert f.first_divergence["stage"] == "splitk.reduce"
    assert f.stages["splitk.partial"]["verdict"] == "clean" and f.stages["splitk.reduce"]["verdict"] != "clean"
    assert f.worst_cell["error_over_allowed"] > 1
    assert "splitk.reduce" in f.failing_sets
    assert str(f) == run(cli, "diff", bad, ok=(1,)).stdout.rstrip("\n")
    # A/B: the faulty run against the clean one.
    ab = tilescope.diff(bad, against=clean)
    assert not ab.clean


def test_assertion_message_is_the_report(cli, capture):
    clean = capture("--kernel", "fa1", "--heads", 2, "--seq-q", 64, "--seq-kv", 160, "--causal", "--seed", 8)
    report = assert_attention_matches(clean)
    assert report.clean
    bad = capture("--kernel", "fa1", "--fault", "per_tile_softmax", "--heads", 2, "--seq-q", 64, "--seq-kv", 160,
                  "--seed", 8)
    with pytest.raises(AssertionError) as info:
        assert_attention_matches(lambda: bad)
    text = run(cli, "diff", bad, ok=(1,)).stdout.rstrip("\n")
    message = str(info.value)
    assert message.endswith(text)
    assert "no_online_rescale" in message and "first divergence:" in message and "worst cell:" in message
    with pytest.raises(AssertionError, match=r"^my kernel\n"):
        assert_attention_matches(bad, msg="my kernel")


def test_cli_refusal_and_missing_cli(capture, tmp_path, monkeypatch):
    junk = tmp_path / "junk.trace.safetensors"
    junk.write_bytes(b"\x00" * 64)
    with pytest.raises(tilescope.CliError) as info:
        tilescope.diff(junk)
    assert info.value.returncode == 2 and "junk.trace.safetensors" in str(info.value)
    monkeypatch.setenv("TILESCOPE_CLI", str(tmp_path / "nothing"))
    with pytest.raises(tilescope.CliNotFoundError, match="TILESCOPE_CLI"):
        tilescope.diff(junk)
    monkeypatch.delenv("TILESCOPE_CLI")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(tilescope.CliNotFoundError, match="was not found"):
        tilescope.find_cli()


def test_python_m_forwards_to_the_cli(cli, capture):
    bad = capture("--kernel", "splitk", "--fault", "double_count_l", "--heads", 2, "--seq-q", 16, "--seq-kv", 256,
                  "--splits", 4, "--seed", 21)
    done = subprocess.run([sys.executable, "-m", "tilescope", "diff", str(bad)], capture_output=True, text=True,
                          env={**os.environ, "TILESCOPE_CLI": cli})
    assert done.returncode == 1
    assert done.stdout == run(cli, "diff", bad, ok=(1,)).stdout
    done = subprocess.run([sys.executable, "-m", "tilescope", "--version"], capture_output=True, text=True,
                          env={**os.environ, "TILESCOPE_CLI": cli})
    assert done.returncode == 0 and tilescope.__version__ in done.stdout
    done = subprocess.run([sys.executable, "-m", "tilescope", "--version"], capture_output=True, text=True,
                          env={**os.environ, "TILESCOPE_CLI": "/nonexistent/tilescope"})
    assert done.returncode == 3 and "TILESCOPE_CLI" in done.stderr
