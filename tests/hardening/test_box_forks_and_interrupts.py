"""A child a box forks never runs the network; a box's own KeyboardInterrupt is a box failure like any other."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

import snet
from snet.errors import SNetBoxError

NET = "box f ((x) -> (y)); net n connect f;"
FORKING = """\
import os


def f(x):
    if x == 2:
        os.fork()  # parent and child both return: only the parent may go on
    return {"y": x}
"""


@pytest.mark.parametrize("options", [["--engine", "reference"], ["--engine", "front", "-w", "1"],
                                     ["--engine", "front", "-w", "4"], ["--box-processes", "f=1"]],
                         ids=["reference", "front-w1", "front-w4", "box-process"])
def test_a_child_forked_by_a_box_never_runs_the_network(tmp_path, options):
    (tmp_path / "n.snet").write_text(NET)
    (tmp_path / "n.py").write_text(FORKING)
    records = "".join(json.dumps({"x": x}) + "\n" for x in range(6))
    out = tmp_path / "out.jsonl"
    done = subprocess.run([sys.executable, "-m", "snet", "run", str(tmp_path / "n.snet"), "-o", str(out), *options],
                          input=records, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    outputs = Counter(json.loads(line)["y"] for line in out.read_text().splitlines())
    assert outputs == Counter(range(6))  # each output once: the child wrote nothing
    assert "box 'f' forked process" in done.stderr and "never runs the network" in done.stderr


def interrupts_on_one(x):
    if x == 1:
        raise KeyboardInterrupt  # the box's own doing: no Ctrl-C reaches a session's threads
    return {"y": x}


def test_a_box_raising_keyboard_interrupt_under_skip_is_skipped(engine_options):
    net = snet.load(NET, boxes={"f": interrupts_on_one})
    session = net.session(on_error="skip", **engine_options)
    futures = [session.submit({"x": x}) for x in range(3)]
    assert futures[0].result(timeout=30) == [{"y": 0}]
    with pytest.raises(SNetBoxError, match="box 'f' raised KeyboardInterrupt"):
        futures[1].result(timeout=30)
    assert futures[2].result(timeout=30) == [{"y": 2}]
    session.feed({"x": 3})
    assert session.close(timeout=30) == [{"y": 3}]
    assert session.stats().failures == 1
