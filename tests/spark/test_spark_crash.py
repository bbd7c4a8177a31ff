"""A box that kills its Python worker on an executor: the box and the record are named, earlier outputs kept.

The session's master is ``local[2,2]``: Spark tries each task twice, both
attempts die, the job fails, and snet runs the batch again with the groups
in child processes to find the record (snet.spark.splits.crash).  The boxes live in
a ``net.py`` beside the network, shipped to the executors as users' boxes are.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections import Counter

import pytest

from snet.errors import SNetBoxError, SNetRuntimeError
from snet.spark.failures import looks_like_crash

pytestmark = pytest.mark.spark

SPLIT = "net crashing {\n  box f((a, <k>) -> (a));\n} connect f ! <k>;\n"
# a synchro-cell in each replica: the state of earlier batches travels with the crashed batch
STATEFUL = "net crashing {\n  box f((a, <k>) -> (a));\n} connect ([| {a, <k>}, {b} |] .. f) ! <k>;\n"

EXITING = "import os\n\ndef f(a, k):\n    if a == 7:\n        os._exit(3)\n    return {'a': a}\n"
SEGFAULT = ("import ctypes\n\ndef f(a, k):\n    if a == 7:\n        ctypes.string_at(0)  # reads address 0: SIGSEGV\n"
            "    return {'a': a}\n")


def load(tmp_path, source: str, boxes: str):
    import snet

    (tmp_path / "net.snet").write_text(source)
    (tmp_path / "net.py").write_text(boxes)
    return snet.load(str(tmp_path / "net.snet"))


def run_until_error(net, records, **options):
    """The outputs the run gave, and the error it ended with."""
    outputs = []
    execution = net.run(records, **options)
    with pytest.raises(SNetRuntimeError) as error:
        for record in execution:
            outputs.append(record)
    return outputs, error.value


def values(records) -> list:
    return [r["a"] for r in records]


def test_a_box_that_exits_is_named_with_its_input_and_earlier_outputs_are_kept(spark_options, tmp_path, caplog):
    net = load(tmp_path, SPLIT, EXITING)
    records = [{"a": i, "<k>": i % 3} for i in range(12)]
    with caplog.at_level(logging.WARNING, logger="snet.spark"):
        outputs, error = run_until_error(net, records, **spark_options(spark_batch=100))
    assert isinstance(error, SNetBoxError)
    assert error.message == "box 'f' ended its Python worker (exit status 3) on input (a=7, <k>=1)"
    assert error.span is not None and error.span.location.endswith("net.snet:3:11")
    assert 'the split\'s input record: {"a":7,"<k>":1}' in error.detail
    assert "Python worker exited unexpectedly" in error.detail
    # the inputs before the failing one, each once: what a local run gives before the same record
    assert sorted(values(outputs)) == list(range(7))
    assert any("a Python worker died; running the batch again" in m for m in caplog.messages)


def test_a_segfault_in_a_box_is_named(spark_options, tmp_path):
    net = load(tmp_path, SPLIT, SEGFAULT)
    records = [{"a": i, "<k>": i % 2} for i in range(10)]
    outputs, error = run_until_error(net, records, **spark_options(spark_batch=100))
    assert error.message == "box 'f' ended its Python worker (killed by SIGSEGV) on input (a=7, <k>=1)"
    assert sorted(values(outputs)) == list(range(7))


def test_a_crash_in_a_later_batch_of_a_stateful_split_keeps_every_earlier_output(spark_options, tmp_path):
    net = load(tmp_path, STATEFUL, EXITING)
    # b values first fill each replica's cell in batch 1; a values pair with them later
    records = [{"b": 100 + k, "<k>": k} for k in range(3)] + [{"a": i, "<k>": i % 3} for i in range(12)]
    outputs, error = run_until_error(net, records, **spark_options(spark_batch=4))
    assert error.message == "box 'f' ended its Python worker (exit status 3) on input (a=7, <k>=1)"
    # the first a of each tag pairs with its b (stored in batch 1), later ones pass the fired cell
    assert sorted(values(outputs)) == list(range(7))
    assert sorted(r.get("b") for r in outputs if "b" in r) == [100, 101, 102]


FLAKY = '''
import os

COUNT = {path!r}

def f(a, k):
    if a == 5:
        with open(COUNT, "a+") as counter:
            counter.seek(0)
            deaths = len(counter.read())
            if deaths < 2:  # both of Spark's attempts die; the crash diagnosis's run lives
                counter.write("x")
                counter.flush()
                os._exit(9)
    return {{"a": a}}
'''


def test_a_worker_that_dies_only_twice_gives_the_exact_output(spark_options, tmp_path, caplog):
    count = tmp_path / "deaths"
    net = load(tmp_path, SPLIT, FLAKY.format(path=str(count)))
    records = [{"a": i, "<k>": i % 3} for i in range(9)]
    with caplog.at_level(logging.WARNING, logger="snet.spark"):
        outputs = list(net.run(records, **spark_options(spark_batch=100)))
    assert count.read_text() == "xx"  # Spark's two attempts did die
    assert Counter(json.dumps(r) for r in outputs) == Counter(json.dumps({"a": i}) for i in range(9))
    assert any("the batch ran again and completed" in m for m in caplog.messages)


def test_crash_texts_are_told_from_python_errors():
    assert looks_like_crash("org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)")
    assert looks_like_crash("ExecutorLostFailure (executor 1 exited caused by one of the running tasks)")
    assert not looks_like_crash("pyspark.errors.exceptions.base.PySparkRuntimeError: ModuleNotFoundError: x")


ORPHAN = """
import os, sys, time
from snet.isolation import Child
child = Child(lambda: time.sleep(120))  # a long box call
print(child.pid, flush=True)
time.sleep(120)
"""


def _running(pid: int) -> bool:
    """True while ``pid`` is a process that has not ended (a zombie left to an init that does not reap: ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's")
def test_a_forked_child_in_a_box_call_ends_with_the_process_that_forked_it():
    """A Python worker killed outright (Spark stopping a task, an executor lost) takes its forked child with it;
    before, the child went on until the box call ended and its next write failed."""
    import subprocess
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    worker = subprocess.Popen([sys.executable, "-c", ORPHAN], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(root)})
    try:
        child = int(worker.stdout.readline())
        assert _running(child)
    finally:
        worker.kill()
        worker.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    ended = not _running(child)
    if not ended:
        os.kill(child, 9)
    assert ended, "the child outlived the process that forked it"


def test_the_dataframe_path_names_the_crash_too(spark_options, tmp_path):
    """``snet.path=dataframe`` (the Spark Connect path): the diagnosis runs through mapInArrow."""
    net = load(tmp_path, SPLIT, EXITING)
    records = [{"a": i, "<k>": i % 3} for i in range(9)]
    outputs, error = run_until_error(net, records, **spark_options(spark_batch=100,
                                                                    spark_conf={"snet.path": "dataframe"}))
    assert error.message == "box 'f' ended its Python worker (exit status 3) on input (a=7, <k>=1)"
    assert sorted(values(outputs)) == list(range(7))


# -- on_error "skip": the crashed record is skipped, the run goes on --------------------------------------------

SKIPPED = ("import os\n\ndef init():\n    return {'<x>': 1}\n\n"
           "def f(a, k):\n    if a in (1, 7):\n        os._exit(3)\n    return {'a': a}\n")
# an initialiser in each replica: when the first record of tag 1 (a=1) is skipped, the next one makes the replica
INITIALISED = "net crashing {\n  box init ( -> (<x>));\n  box f((a, <k>) -> (a));\n} connect (init | f) ! <k>;\n"


def canonical(records) -> Counter:
    return Counter(json.dumps(r, sort_keys=True) for r in records)


def run_skipping(net, records, **options):
    errors: list[dict] = []
    execution = net.run(records, on_error=errors.append, **options)
    return list(execution), errors, execution


@pytest.mark.parametrize("source, batch", [(SPLIT, 100), (STATEFUL, 4), (INITIALISED, 5)],
                         ids=["stateless", "stateful", "initialiser"])
def test_under_skip_a_crashed_record_is_skipped_and_every_other_output_given(spark_options, tmp_path, caplog,
                                                                             source, batch):
    net = load(tmp_path, source, SKIPPED)
    records = [{"b": 100 + k, "<k>": k} for k in range(3)] if source == STATEFUL else []
    records += [{"a": i, "<k>": i % 3} for i in range(12)]
    # the reference engine without Spark, on the input without the records that crash
    expected = list(net.run([r for r in records if r.get("a") not in (1, 7)], engine="reference"))
    with caplog.at_level(logging.WARNING, logger="snet"):
        outputs, errors, execution = run_skipping(net, records, **spark_options(spark_batch=batch))
    assert canonical(outputs) == canonical(expected)
    if source == INITIALISED:
        assert outputs.count({"<x>": 1}) == 3  # one replica per tag, tag 1's made by a=4
    assert sorted((e["error"], e["record"]["a"]) for e in errors) == [
        (f"box 'f' ended its Python worker (exit status 3) on input (a={a}, <k>={a % 3})", a) for a in (1, 7)]
    line = source.splitlines().index(next(text for text in source.splitlines() if "connect" in text))
    at = f"net.snet:{line + 1}:{source.splitlines()[line].rindex(' f') + 2}"  # where the box is used in the split
    assert all(e["at"].endswith(at) and e["box"] == "f" and e["exception"] == "SNetBoxError"
               and e["record"] == {"a": e["record"]["a"], "<k>": e["record"]["a"] % 3} for e in errors), errors
    assert execution.failures == 2
    skipped = [m for m in caplog.messages if m.endswith("(record skipped)")]
    assert len(skipped) == 2 and "box 'f' ended its Python worker (exit status 3) on input (a=7, <k>=1)" \
        in "\n".join(skipped)
    assert not any("the batch ran again and completed" in m for m in caplog.messages)


def test_under_skip_a_segfault_on_the_dataframe_path_is_skipped_too(spark_options, tmp_path):
    net = load(tmp_path, SPLIT, SEGFAULT)
    records = [{"a": i, "<k>": i % 2} for i in range(10)]
    outputs, errors, _ = run_skipping(net, records, **spark_options(spark_batch=100,
                                                                      spark_conf={"snet.path": "dataframe"}))
    assert sorted(values(outputs)) == [i for i in range(10) if i != 7]
    assert [e["error"] for e in errors] == ["box 'f' ended its Python worker (killed by SIGSEGV) on input (a=7, <k>=1)"]


def test_snet_run_with_on_error_skip_goes_past_a_crashing_record(spark, tmp_path, capsys):
    """The command line: exit 0, the skip warning and count on standard error, every other output, the error file."""
    from snet.cli import main

    load(tmp_path, SPLIT, SKIPPED)
    records = [{"a": i, "<k>": i % 3} for i in range(12)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    capsys.readouterr()
    status = main(["run", str(tmp_path / "net.snet"), "-i", str(tmp_path / "in.jsonl"), "-o",
                   str(tmp_path / "out.jsonl"), "--spark", "local[2,2]", "--spark-splits", "all",
                   "--errors", str(tmp_path / "errors.jsonl")])
    err = capsys.readouterr().err
    assert status == 0, err
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted(values(written)) == [i for i in range(12) if i not in (1, 7)]
    for a in (1, 7):
        assert f"net.snet:3:11: warning: box 'f' ended its Python worker (exit status 3) on input (a={a}, <k>={a % 3}) " \
               "(record skipped)" in err
    assert "snet: 2 records failed and were skipped" in err
    dead = [json.loads(line) for line in (tmp_path / "errors.jsonl").read_text().splitlines()]
    assert sorted(d["record"]["a"] for d in dead) == [1, 7] and {d["box"] for d in dead} == {"f"}
