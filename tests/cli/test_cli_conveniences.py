"""What a person expects of the command line: box modules by name, outputs with no extension,
a bare ``--progress``, and "did you mean" for misspelt boxes, nets and engines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SNET = [sys.executable, "-m", "snet"]


def snet(*args, cwd, stdin="", timeout=120):
    return subprocess.run(SNET + [*map(str, args)], cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=timeout)


def read_jsonl(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "net.snet").write_text("net n { box f ((a) -> (a)); } connect f;\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(3)))
    return tmp_path


# -- --boxes NAME ----------------------------------------------------------------------

def test_boxes_name_finds_name_py_in_the_current_folder(workdir):
    (workdir / "mymod.py").write_text("def f(a):\n    return {'a': a * 10}\n")
    done = snet("run", "net.snet", "--boxes", "mymod", "-i", "in.jsonl", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert read_jsonl(done.stdout) == [{"a": 0}, {"a": 10}, {"a": 20}]


def test_the_file_in_the_current_folder_wins_over_an_importable_module(workdir, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("site")
    (elsewhere / "shadowed.py").write_text("def f(a):\n    return {'a': a + 100}\n")
    (workdir / "shadowed.py").write_text("def f(a):\n    return {'a': -a}\n")
    # -P: the current folder is not on sys.path, as for the installed console script.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(elsewhere), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-P", "-m", "snet", "run", "net.snet", "--boxes", "shadowed", "-i", "in.jsonl",
               "--engine", "reference"]
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert read_jsonl(done.stdout) == [{"a": 0}, {"a": -1}, {"a": -2}]
    (workdir / "shadowed.py").unlink()
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert read_jsonl(done.stdout) == [{"a": 100}, {"a": 101}, {"a": 102}]


def test_boxes_name_still_imports_an_installed_module(workdir):
    # A module of the standard library offering a callable named like the box.
    (workdir / "net.snet").write_text("net n { box sqrt ((a) -> (a)); } connect sqrt;\n")
    done = snet("check", "net.snet", "--boxes", "math", cwd=workdir)
    assert done.returncode == 0, done.stderr


def test_a_name_neither_file_nor_module_names_both_tries(workdir):
    done = snet("run", "net.snet", "--boxes", "nosuchmod", "-i", "in.jsonl", cwd=workdir)
    assert done.returncode == 2
    line = done.stderr.splitlines()[0]
    assert "cannot find box module 'nosuchmod'" in line
    assert f"no file {workdir / 'nosuchmod.py'}" in line
    assert "importing 'nosuchmod' failed" in line
    assert "Traceback" not in done.stderr


# -- outputs and inputs with no extension ---------------------------------------------------

def test_output_to_dev_null_runs(workdir):
    (workdir / "m.py").write_text("def f(a):\n    return {'a': a}\n")
    done = snet("run", "net.snet", "--boxes", "m.py", "-i", "in.jsonl", "-o", "/dev/null", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_files_with_no_extension_are_json_lines_unless_format_says(workdir):
    (workdir / "m.py").write_text("def f(a):\n    return {'a': a + 1}\n")
    (workdir / "records").write_text((workdir / "in.jsonl").read_text())
    done = snet("run", "net.snet", "--boxes", "m.py", "-i", "records", "-o", "result", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert read_jsonl((workdir / "result").read_text()) == [{"a": 1}, {"a": 2}, {"a": 3}]
    done = snet("run", "net.snet", "--boxes", "m.py", "-i", "records", "-o", "result", "--output-format", "xml",
                cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert (workdir / "result").read_text().startswith('<?xml version="1.0" ?>')


def test_an_unknown_extension_is_still_refused(workdir):
    (workdir / "m.py").write_text("def f(a):\n    return {'a': a}\n")
    done = snet("run", "net.snet", "--boxes", "m.py", "-i", "in.jsonl", "-o", "out.csv", cwd=workdir)
    assert done.returncode == 2
    assert "cannot tell the record format of 'out.csv'" in done.stderr


# -- --progress without a number ----------------------------------------------------------

def test_bare_progress_before_the_network_file_leaves_the_file_alone(workdir):
    (workdir / "net.py").write_text("def f(a):\n    return {'a': a}\n")
    done = snet("run", "--progress", "net.snet", "-i", "in.jsonl", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert read_jsonl(done.stdout) == [{"a": 0}, {"a": 1}, {"a": 2}]
    assert "snet progress: done, " in done.stderr and "in 3, out 3" in done.stderr


def test_progress_with_seconds_still_takes_them(workdir):
    (workdir / "net.py").write_text("def f(a):\n    return {'a': a}\n")
    done = snet("run", "net.snet", "--progress", "0.5", "-i", "in.jsonl", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert "snet progress: done, " in done.stderr
    done = snet("run", "net.snet", "-i", "in.jsonl", "--progress", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert "snet progress: done, " in done.stderr


# -- did you mean ------------------------------------------------------------------------

def test_a_misspelt_box_suggests_the_function_the_module_has(workdir):
    (workdir / "net.py").write_text("def ff(a):\n    return {'a': a}\n\ndef helper():\n    pass\n")
    (workdir / "net.snet").write_text("net n { box fff ((a) -> (a)); } connect fff;\n")
    done = snet("run", "net.snet", "-i", "in.jsonl", cwd=workdir)
    assert done.returncode == 2
    assert "box 'fff' is declared here (did you mean 'ff'?)" in done.stderr


def test_a_missing_box_with_no_near_name_gets_no_suggestion(workdir):
    (workdir / "net.py").write_text("def completely_different(a):\n    return {'a': a}\n")
    done = snet("run", "net.snet", "-i", "in.jsonl", cwd=workdir)
    assert done.returncode == 2
    assert "box 'f' is declared here" in done.stderr and "did you mean" not in done.stderr


def test_a_misspelt_net_suggests_the_net(workdir):
    (workdir / "net.py").write_text("def f(a):\n    return {'a': a}\n")
    (workdir / "two.snet").write_text("net pipeline { box f ((a) -> (a)); } connect f;\n"
                                      "net other { box f ((a) -> (a)); } connect f;\n")
    done = snet("run", "two.snet", "--boxes", "net.py", "--net", "pipelin", cwd=workdir)
    assert done.returncode == 2
    assert "no top-level net 'pipelin' (did you mean 'pipeline'? top-level nets: pipeline, other)" in done.stderr


def test_a_misspelt_engine_suggests_the_engine(workdir):
    (workdir / "net.py").write_text("def f(a):\n    return {'a': a}\n")
    done = snet("run", "net.snet", "--engine", "refrence", cwd=workdir)
    assert done.returncode == 2
    assert "unknown engine 'refrence' (did you mean 'reference'? engines: front, reference)" in done.stderr


# -- -q and -v ------------------------------------------------------------------------------

@pytest.fixture
def warning_net(workdir):
    (workdir / "cell.snet").write_text("net cell { box f ((a) -> (a)); } connect f .. [| {a}, {b} |];\n")
    (workdir / "cell.py").write_text("def f(a):\n    return {'a': a}\n")
    return workdir


@pytest.mark.parametrize("engine", ["front", "reference"])
def test_quiet_drops_warnings_and_verbose_says_what_runs(warning_net, engine):
    warning = "warning: synchro-cell discarded with 1 of 2 patterns filled"
    plain = snet("run", "cell.snet", "-i", "in.jsonl", "--engine", engine, cwd=warning_net)
    assert plain.returncode == 0 and warning in plain.stderr and "info:" not in plain.stderr
    quiet = snet("run", "cell.snet", "-i", "in.jsonl", "--engine", engine, "-q", cwd=warning_net)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert quiet.stdout == plain.stdout
    verbose = snet("run", "cell.snet", "-i", "in.jsonl", "--engine", engine, "--verbose", "-o", "out.jsonl",
                   cwd=warning_net)
    assert verbose.returncode == 0 and warning in verbose.stderr
    info = [line for line in verbose.stderr.splitlines() if line.startswith("info: ")]
    assert info[0] == f"info: net cell {{a}} | {{a, b}} -> {{a, b}} | {{}}; boxes f from {warning_net / 'cell.py'}"
    assert info[1].startswith(f"info: {engine} engine") and "input in.jsonl (jsonl), output out.jsonl (jsonl)" in info[1]
    assert info[-1].startswith("info: done after ") and info[-1].endswith("; 2 records written")


def test_quiet_still_reports_errors(warning_net):
    done = snet("run", "cell.snet", "-i", "missing.jsonl", "-q", cwd=warning_net)
    assert done.returncode == 2 and "input file not found: missing.jsonl" in done.stderr
    assert snet("run", "cell.snet", "-q", "-v", cwd=warning_net).returncode == 2  # one or the other


def test_check_quiet_drops_warnings(workdir):
    (workdir / "w.snet").write_text("net w connect [{x} -> {y=w}];\n")  # w is no label of the input
    loud = snet("check", "w.snet", cwd=workdir)
    quiet = snet("check", "w.snet", "-q", cwd=workdir)
    assert loud.returncode == quiet.returncode == 0
    assert "warning:" in loud.stderr and quiet.stderr == ""
    assert loud.stdout == quiet.stdout


# -- values JSON cannot hold -----------------------------------------------------------------

STAMP_BOXES = """import datetime
import numpy as np

def stamp(a):
    if a < 2:
        return {"a": np.int64(a), "d": (np.arange(3, dtype=np.float32) * a, np.bool_(a == 1))}
    return {"a": a, "d": datetime.date(2024, 1, 1 + a)}
"""


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["front", "reference"])
def test_numpy_and_tuples_are_json_and_a_date_is_an_error_naming_the_box_unless_pickles_are_allowed(workdir, engine):
    """interfaces.md §3: a value JSON cannot hold is a run-time error naming the box, the field and the type,
    unless --allow-pickle: then it is written as {"$pickle": ...} and read back only under the same flag."""
    pytest.importorskip("numpy")
    (workdir / "stamp.snet").write_text("net stamped { box stamp ((a) -> (a, d)); } connect stamp;\n")
    (workdir / "stamp.py").write_text(STAMP_BOXES)
    done = snet("run", "stamp.snet", "-i", "in.jsonl", "-o", "out.jsonl", "--engine", engine, "-w", "1",
                cwd=workdir)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: cannot write output record 3: field 'd' holds a datetime.date, which JSON cannot hold (made by box "
        "'stamp'); make the box return JSON values (numbers, strings, lists, dicts; tuples and NumPy values are "
        "converted), or pass --allow-pickle (allow_pickle=True in Python) to write it as {\"$pickle\": ...}, "
        "which only --allow-pickle reads back"]
    # The outputs made before the failure are written.
    assert read_jsonl((workdir / "out.jsonl").read_text()) == [
        {"a": 0, "d": [[0.0, 0.0, 0.0], False]}, {"a": 1, "d": [[0.0, 1.0, 2.0], True]}]
    done = snet("run", "stamp.snet", "-i", "in.jsonl", "-o", "out.jsonl", "--engine", engine, "-w", "1", "--allow-pickle",
                cwd=workdir)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = read_jsonl((workdir / "out.jsonl").read_text())
    assert lines[:2] == [{"a": 0, "d": [[0.0, 0.0, 0.0], False]}, {"a": 1, "d": [[0.0, 1.0, 2.0], True]}]
    assert [list(line["d"]) for line in lines[2:]] == [["$pickle"]]
    # Read back: only under the same flag.
    (workdir / "same.snet").write_text("net same connect [{a, d} -> {a, d}];\n")
    refused = snet("run", "same.snet", "-i", "out.jsonl", "--engine", engine, cwd=workdir)
    assert refused.returncode == 1
    assert refused.stderr.strip().endswith(
        "out.jsonl:3: error: field 'd' holds a pickled Python value; pass --allow-pickle (allow_pickle=True in "
        "Python) to read it, and only for files you trust: unpickling can run arbitrary code")
    back = snet("run", "same.snet", "-i", "out.jsonl", "-o", "back.jsonl", "--engine", engine, "--allow-pickle",
                cwd=workdir)
    assert back.returncode == 0, back.stderr
    assert read_jsonl((workdir / "back.jsonl").read_text()) == lines


# -- progress on a terminal --------------------------------------------------------------------

def run_on_a_terminal(command, cwd, columns=100):
    """Run `command` with standard error on a pseudo-terminal; (exit status, what it drew)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen(command, cwd=cwd, stderr=slave, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals")
def test_progress_on_a_terminal_is_a_live_display_with_total_and_time_left(workdir):
    (workdir / "slow.snet").write_text("box slow ((a) -> (a)); net slownet connect slow;\n")
    (workdir / "slow.py").write_text("import time\n\ndef slow(a):\n    time.sleep(0.01)\n    return {'a': a}\n")
    (workdir / "big.jsonl").write_text("".join(json.dumps({"a": i, "pad": "x" * 200}) + "\n" for i in range(150)))
    code, drawn = run_on_a_terminal(SNET + ["run", "slow.snet", "-i", "big.jsonl", "-o", "out.jsonl", "--progress",
                                            "-w", "1"], workdir)
    assert code == 0, drawn
    frames = [frame.strip() for frame in drawn.replace("\n", "\r").split("\r") if frame.strip()]
    assert len(frames) >= 3, drawn  # redrawn in place, several times a second
    assert all(frame.startswith("snet: read:") for frame in frames), frames
    middle = [f for f in frames if "%|" in f and "/" in f and "<" in f and "B/s" in f]
    assert middle, frames  # a percentage of the bytes read, read/size, time left and the rate while it runs
    assert frames[-1].startswith("snet: read: 100%|") and "in 150 rec, out 150 rec" in frames[-1]
    assert "snet progress:" not in drawn  # the plain lines are for logs, not terminals
    assert len(read_jsonl((workdir / "out.jsonl").read_text())) == 150


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals")
def test_progress_from_standard_input_on_a_terminal_has_no_total(workdir):
    (workdir / "net.py").write_text("def f(a):\n    return {'a': a}\n")
    command = SNET + ["run", "net.snet", "--progress", "-o", "out.jsonl"]
    import shlex
    shell = f"{shlex.join(command)} < in.jsonl"
    code, drawn = run_on_a_terminal(["sh", "-c", shell], workdir)
    assert code == 0, drawn
    frames = [frame.strip() for frame in drawn.replace("\n", "\r").split("\r") if frame.strip()]
    assert frames[-1].startswith("snet: in: 3 rec") and "out 3" in frames[-1], frames
    assert "%" not in frames[-1]


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals")
def test_warnings_print_above_the_live_display_not_through_it(warning_net):
    code, drawn = run_on_a_terminal(SNET + ["run", "cell.snet", "-i", "in.jsonl", "-o", "out.jsonl", "--progress"],
                                    warning_net)
    assert code == 0, drawn
    (line,) = [line for line in drawn.split("\n") if "warning:" in line]
    assert line.rstrip("\r").split("\r")[-1].startswith("cell.snet:1:"), repr(line)  # a line of its own
    assert "snet: read: 100%|" in drawn.split("warning:", 1)[1]  # the display is drawn again below it
