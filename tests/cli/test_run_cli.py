"""`snet run` as a user runs it: exit statuses, streams, errors, interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SNET = [sys.executable, "-m", "snet"]


def snet_run(*args, cwd, stdin=None, timeout=120):
    return subprocess.run(SNET + ["run", *map(str, args)], cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def netdir(tmp_path: Path) -> Path:
    (tmp_path / "net.snet").write_text(
        "net pipeline {\n  box inc ((a) -> (a));\n  box check ((a) -> (a));\n} connect inc .. check;\n")
    (tmp_path / "net.py").write_text(
        "def inc(a):\n    return {'a': a + 1}\n\n"
        "def check(a):\n    if a == 13:\n        raise ValueError('thirteen')\n    return {'a': a}\n")
    return tmp_path


def read_jsonl(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_pipe_in_pipe_out(netdir):
    result = snet_run("net.snet", "--engine", "reference", cwd=netdir, stdin='{"a": 1}\n\n{"a": 2}\n')
    assert result.returncode == 0, result.stderr
    assert read_jsonl(result.stdout) == [{"a": 2}, {"a": 3}]


def test_files_and_formats(netdir):
    (netdir / "in.jsonl").write_text('{"a": 1, "<t>": 4}\n')
    result = snet_run("net.snet", "-i", "in.jsonl", "-o", "out.xml", "--engine", "reference", cwd=netdir)
    assert result.returncode == 0, result.stderr
    text = (netdir / "out.xml").read_text()
    assert "(int)2" in text and 'type="terminate"' in text
    result = snet_run("net.snet", "-i", "out.xml", "--format", "jsonl", "--input-format", "xml",
                      "--engine", "reference", cwd=netdir)
    assert result.returncode == 0, result.stderr
    assert read_jsonl(result.stdout) == [{"a": 3, "<t>": 4}]


def test_box_error_exit_1_after_earlier_outputs(netdir):
    inputs = "".join(json.dumps({"a": a}) + "\n" for a in (1, 2, 12, 5))
    result = snet_run("net.snet", "-o", "out.jsonl", "--engine", "reference", cwd=netdir, stdin=inputs)
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith("net.snet:4:18: error: box 'check' raised ValueError: thirteen"), result.stderr
    assert read_jsonl((netdir / "out.jsonl").read_text()) == [{"a": 2}, {"a": 3}]


def test_bad_input_record_exit_1_after_earlier_outputs(netdir):
    result = snet_run("net.snet", "--engine", "reference", cwd=netdir, stdin='{"a": 1}\n{"a": 2\n{"a": 3}\n')
    assert result.returncode == 1
    assert read_jsonl(result.stdout) == [{"a": 2}]
    assert "<stdin>:2:" in result.stderr


@pytest.mark.parametrize("args,message", [
    (["missing.snet"], "network file not found: missing.snet"),
    (["net.snet", "-i", "nothere.jsonl"], "input file not found: nothere.jsonl"),
    (["net.snet", "--boxes", "no_such_box_module"], "cannot find box module 'no_such_box_module'"),
    (["net.snet", "-w", "0"], "-w/--workers must be at least 1"),
    (["net.snet", "--throttle", "x"], "--throttle takes OFFSET,FACTOR"),
    (["net.snet", "--engine", "warp"], "unknown engine 'warp'"),
])
def test_start_up_errors_exit_2(netdir, args, message):
    result = snet_run(*args, cwd=netdir, stdin="")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr


def test_missing_boxes_exit_2_before_reading_input(netdir):
    (netdir / "net.py").write_text("def inc(a):\n    return {'a': a}\n")
    result = snet_run("net.snet", "--engine", "reference", cwd=netdir, stdin='{"a": 1}\n')
    assert result.returncode == 2
    assert "declared box 'check' not found" in result.stderr
    assert result.stdout == ""


def test_syntax_error_exit_2_with_caret(netdir):
    (netdir / "bad.snet").write_text("net bad connect [{a} -> {b=a}\n")
    result = snet_run("bad.snet", cwd=netdir, stdin="")
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("bad.snet:")
    assert ": error: " in lines[0]
    assert any(line.strip() == "^" for line in lines)


def test_unfinished_cell_warning_and_stats(netdir):
    (netdir / "sync.snet").write_text("net sync connect [| {a}, {b} |];\n")
    for engine in ("reference", "front"):
        result = snet_run("sync.snet", "--engine", engine, "--stats", "--stats-json", "s.json", cwd=netdir,
                          stdin='{"a": 1}\n')
        assert result.returncode == 0
        assert "sync.snet:1:18: warning: synchro-cell discarded with 1 of 2 patterns filled" in result.stderr
        assert "records held in synchro-cells that never fired: 1" in result.stderr
        stats = json.loads((netdir / "s.json").read_text())
        assert stats["records_in"] == 1 and stats["records_out"] == 0 and stats["held_in_cells"] == 1


@pytest.mark.slow
def test_progress_lines(netdir):
    (netdir / "slow.snet").write_text("box slow ((a) -> (a)); net slownet connect slow;\n")
    (netdir / "slow.py").write_text("import time\n\ndef slow(a):\n    time.sleep(0.01)\n    return {'a': a}\n")
    (netdir / "in.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(60)))
    for engine in ("front", "reference"):
        result = snet_run("slow.snet", "-i", "in.jsonl", "-o", "out.jsonl", "--engine", engine, "--progress", "0.1",
                          cwd=netdir)
        assert result.returncode == 0, result.stderr
        lines = [line for line in result.stderr.splitlines() if line.startswith("snet progress: ")]
        assert len(lines) >= 2, result.stderr  # 60 calls of 10 ms: several intervals of 0.1 s
        assert lines[-1].startswith("snet progress: done, ") and "in 60, out 60" in lines[-1], lines
        assert read_jsonl((netdir / "out.jsonl").read_text()) == [{"a": i} for i in range(60)]
    result = snet_run("slow.snet", "-i", "in.jsonl", "--progress", "0", cwd=netdir)
    assert result.returncode == 2 and "--progress takes a positive number" in result.stderr


def default_sigint() -> None:
    """In the child before it starts: SIGINT as a terminal delivers it.  A shell that runs the tests in
    the background without job control ignores SIGINT, and a child would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(proc: subprocess.Popen, mark: Path) -> str:
    """Ctrl-C for ``proc`` once its boxes have made ``mark`` (a file; 300 s at most, an upper bound only);
    its standard error.  Killed if it is still running 30 s after Ctrl-C (the test then fails on its exit
    status), so that no run is left behind."""
    deadline = time.monotonic() + 300
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[1]


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery to a child process")
@pytest.mark.parametrize("engine", ["reference", "front"])
def test_ctrl_c_stops_cleanly_with_outputs_written(netdir, engine):
    (netdir / "slow.snet").write_text("box slow ((a) -> (a)); net slownet connect slow;\n")
    # The 100th call leaves a mark: by then the calls before it have made their outputs (with fewer than
    # 100 workers), and Ctrl-C comes.
    (netdir / "slow.py").write_text("import time\n\ndef slow(a):\n    if a == 100:\n"
                                    "        open('called-100', 'w').close()\n"
                                    "    time.sleep(0.02)\n    return {'a': a}\n")
    (netdir / "many.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(100000)))
    proc = subprocess.Popen(SNET + ["run", "slow.snet", "-i", "many.jsonl", "-o", "out.jsonl", "--engine",
                                    engine], cwd=netdir, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    err = interrupt(proc, netdir / "called-100")
    assert proc.returncode == 1
    assert "interrupted" in err
    out = read_jsonl((netdir / "out.jsonl").read_text())
    assert 0 < len(out) < 100000
    assert out == [{"a": i} for i in range(len(out))]


def test_stats_summary_lists_each_spark_split():
    from snet.stats import BoxStats, RunStats, SparkStats, SplitStats

    split = SplitStats(split="net.snet:1:35", path="rdd", partitions=2, replicas=0, batches=2, records=8, copies=0,
                       tasks=4, seconds=1.5, job_seconds=1.25, max_batch_seconds=1.0, seconds_per_batch=0.75,
                       executor_seconds=2.0, bytes_out=100, bytes_in=50, boxes={"f": BoxStats(8, 0.5)})
    spark = SparkStats(master="local[2]", batch_size=4096, selected=("net.snet:1:35",), flushes=2, seconds=1.5,
                       splits={"net.snet:1:35": split})
    text = RunStats(engine="reference", workers=1, seconds=2.0, records_in=8, records_out=8, spark=spark).summary()
    lines = [line.strip() for line in text.splitlines()]
    assert "on Spark (local[2]): 2 batches, 8 records, 1.5 s" in lines, text
    assert "split at net.snet:1:35: 2 batches, 8 records, 4 tasks, 1.5 s" in lines, text
    assert any(line.startswith("box f: 8 calls, ") and line.endswith(" in the tasks") for line in lines), text


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery to a child process")
@pytest.mark.parametrize("engine", ["reference", "front"])
def test_after_ctrl_c_the_stats_count_the_records_written(netdir, engine):
    (netdir / "fast.snet").write_text("box keep ((a) -> (a)); net fastnet connect keep .. keep;\n")
    # The 1000th call of the first `keep` leaves a mark (the second `keep` sees inputs 0..999 too, so some
    # outputs have been made by then), and Ctrl-C comes.
    (netdir / "fast.py").write_text("import time\n\ndef keep(a):\n    if a == 1000:\n"
                                    "        open('called-1000', 'w').close()\n"
                                    "    time.sleep(0.0005)\n    return {'a': a}\n")
    (netdir / "many.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(200000)))
    proc = subprocess.Popen(SNET + ["run", "fast.snet", "-i", "many.jsonl", "-o", "out.jsonl", "--engine", engine,
                                    "-w", "2", "--stats", "--stats-json", "s.json"],
                            cwd=netdir, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    err = interrupt(proc, netdir / "called-1000")
    assert proc.returncode == 1, err
    written = len(read_jsonl((netdir / "out.jsonl").read_text()))
    assert 0 < written < 200000
    stats = json.loads((netdir / "s.json").read_text())
    assert stats["records_out"] == written
    assert stats["records_produced"] >= written
    assert f" read, {written} written" in err
