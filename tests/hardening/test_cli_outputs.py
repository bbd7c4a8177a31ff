"""The command line keeps the output clean and the input safe."""

from __future__ import annotations

import json
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
    assert "is the input file" in done.stderr
    assert data.read_text() == '{"x": 1}\n{"x": 2}\n'


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
