"""A box call that hangs is abandoned at its timeout; a flaky one is retried (``--box-timeout``, ``--box-retries``).

The hanging box waits on an event that nothing sets: without a timeout the
run would never end (each run here has a subprocess timeout as its upper
bound, far above what the run needs).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

# Each test waits for real timeouts (seconds): CI runs them, the quick loop leaves them out.
pytestmark = pytest.mark.slow

RECORDS = 1000
HANG_AT = 500

# `..`: serial composition; `!!`: a deterministic split, whose outputs keep the input order
NETS = {
    "serial": "box slow((x) -> (y)); box twice((y) -> (z)); net n connect slow .. twice;",
    "det-split": "box slow((x) -> (y)); box twice((y) -> (z)); net n connect (slow .. twice) !! <k>;",
}

HANGING = """
import threading

NEVER = threading.Event()  # never set: the call at HANG_AT waits for ever


def slow(x):
    if x == HANG_AT:
        NEVER.wait()
    return {"y": x + 1}


def twice(y):
    return {"z": 2 * y}
""".replace("HANG_AT", str(HANG_AT))

ENGINES = [["--engine", "reference"], ["--engine", "front", "-w", "1"], ["--engine", "front", "-w", "4"]]
ENGINE_IDS = ["reference", "front-w1", "front-w4"]
# Split processes call the boxes of their splits through the same timeouts and retries
IN_SPLIT_PROCESSES = [["--engine", "reference", "--split-processes", "2"],
                      ["--engine", "front", "-w", "2", "--split-processes", "2"]]


def write_inputs(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def snet_run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "snet", "run", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("engine", ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("net", sorted(NETS))
def test_a_hanging_call_is_abandoned_and_the_rest_flows_in_order(tmp_path, net, engine):
    (tmp_path / "n.snet").write_text(NETS[net])
    (tmp_path / "n.py").write_text(HANGING)
    write_inputs(tmp_path / "in.jsonl", [{"x": i, "<k>": i % 7} for i in range(RECORDS)])
    started = time.monotonic()
    done = snet_run(tmp_path / "n.snet", "-i", tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", *engine,
                    "--box-timeout", "1", "--on-error", "skip", "--errors", tmp_path / "errors.jsonl",
                    "--stats-json", tmp_path / "stats.json")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    outputs = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    expected = [2 * (i + 1) for i in range(RECORDS) if i != HANG_AT]
    assert [o["z"] for o in outputs] == expected  # the other 999, in input order
    errors = [json.loads(line) for line in (tmp_path / "errors.jsonl").read_text().splitlines()]
    assert len(errors) == 1
    assert errors[0]["record"]["x"] == HANG_AT
    assert errors[0]["box"] == "slow" and errors[0]["exception"] == "BoxTimeout"
    assert errors[0]["attempts"] == 1
    assert "box 'slow' timed out after 1 s" in errors[0]["error"]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["boxes"]["slow"]["timeouts"] == 1 and stats["boxes"]["slow"]["retries"] == 0
    assert stats["boxes"]["twice"]["timeouts"] == 0  # without BOX=, every box has the timeout
    assert took < 60  # the run time plus the timeout, with room for a busy machine (it never ends without)


def test_a_hanging_box_process_is_replaced(tmp_path):
    """With ``--box-processes`` the process of the abandoned call is terminated and a fresh one serves the rest."""
    (tmp_path / "n.snet").write_text(NETS["serial"])
    (tmp_path / "n.py").write_text(HANGING)
    write_inputs(tmp_path / "in.jsonl", [{"x": i} for i in range(RECORDS)])
    done = snet_run(tmp_path / "n.snet", "-i", tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl",
                    "--box-processes", "slow=1", "--box-timeout", "slow=1", "--errors", tmp_path / "errors.jsonl")
    assert done.returncode == 0, done.stderr
    outputs = [json.loads(line)["z"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert outputs == [2 * (i + 1) for i in range(RECORDS) if i != HANG_AT]
    errors = [json.loads(line) for line in (tmp_path / "errors.jsonl").read_text().splitlines()]
    assert [e["record"]["x"] for e in errors] == [HANG_AT]


FLAKY = """
import os

FOLDER = FOLDER_PATH


def slow(x):
    # a box is stateless: the attempts are counted in a file per record
    mark = os.path.join(FOLDER, f"tries-{x}")
    with open(mark, "a") as f:
        f.write(".")
    with open(mark) as f:
        tries = len(f.read())
    if x % 10 == 3 and tries <= FAILURES:
        raise ConnectionError(f"flaky service, attempt {tries}")
    return {"y": x + 1}


def twice(y):
    return {"z": 2 * y}
"""


def flaky_module(tmp_path, failures):
    marks = tmp_path / "marks"
    marks.mkdir()
    return FLAKY.replace("FOLDER_PATH", repr(str(marks))).replace("FAILURES", str(failures)), marks


@pytest.mark.parametrize("engine", ENGINES + IN_SPLIT_PROCESSES,
                         ids=ENGINE_IDS + ["reference-split-processes", "front-w2-split-processes"])
def test_a_call_failing_twice_succeeds_on_the_third_try(tmp_path, engine):
    module, marks = flaky_module(tmp_path, 2)
    (tmp_path / "n.snet").write_text(NETS["det-split"])
    (tmp_path / "n.py").write_text(module)
    write_inputs(tmp_path / "in.jsonl", [{"x": i, "<k>": i % 3} for i in range(100)])
    done = snet_run(tmp_path / "n.snet", "-i", tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", *engine,
                    "--box-retries", "3,0.01", "--stats-json", tmp_path / "stats.json")
    assert done.returncode == 0, done.stderr
    outputs = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert outputs == [{"<k>": i % 3, "z": 2 * (i + 1)} for i in range(100)]
    assert (marks / "tries-3").read_text() == "..."  # two failures, then the answer
    assert (marks / "tries-4").read_text() == "."
    stats = json.loads((tmp_path / "stats.json").read_text())
    boxes = stats["split_processes"]["boxes"] if "--split-processes" in engine else stats["boxes"]  # (counted there)
    assert boxes["slow"]["retries"] == 2 * 10 and boxes["slow"]["timeouts"] == 0


def test_without_retries_the_first_failure_fails_the_run(tmp_path):
    module, _ = flaky_module(tmp_path, 2)
    (tmp_path / "n.snet").write_text(NETS["serial"])
    (tmp_path / "n.py").write_text(module)
    write_inputs(tmp_path / "in.jsonl", [{"x": i} for i in range(10)])
    done = snet_run(tmp_path / "n.snet", "-i", tmp_path / "in.jsonl")
    assert done.returncode == 1
    assert "box 'slow' raised ConnectionError: flaky service, attempt 1" in done.stderr


@pytest.mark.parametrize("engine", ENGINES, ids=ENGINE_IDS)
def test_spent_retries_hand_the_last_error_to_the_policy(tmp_path, engine):
    module, marks = flaky_module(tmp_path, 5)
    (tmp_path / "n.snet").write_text(NETS["serial"])
    (tmp_path / "n.py").write_text(module)
    write_inputs(tmp_path / "in.jsonl", [{"x": i} for i in range(20)])
    done = snet_run(tmp_path / "n.snet", "-i", tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", *engine,
                    "--box-retries", "slow=2,0.01", "--errors", tmp_path / "errors.jsonl", "--stats")
    assert done.returncode == 0, done.stderr
    outputs = [json.loads(line)["z"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert outputs == [2 * (i + 1) for i in range(20) if i % 10 != 3]
    errors = [json.loads(line) for line in (tmp_path / "errors.jsonl").read_text().splitlines()]
    assert sorted(e["record"]["x"] for e in errors) == [3, 13]
    for error in errors:
        assert error["exception"] == "ConnectionError" and error["attempts"] == 3
        assert "flaky service, attempt 3 (the last of 3 attempts)" in error["error"]  # the last error
    assert (marks / "tries-3").read_text() == "..."
    assert "box slow: 4 retries, 0 timeouts" in done.stderr  # (two records, each tried twice more)


def test_the_stop_policy_stops_at_the_timeout_with_exit_1(tmp_path):
    (tmp_path / "n.snet").write_text(NETS["serial"])
    (tmp_path / "n.py").write_text(HANGING)
    write_inputs(tmp_path / "in.jsonl", [{"x": i} for i in range(RECORDS)])
    done = snet_run(tmp_path / "n.snet", "-i", tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl",
                    "--box-timeout", "1.5", "--box-retries", "1,0")
    assert done.returncode == 1
    assert "box 'slow' timed out after 1.5 s (the last of 2 attempts)" in done.stderr


@pytest.mark.parametrize("args, message", [
    (["--box-timeout", "0"], "--box-timeout must be a number of seconds > 0, not 0.0"),
    (["--box-timeout", "soon"], "--box-timeout takes SECONDS or NAME=SECONDS, not 'soon'"),
    (["--box-timeout", "slo=1"], "box timeout given for 'slo', which the network does not use (did you mean "
                                 "'slow'?"),
    (["--box-retries", "-1"], "--box-retries needs N >= 0 and BACKOFF >= 0 seconds, not (-1, 0.1)"),
    (["--box-retries", "slow=2,x"], "--box-retries takes N[,BACKOFF] or NAME=N[,BACKOFF], not 'slow=2,x'"),
    (["--box-retries", "twic=2"], "box retries given for 'twic', which the network does not use"),
])
def test_bad_timeouts_and_retries_never_start_the_run(tmp_path, args, message):
    (tmp_path / "n.snet").write_text(NETS["serial"])
    (tmp_path / "n.py").write_text(HANGING)
    done = snet_run(tmp_path / "n.snet", "-i", "-", *args, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr



@pytest.mark.parametrize("engine", IN_SPLIT_PROCESSES, ids=["reference", "front-w2"])
def test_in_split_processes_a_hanging_call_is_abandoned_and_the_rest_flows_in_order(tmp_path, engine):
    (tmp_path / "n.snet").write_text(NETS["det-split"])
    (tmp_path / "n.py").write_text(HANGING)
    write_inputs(tmp_path / "in.jsonl", [{"x": i, "<k>": i % 7} for i in range(RECORDS)])
    done = snet_run(tmp_path / "n.snet", "-i", tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", *engine,
                    "--box-timeout", "slow=1", "--on-error", "skip", "--errors", tmp_path / "errors.jsonl",
                    "--stats", "--stats-json", tmp_path / "stats.json")
    assert done.returncode == 0, done.stderr
    assert "do not apply" not in done.stderr
    outputs = [json.loads(line)["z"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert outputs == [2 * (i + 1) for i in range(RECORDS) if i != HANG_AT]  # the other 999, in input order
    errors = [json.loads(line) for line in (tmp_path / "errors.jsonl").read_text().splitlines()]
    assert [(e["record"]["x"], e["box"], e["exception"], e["attempts"]) for e in errors] == \
        [(HANG_AT, "slow", "BoxTimeout", 1)]
    boxes = json.loads((tmp_path / "stats.json").read_text())["split_processes"]["boxes"]
    assert (boxes["slow"]["timeouts"], boxes["slow"]["retries"]) == (1, 0)
    assert boxes["twice"]["timeouts"] is None  # (not given a timeout)
    assert "box slow: 1,000 calls" in done.stderr and "in the processes, 0 retries, 1 timeout" in done.stderr


def test_in_split_processes_the_stop_policy_stops_at_the_timeout_with_exit_1(tmp_path):
    (tmp_path / "n.snet").write_text(NETS["det-split"])
    (tmp_path / "n.py").write_text(HANGING)
    write_inputs(tmp_path / "in.jsonl", [{"x": i, "<k>": i % 7} for i in range(RECORDS)])
    done = snet_run(tmp_path / "n.snet", "-i", tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl",
                    "--split-processes", "2", "--box-timeout", "1.5", "--box-retries", "1,0")
    assert done.returncode == 1, done.stderr
    assert "box 'slow' timed out after 1.5 s (the last of 2 attempts)" in done.stderr
