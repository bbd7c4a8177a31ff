"""The command line keeps the output clean and the input safe."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

import pytest

NET = "box f ((x) -> (y)); net n connect f;"
PRINTING = "def f(x):\n    print('hello from the box', x)\n    return {'y': x}\n"


def snet_run(*args, input=None):
    return subprocess.run([sys.executable, "-m", "snet", "run", *map(str, args)], input=input,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def net(tmp_path):
    (tmp_path / "n.snet").write_text(NET)
    (tmp_path / "n.py").write_text(PRINTING)
    return tmp_path / "n.snet"


def test_output_file_that_is_the_input_file_is_refused(net, tmp_path):
    data = tmp_path / "x.jsonl"
    data.write_text('{"x": 1}\n{"x": 2}\n')
    done = snet_run(net, "-i", data, "-o", data)
    assert done.returncode == 2
    assert done.stderr == f"error: -o {data} is also the input (-i)\n"
    assert data.read_text() == '{"x": 1}\n{"x": 2}\n'


def snapshot(folder) -> dict:
    """Every file under `folder` and its bytes: what a refused run must leave exactly as it was."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# (arguments of `snet run` in the folder of n.snet, n.py, in.jsonl, out.jsonl, lib/ext.snet; the one line it prints;
#  the files its standard input and output are redirected from and to, if any)
CLASHES = [
    (["-i", "in.jsonl", "-o", "out.jsonl", "--stats-json", "in.jsonl"],
     "--stats-json in.jsonl is also the input (-i)", {}),
    (["-i", "in.jsonl", "-o", "out.jsonl", "--stats-json", "out.jsonl"],
     "--stats-json out.jsonl is also the output (-o)", {}),
    (["-i", "in.jsonl", "-o", "new.jsonl", "--stats-json", "new.jsonl"],  # neither exists yet
     "--stats-json new.jsonl is also the output (-o)", {}),
    (["-i", "in.jsonl", "--errors", "bad.jsonl", "--stats-json", "./bad.jsonl"],
     "--stats-json ./bad.jsonl is also the error file (--errors bad.jsonl)", {}),
    (["-i", "in.jsonl", "-o", "out.jsonl", "--errors", "out.jsonl"],
     "--errors out.jsonl is also the output (-o)", {}),
    (["-i", "in.jsonl", "--errors", "in.jsonl"], "--errors in.jsonl is also the input (-i)", {}),
    (["-i", "in.jsonl", "-o", "n.py"], "-o n.py is also a box module", {}),
    (["-i", "in.jsonl", "-o", "n.snet"], "-o n.snet is also the network file", {}),
    (["-i", "in.jsonl", "--errors", "n.snet"], "--errors n.snet is also the network file", {}),
    (["-i", "in.jsonl", "--errors", "n.py"], "--errors n.py is also a box module", {}),
    (["-i", "in.jsonl", "--stats-json", "n.py"], "--stats-json n.py is also a box module", {}),
    (["-i", "in.jsonl", "--stats-json", "n.snet"], "--stats-json n.snet is also the network file", {}),
    (["--boxes", "other.py", "-i", "in.jsonl", "-o", "other.py"], "-o other.py is also a box module (--boxes)", {}),
    (["--boxes", "other", "-i", "in.jsonl", "--stats-json", "other.py"],
     "--stats-json other.py is also a box module (--boxes)", {}),
    (["--boxes", "other.py", "-i", "in.jsonl", "-o", "helper.py"],  # the module imports its box from helper.py
     "-o helper.py is also a box module ({tmp}/helper.py)", {}),
    (["-i", "in.jsonl", "-o", "hard.jsonl"], "-o hard.jsonl is also the input (-i in.jsonl)", {}),
    (["-i", "in.jsonl", "--stats-json", "soft.jsonl"], "--stats-json soft.jsonl is also the input (-i in.jsonl)", {}),
    (["--dialect", "rts", "--net-path", "lib", "-i", "in.jsonl", "-o", "lib/ext.snet"],
     "-o lib/ext.snet is also a net file it binds (--net-path {tmp}/lib/ext.snet)", {}),
    # standard input and output redirected to files (`< in.jsonl`, `>> in.jsonl`): the files they are
    (["-o", "in.jsonl"], "-o in.jsonl is also the input (standard input)", {"stdin": "in.jsonl"}),
    (["-i", "in.jsonl", "-o", "/dev/stdout"], "-o /dev/stdout is also the input (-i in.jsonl)", {"stdout": "in.jsonl"}),
    (["-i", "in.jsonl"], "standard output is also the input (-i in.jsonl)", {"stdout": "in.jsonl"}),
    (["-i", "in.jsonl", "--stats-json", "out.jsonl"], "--stats-json out.jsonl is also the output (standard output)",
     {"stdout": "out.jsonl"}),
    ([], "standard output is also the input (standard input)", {"stdin": "in.jsonl", "stdout": "in.jsonl"}),
]


@pytest.mark.slow
@pytest.mark.parametrize("args, message, streams", CLASHES, ids=[" ".join(a) + str(s) for a, _, s in CLASHES])
def test_no_written_file_is_one_the_run_reads_is_made_of_or_writes_twice(tmp_path, args, message, streams):
    (tmp_path / "n.snet").write_text("box f ((x) -> (y));\nnet ext ({x} -> {x});\nnet n connect ext .. f;\n")
    (tmp_path / "n.py").write_text("def f(x):\n    return {'y': x}\n")
    (tmp_path / "other.py").write_text("from helper import f\n")
    (tmp_path / "helper.py").write_text("def f(x):\n    return {'y': -x}\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "ext.snet").write_text("net ext connect [];\n")
    (tmp_path / "in.jsonl").write_text('{"x": 1}\n{"x": 2}\n')
    (tmp_path / "out.jsonl").write_text('{"y": 0}\n')
    os.link(tmp_path / "in.jsonl", tmp_path / "hard.jsonl")
    (tmp_path / "soft.jsonl").symlink_to("in.jsonl")
    if "--dialect" not in args:  # ext is then declared only in the rts dialect; here it is defined
        (tmp_path / "n.snet").write_text("box f ((x) -> (y));\nnet ext connect [];\nnet n connect ext .. f;\n")
    before = snapshot(tmp_path)
    with contextlib.ExitStack() as files:
        stdin = files.enter_context(open(tmp_path / streams["stdin"])) if "stdin" in streams else subprocess.DEVNULL
        stdout = files.enter_context(open(tmp_path / streams["stdout"], "a")) if "stdout" in streams else None
        done = subprocess.run([sys.executable, "-m", "snet", "run", "n.snet", *args], cwd=tmp_path, stdin=stdin,
                              stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (2, "error: " + message.format(tmp=tmp_path) + "\n")
    assert done.stdout in (None, "")
    assert snapshot(tmp_path) == before  # nothing written, truncated or made


def test_devices_may_be_named_by_several_roles(net, tmp_path):
    (tmp_path / "in.jsonl").write_text('{"x": 1}\n')
    done = snet_run(net, "-i", tmp_path / "in.jsonl", "-o", "/dev/null", "--errors", "/dev/null",
                    "--stats-json", "/dev/null")
    assert (done.returncode, done.stderr) == (0, "hello from the box 1\n")


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_what_boxes_print_stays_out_of_the_record_stream(net, engine):
    records = "".join(json.dumps({"x": i}) + "\n" for i in range(2000))
    done = snet_run(net, "--engine", engine, input=records)
    assert done.returncode == 0, done.stderr[-1000:]
    lines = done.stdout.splitlines()
    assert sorted(json.loads(line)["y"] for line in lines) == list(range(2000))  # every line parses
    assert done.stderr.count("hello from the box") == 2000


def test_a_full_disk_is_a_run_time_error_naming_the_output(net, tmp_path):
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"x": i}) + "\n" for i in range(100)))
    done = snet_run(net, "-i", tmp_path / "in.jsonl", "-o", "/dev/full", "--format", "jsonl")
    assert done.returncode == 1
    assert "cannot write the output file /dev/full: No space left on device" in done.stderr
    assert "Traceback" not in done.stderr


INTERRUPT_WHILE_IMPORTING = """
import importlib.abc, importlib.metadata, os, signal, sys

class InterruptOnImport(importlib.abc.MetaPathFinder):
    # Ctrl-C arriving while the command line module loads, at a known moment.
    def find_spec(self, name, path, target=None):
        if name == "snet.cli":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, InterruptOnImport())
(entry,) = importlib.metadata.entry_points(group="console_scripts", name="snet")
main = entry.load()  # what the installed `snet` script does first
sys.exit(main(["check", "nothing.snet"]))
"""


def test_ctrl_c_while_the_command_starts_is_one_line_not_a_traceback(tmp_path):
    # SIGINT as a terminal delivers it: a shell that runs the tests in the background without job control
    # starts them with SIGINT ignored, and the child would inherit that (and rightly carry on).
    proc = subprocess.run([sys.executable, "-c", INTERRUPT_WHILE_IMPORTING], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.returncode == 1
    assert proc.stderr == "error: interrupted\n"


def test_python_dash_m_snet_is_the_command(tmp_path):
    (tmp_path / "n.snet").write_text("net n connect [];")
    proc = subprocess.run([sys.executable, "-m", "snet", "check", str(tmp_path / "n.snet")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_distinct_files_for_every_role_are_all_written(net, tmp_path):
    (tmp_path / "in.jsonl").write_text('{"x": 1}\n')
    with open(tmp_path / "in.jsonl") as stdin, open(tmp_path / "stdout.jsonl", "w") as stdout:
        done = subprocess.run([sys.executable, "-m", "snet", "run", str(net), "--errors", "err.jsonl",
                               "--stats-json", "stats.json"], cwd=tmp_path, stdin=stdin, stdout=stdout,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "stdout.jsonl").read_text() == '{"y":1}\n'
    assert (tmp_path / "err.jsonl").read_text() == ""
    assert json.loads((tmp_path / "stats.json").read_text())["records_out"] == 1
