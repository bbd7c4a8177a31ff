"""``on_error``: stop (the default), skip, or a callable, on every engine (interfaces.md §4)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections import Counter

import pytest

import snet

DIVIDE = "box f ((x) -> (y)); net n connect f;"


def divide(x):
    return {"y": 1000 // x}


def inputs(n=1000, bad=(500,)):
    return [{"x": 0 if i in bad else i + 1, "i": i} for i in range(n)]


def test_skip_gives_the_other_inputs_outputs_and_one_error_record_with_every_key(engine_options, caplog):
    net = snet.load(DIVIDE, boxes={"f": divide})
    errors = []
    with caplog.at_level(logging.WARNING, logger="snet"):
        execution = net.run(inputs(), on_error=errors.append, **engine_options)
        outputs = list(execution)
    assert Counter(o["i"] for o in outputs) == Counter(i for i in range(1000) if i != 500)
    assert all(o["y"] == 1000 // (o["i"] + 1) for o in outputs)
    assert errors == [{
        "error": "box 'f' raised ZeroDivisionError: integer division or modulo by zero (input record {i, x})",
        "at": "<string>:1:35", "box": "f", "exception": "ZeroDivisionError", "record": {"x": 0, "i": 500}}]
    assert execution.failures == 1
    assert execution.stats().failures == 1
    assert [r.getMessage() for r in caplog.records] == [
        "<string>:1:35: warning: box 'f' raised ZeroDivisionError: integer division or modulo by zero "
        "(input record {i, x}) (record skipped)"]


def test_stop_is_the_default_and_raises_after_the_outputs_before_it(engine_options):
    net = snet.load(DIVIDE, boxes={"f": divide})
    outputs = []
    with pytest.raises(snet.SNetBoxError, match="box 'f' raised ZeroDivisionError"):
        for out in net.run(inputs(20, bad=(10,)), **engine_options):
            outputs.append(out)
    assert len(outputs) <= 10


def test_skip_keeps_the_order_of_deterministic_combinators(engine_options):
    """A skipped record leaves a gap in its group; the collector moves on and keeps the others in order."""
    source = ("box f ((x) -> (y)); box g ((x) -> (y));"
              "net n connect ([{x, <k>} -> {x, <k>}] .. (f || g)) !! <k>;")
    net = snet.load(source, boxes={"f": divide, "g": divide})
    records = [{"x": 0 if i % 7 == 3 else i + 1, "<k>": i % 4, "i": i} for i in range(400)]
    outputs = list(net.run(records, on_error="skip", **engine_options))
    assert [o["i"] for o in outputs] == [i for i in range(400) if i % 7 != 3]


def test_filters_skip_too(engine_options):
    net = snet.load("net n connect [{<a>, <b>} -> {<c = a / b>}];", boxes={})
    errors = []
    outputs = list(net.run([{"<a>": 6, "<b>": b} for b in (3, 0, 2)], on_error=errors.append, **engine_options))
    assert outputs == [{"<c>": 2}, {"<c>": 3}]
    assert len(errors) == 1 and "box" not in errors[0] and errors[0]["record"] == {"<a>": 6, "<b>": 0}
    assert errors[0]["at"].startswith("<string>:1:")


def test_a_handler_that_raises_stops_the_run(engine_options):
    def handler(error_record):
        raise ValueError("the dead-letter store is down")

    net = snet.load(DIVIDE, boxes={"f": divide})
    with pytest.raises(snet.SNetRuntimeError, match="the on_error handler raised ValueError: the dead-letter store"):
        list(net.run(inputs(50, bad=(5,)), on_error=handler, **engine_options))


# Exception classes, raised new in each test: an instance shared by the tests would keep the traceback of
# its last raise, and with it that test's run.
@pytest.mark.parametrize("raised, name", [(lambda: ValueError("store down"), "ValueError"),
                                          (lambda: SystemExit(3), "SystemExit"),
                                          (KeyboardInterrupt, "KeyboardInterrupt")])
def test_a_handler_that_raises_is_called_once_and_stops_the_run_with_an_error(engine_options, raised, name):
    """Every record fails; while the handler runs, other workers fail more records: none reaches the handler."""
    failing = threading.Semaphore(0)

    def fails(x):
        failing.release()
        raise ValueError("bad")

    calls = []

    def handler(error_record):
        calls.append(error_record["record"])
        if engine_options.get("workers", 1) > 1:  # let two more workers fail meanwhile (they wait for the handler)
            for _ in range(2):
                failing.acquire(timeout=10)
        raise raised()

    net = snet.load(DIVIDE, boxes={"f": fails})
    caught = []

    def go():
        try:
            list(net.run(inputs(50, bad=()), on_error=handler, **engine_options))
        except BaseException as e:
            caught.append(e)

    thread = threading.Thread(target=go)  # not the main thread: no KeyboardInterrupt there is a Ctrl-C
    thread.start()
    thread.join(60)
    assert len(caught) == 1 and isinstance(caught[0], snet.SNetRuntimeError), caught
    assert f"the on_error handler raised {name}" in str(caught[0])
    assert len(calls) == 1


def test_a_skipping_session_goes_on_after_a_failure(engine_options):
    net = snet.load(DIVIDE, boxes={"f": divide})
    with net.session(on_error="skip", **engine_options) as session:
        session.feed({"x": 0})
        session.feed({"x": 10})
        outputs = session.close()
    assert outputs == [{"y": 100}]
    assert session.stats().failures == 1


@pytest.mark.parametrize("value", ["ignore", 3, None])
def test_a_bad_policy_is_a_usage_error(value):
    net = snet.load(DIVIDE, boxes={"f": divide})
    with pytest.raises(snet.SNetUsageError, match="on_error must be 'stop', 'skip' or a callable"):
        net.run([], on_error=value)


def cli(tmp_path, *args):
    (tmp_path / "n.snet").write_text(DIVIDE)
    (tmp_path / "n.py").write_text("def f(x):\n    return {'y': 1000 // x}\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in inputs(200, bad=(7, 150))))
    return subprocess.run([sys.executable, "-m", "snet", "run", "n.snet", "-i", "in.jsonl", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_cli_errors_file_gets_one_error_record_per_failure_and_the_run_exits_0(tmp_path):
    proc = cli(tmp_path, "--errors", "dead.jsonl", "-o", "out.jsonl")
    assert proc.returncode == 0, proc.stderr
    outputs = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted(o["i"] for o in outputs) == [i for i in range(200) if i not in (7, 150)]
    dead = [json.loads(line) for line in (tmp_path / "dead.jsonl").read_text().splitlines()]
    assert sorted(d["record"]["i"] for d in dead) == [7, 150]
    for d in dead:
        assert list(d) == ["error", "at", "box", "exception", "record"]
        assert d["at"] == "n.snet:1:35" and d["box"] == "f" and d["exception"] == "ZeroDivisionError"
    assert "snet: 2 records failed and were skipped (error records in dead.jsonl)" in proc.stderr.splitlines()


@pytest.mark.slow
def test_cli_on_error_skip_and_stop(tmp_path):
    skip = cli(tmp_path, "--on-error", "skip")
    assert skip.returncode == 0 and len(skip.stdout.splitlines()) == 198
    assert skip.stderr.count("(record skipped)") == 2
    stop = cli(tmp_path)
    assert stop.returncode == 1 and "error: box 'f' raised ZeroDivisionError" in stop.stderr
    both = cli(tmp_path, "--on-error", "stop", "--errors", "dead.jsonl")
    assert both.returncode == 2 and "--errors FILE skips failing records" in both.stderr
