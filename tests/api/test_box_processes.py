"""``processes=`` / ``--box-processes``: box calls in worker processes, with results as in process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

import snet

BOXES = '''
import os, time

def burn(n):
    s = 0
    for i in range(20000):
        s += i * n
    if n == 13:
        raise ValueError("unlucky thirteen")
    if n == 99:
        os._exit(3)
    return {"n": n, "s": s, "pid": os.getpid()}

def label(s):
    return {"label": f"s={s}"}

def nap(n):
    if n:
        open("napping", "w").close()  # in the run's folder: the test's Ctrl-C comes now
    time.sleep(n)
    return {"n": n, "s": 0, "pid": os.getpid()}
'''
NET = "box burn ((n) -> (n, s, pid)); box label ((s) -> (label)); net p connect burn .. label;"


@pytest.fixture
def boxes_file(tmp_path):
    path = tmp_path / "pboxes.py"
    path.write_text(BOXES)
    return str(path)


def test_outputs_are_those_of_in_process_calls_in_the_same_order(engine_options, boxes_file):
    net = snet.load(NET, boxes=boxes_file)
    records = [{"n": n, "i": i} for i, n in enumerate([5, 1, 8, 2, 7, 3] * 10)]
    local = list(net.run(records, **engine_options))
    with net.run(records, processes={"burn": 2}, **engine_options) as execution:
        remote = list(execution)
    strip = [[{k: v for k, v in r.items() if k != "pid"} for r in run] for run in (local, remote)]
    assert strip[0] == strip[1]  # a pipeline: in input order on every engine
    assert {r["pid"] for r in remote}.isdisjoint({os.getpid()})
    assert len({r["pid"] for r in remote}) <= 2


def test_a_box_error_in_a_process_reads_as_an_in_process_one(engine_options, boxes_file):
    net = snet.load(NET, boxes=boxes_file)
    with pytest.raises(snet.SNetBoxError) as local:
        list(net.run([{"n": 1}, {"n": 13}], **engine_options))
    with pytest.raises(snet.SNetBoxError) as remote:
        list(net.run([{"n": 1}, {"n": 13}], processes=2, **engine_options))
    assert remote.value.render() == local.value.render()
    assert "box 'burn' raised ValueError: unlucky thirteen (input record {n})" in remote.value.render()
    assert 'raise ValueError("unlucky thirteen")' in remote.value.render()


def test_a_crashed_process_names_the_box_and_record_and_later_calls_go_on(engine_options, boxes_file):
    net = snet.load(NET, boxes=boxes_file)
    errors = []
    outputs = list(net.run([{"n": 1}, {"n": 99}, {"n": 2}], processes={"burn": 1}, on_error=errors.append,
                           **engine_options))
    assert sorted(o["n"] for o in outputs) == [1, 2]
    assert errors[0]["box"] == "burn" and errors[0]["record"] == {"n": 99}
    assert errors[0]["error"].startswith("box 'burn' raised BoxProcessDied: the box process running box 'burn' died")


def test_functions_from_main_or_closures_travel_by_value(engine_options):
    offset = 1000

    def shifted(n):  # a closure: no module can import it
        return {"n": n + offset, "s": os.getpid(), "pid": 0}

    net = snet.load(NET, boxes={"burn": shifted, "label": lambda s: {"label": "x"}})
    outputs = list(net.run([{"n": i} for i in range(6)], processes=2, **engine_options))
    assert [o["n"] for o in outputs] == [1000 + i for i in range(6)]  # a pipeline keeps input order
    assert all(o["label"] == "x" for o in outputs)


def test_pools_are_shut_down_when_the_run_ends_or_is_closed(engine_options, boxes_file, monkeypatch):
    import snet.core.processes as processes

    seen = []
    original = processes.BoxProcesses.close

    def close(self):
        seen.append(self.pids())
        original(self)
        seen.append(self)

    monkeypatch.setattr(processes.BoxProcesses, "close", close)
    net = snet.load(NET, boxes=boxes_file)
    list(net.run([{"n": i} for i in range(10)], processes=2, **engine_options))
    with net.run(({"n": i % 10} for i in range(10**9)), processes=2, **engine_options) as execution:
        next(execution)
    pools = [s for s in seen if isinstance(s, processes.BoxProcesses)]
    pids = [p for s in seen if isinstance(s, list) for p in s]
    assert len(pools) == 2 and pids
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_processes_for_a_box_the_network_does_not_use_is_a_usage_error(boxes_file):
    net = snet.load(NET, boxes=boxes_file)
    with pytest.raises(snet.SNetUsageError, match="box processes given for 'brun', which the network does not use"):
        net.run([], processes={"brun": 2})
    with pytest.raises(snet.SNetUsageError, match="box_processes must be"):
        net.run([], processes=0)


@pytest.mark.slow
def test_cli_box_processes_and_ctrl_c(tmp_path, boxes_file):
    (tmp_path / "p.snet").write_text("box nap ((n) -> (n, s, pid)); net p connect nap;")
    (tmp_path / "p.py").write_text(BOXES)
    (tmp_path / "in.jsonl").write_text('{"n": 0}\n{"n": 600}\n')
    proc = subprocess.Popen([sys.executable, "-m", "snet", "run", "p.snet", "-i", "in.jsonl", "--box-processes",
                             "nap=1", "-o", "out.jsonl"], cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300  # upper bounds only
        out = tmp_path / "out.jsonl"
        while time.monotonic() < deadline and not (out.exists() and out.read_text().strip()
                                                   and (tmp_path / "napping").exists()):
            time.sleep(0.05)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=120)
        elapsed = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read()
    assert code == 1 and "interrupted" in stderr and "Traceback" not in stderr, stderr
    assert elapsed < 60  # not the box call's 600 s: about a second at rest, generous for a busy machine
    assert [json.loads(line)["n"] for line in out.read_text().splitlines()] == [0]
    bad = subprocess.run([sys.executable, "-m", "snet", "run", "p.snet", "--box-processes", "x"], cwd=tmp_path,
                         capture_output=True, text=True, input="", timeout=60)
    assert bad.returncode == 2 and "--box-processes takes N or NAME=N, not 'x'" in bad.stderr


def test_a_script_without_a_main_guard_runs_box_processes_once(tmp_path, boxes_file):
    """Box processes never run the caller's main script again (multiprocessing's spawn would)."""
    (tmp_path / "script.py").write_text(
        "import snet\n"
        "print('script body runs')\n"
        f"net = snet.load({NET!r}, boxes={boxes_file!r})\n"
        "print(sorted(o['n'] for o in net.run([{'n': i} for i in range(6)], processes=2)))\n")
    done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["script body runs", "[0, 1, 2, 3, 4, 5]"]


SAME_NAME = '''
import os

class Point:
    def __init__(self, x):
        self.x = x

def which(n):
    return {"n": n, "where": WHERE, "module": __name__, "point": Point(n), "pid": os.getpid()}
'''


def test_box_files_of_one_name_in_two_folders_stay_apart_in_process_and_in_box_processes(tmp_path, engine_options):
    from snet.core.boxes import load_module_from_path

    nets = {}
    for where in ("left", "right"):
        (tmp_path / where).mkdir()
        path = tmp_path / where / "boxes.py"
        path.write_text(f"WHERE = {where!r}\n" + SAME_NAME)
        nets[where] = (snet.load("box which ((n) -> (n, where, module, point, pid)); net p connect which;",
                                 boxes=str(path)), load_module_from_path(str(path)))
    assert nets["left"][1] is not nets["right"][1] and nets["left"][1].__name__ != nets["right"][1].__name__
    for where, (net, module) in nets.items():
        for options in ({}, {"processes": 1}):
            outputs = list(net.run([{"n": 1}, {"n": 2}], **options, **engine_options))
            assert [o["where"] for o in outputs] == [where, where]
            # a box process loads the file under the parent's module name, so its objects travel by reference
            assert {o["module"] for o in outputs} == {module.__name__}
            assert all(type(o["point"]) is module.Point and o["point"].x == o["n"] for o in outputs)
            assert ({o["pid"] for o in outputs} == {os.getpid()}) == (not options)


def test_an_argument_that_cannot_be_pickled_names_the_box_and_label_and_leaves_the_pool_alone(engine_options,
                                                                                               boxes_file):
    import threading

    net = snet.load("box burn ((k, n) -> (n, s, pid)); net p connect burn;",
                    boxes={"burn": lambda k, n: {"n": n, "s": 0, "pid": os.getpid()}})
    errors = []
    records = [{"k": 1, "n": 1}, {"k": threading.Lock(), "n": 2}, {"k": 3, "n": 3}]
    outputs = list(net.run(records, processes=1, box_concurrency=1, on_error=errors.append, **engine_options))
    assert sorted(o["n"] for o in outputs) == [1, 3]
    assert len({o["pid"] for o in outputs}) == 1  # the same process served the calls before and after
    (error,) = errors
    assert error["box"] == "burn" and error["record"]["n"] == 2 and error["exception"] == "BoxArgumentNotSendable"
    assert ("the value of label 'k' (lock) cannot be sent to a box process of box 'burn' (values travel pickled): "
            "TypeError: cannot pickle '_thread.lock' object") in error["error"]


EXCEPTIONS = '''
import threading

class TwoPartError(Exception):
    def __init__(self, part, whole):  # pickles, but does not unpickle: Exception.args is (message,)
        super().__init__(f"part {part} of {whole}")

class LockedError(Exception):
    def __init__(self):
        super().__init__("holds a lock")
        self.lock = threading.Lock()

def fail(n):
    if n == 1:
        raise TwoPartError(1, 3)
    if n == 2:
        raise LockedError()
    if n == 3:
        return {"n": threading.Lock()}
    return {"n": n}
'''


@pytest.mark.parametrize("n, message, line", [
    (1, "box 'fail' raised TwoPartError: part 1 of 3 (input record {n})", "raise TwoPartError(1, 3)"),
    (2, "box 'fail' raised LockedError: holds a lock (input record {n})", "raise LockedError()"),
    (3, "box 'fail' raised TypeError: its result cannot be sent back from the box process: TypeError: cannot "
        "pickle '_thread.lock' object (input record {n})", None),
])
def test_exceptions_that_do_not_survive_pickling_reach_the_caller_with_the_box_and_traceback(tmp_path, n, message,
                                                                                             line):
    path = tmp_path / "failing.py"
    path.write_text(EXCEPTIONS)
    net = snet.load("box fail ((n) -> (n)); net p connect fail;", boxes=str(path))
    with pytest.raises(snet.SNetBoxError) as remote:
        list(net.run([{"n": 0}, {"n": n}], processes=1, engine="front", workers=2))
    assert message in remote.value.render()
    if line is not None:
        with pytest.raises(snet.SNetBoxError) as local:
            list(net.run([{"n": 0}, {"n": n}], engine="front", workers=2))
        assert remote.value.render() == local.value.render()  # the same message and the box's own traceback
        assert line in remote.value.render()


def test_the_stand_in_exception_pickles():
    import pickle

    from snet.core.processes import RemoteBoxException

    error = pickle.loads(pickle.dumps(RemoteBoxException("LockedError", "holds a lock", "fail"), 5))
    assert (type(error), error.kind, str(error), error.box) == (RemoteBoxException, "LockedError", "holds a lock",
                                                                "fail")


def test_an_argument_the_box_process_cannot_unpickle_fails_that_call_only(tmp_path):
    """A value of a class defined in the main script pickles, but the box process cannot import its class."""
    (tmp_path / "echo.py").write_text("def echo(v):\n    return {'v': v}\n")
    (tmp_path / "script.py").write_text(
        "import snet\n"
        "class Point:\n"
        "    pass\n"
        "net = snet.load('box echo ((v) -> (v)); net p connect echo;', boxes='echo.py')\n"
        "errors = []\n"
        "out = net.run([{'v': 1}, {'v': Point()}, {'v': 2}], processes=1, box_concurrency=1,\n"
        "              on_error=errors.append)\n"
        "print([o['v'] for o in out])\n"
        "print(errors[0]['error'])\n")
    done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    values, error = done.stdout.splitlines()[:2]
    assert values == "[1, 2]"
    assert error.startswith("box 'echo' raised ") and "its arguments cannot be read in the box process" in error
    assert "died" not in error


EXITING_RESULT = '''
import os


class Exits:
    """Unpickled, this calls os._exit: a result that would end whoever reads it."""

    def __reduce__(self):
        return (os._exit, (7,))


def f(x):
    return {"y": Exits() if x == 2 else x}
'''


def test_a_result_whose_unpickling_would_end_the_parent_fails_its_call_and_the_outputs_before_it_are_kept(tmp_path):
    (tmp_path / "n.snet").write_text("box f ((x) -> (y)); net n connect f;")
    (tmp_path / "n.py").write_text(EXITING_RESULT)
    out = tmp_path / "out.jsonl"
    done = subprocess.run([sys.executable, "-m", "snet", "run", str(tmp_path / "n.snet"), "-o", str(out),
                           "--box-processes", "f=1", "-w", "1"],
                          input="".join(json.dumps({"x": x}) + "\n" for x in range(4)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "box 'f'" in done.stderr and "_exit in the parent process" in done.stderr
    assert [json.loads(line) for line in out.read_text().splitlines()] == [{"y": 0}, {"y": 1}]


LEAKING = '''
import os

_kept = []


def f(x):
    _kept.append(b"x" * (40 * 2 ** 20))  # 40 MiB more resident memory per call, never given back
    return {"y": x, "pid": os.getpid()}
'''


def _pid_of(x):
    return {"y": x, "pid": os.getpid()}


def test_a_box_process_is_replaced_after_its_call_limit(engine_options):
    net = snet.load("box f ((x) -> (y, pid)); net n connect f;", boxes={"f": _pid_of})
    with net.run([{"x": x} for x in range(6)], processes={"f": 1}, box_process_calls=2, **engine_options) as run:
        outputs = list(run)
    assert sorted(o["y"] for o in outputs) == list(range(6))
    assert sorted(Counter(o["pid"] for o in outputs).values()) == [2, 2, 2]
    assert os.getpid() not in {o["pid"] for o in outputs}


def test_cli_a_box_process_that_leaks_is_replaced_past_its_memory_limit(tmp_path):
    (tmp_path / "n.snet").write_text("box f ((x) -> (y, pid)); net n connect f;")
    (tmp_path / "n.py").write_text(LEAKING)
    done = subprocess.run([sys.executable, "-m", "snet", "run", str(tmp_path / "n.snet"),
                           "--box-processes", "f=1,memory=200M", "-w", "1"],
                          input="".join(json.dumps({"x": x}) + "\n" for x in range(10)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    outputs = [json.loads(line) for line in done.stdout.splitlines()]
    assert [o["y"] for o in outputs] == list(range(10))
    calls_per_process = Counter(o["pid"] for o in outputs)
    # 10 calls hold 400 MiB: no process may keep more than 200 MiB, so none answers more than 5 calls
    assert len(calls_per_process) >= 2 and max(calls_per_process.values()) <= 5, calls_per_process


@pytest.mark.parametrize("value, message", [("2,cals=3", "'cals=3' in '2,cals=3' is neither"),
                                            ("2,memory=lots", "memory=SIZE must be an int >= 1"),
                                            ("2,calls=0", "calls=C must be at least 1")])
def test_cli_bad_box_process_limits_are_usage_errors(tmp_path, value, message):
    (tmp_path / "n.snet").write_text("box f ((x) -> (y, pid)); net n connect f;")
    (tmp_path / "n.py").write_text(LEAKING)
    done = subprocess.run([sys.executable, "-m", "snet", "run", str(tmp_path / "n.snet"), "--box-processes", value],
                          input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr, done.stderr
