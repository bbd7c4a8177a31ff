"""The contract of a split executor, checked on every executor: local split processes and Spark.

Each test runs once per executor and engine: ``--split-processes 2``
(snet.splitproc) under the reference engine and FRONT, and Spark
(``local[2,2]``, the master of tests/spark, whose session they share) under
both; the Spark runs are marked slow and skip, saying why, where pyspark or
Java is missing.  What every executor must give:

* a replica's state (a synchro-cell) carried from batch to batch;
* ``!!`` order exactly, per-tag order, whatever the batch boundaries;
* a box's error as the same error a run in place gives, the outputs of the
  inputs before it written;
* a process that dies in a box (``os._exit``) named with the box and the
  record, the outputs of the inputs before it written;
* Ctrl-C: ``snet run`` ends with status 1 and "error: interrupted", and
  leaves no process behind.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from snet.errors import SNetBoxError, SNetRuntimeError

ROOT = Path(__file__).resolve().parents[2]


def _spark_conftest():
    """tests/spark/conftest.py (its master and its check for pyspark and Java), loaded under a name of its own."""
    spec = importlib.util.spec_from_file_location("spark_conftest_for_splitexec", ROOT / "tests/spark/conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SPARK = _spark_conftest()
SLOW_SPARK = [pytest.mark.slow, pytest.mark.spark]
EXECUTORS = [
    pytest.param(("processes", "reference"), id="processes-reference"),
    pytest.param(("processes", "front"), id="processes-front"),
    pytest.param(("spark", "reference"), id="spark-reference", marks=SLOW_SPARK),
    pytest.param(("spark", "front"), id="spark-front", marks=SLOW_SPARK),
]


@pytest.fixture(params=EXECUTORS)
def executor(request):
    """``(kind, options(batch=N))``: run keywords that put every split of the network in this executor."""
    kind, engine = request.param
    engine_options = {"engine": engine, **({"workers": 2} if engine == "front" else {})}
    if kind == "spark":
        missing = SPARK.spark_missing()
        if missing:
            pytest.skip(missing)
        from snet.spark.cluster.session import get_session

        get_session(SPARK.MASTER, {"spark.default.parallelism": "2"})  # the session tests/spark use

        def options(batch: int = 1024):
            return {"spark_master": SPARK.MASTER, "spark_splits": "all", "spark_batch": batch, **engine_options}
    else:
        def options(batch: int = 1024):
            return {"split_processes": 2, "process_splits": "all", "process_batch": batch, **engine_options}
    return kind, options


def load(tmp_path: Path, source: str, boxes: str):
    """A network from files, as users have them: the boxes in a ``net.py`` beside ``net.snet``."""
    import snet

    (tmp_path / "net.snet").write_text(source)
    (tmp_path / "net.py").write_text(boxes)
    return snet.load(str(tmp_path / "net.snet"))


def executor_part(stats):
    return stats.spark if stats.spark is not None else stats.split_processes


def run_until_error(net, records, **options):
    """The outputs the run gave, and the error it ended with."""
    outputs = []
    with pytest.raises(SNetRuntimeError) as error:
        for record in net.run(records, **options):
            outputs.append(record)
    return outputs, error.value


PAIRS = "net pairs {\n  box f((a, b, <k>) -> (s, <k>));\n} connect ([| {a, <k>}, {b, <k>} |] .. f) ! <k>;\n"
ADD = "def f(a, b, k):\n    return {'s': a + b, '<k>': k}\n"


def test_a_replicas_state_is_carried_across_batches(executor, tmp_path):
    kind, options = executor
    net = load(tmp_path, PAIRS, ADD)
    # the b of each tag in the first batches, its a in later ones: each cell holds its b across batches
    records = [{"b": 100 * k, "<k>": k} for k in range(8)] + [{"a": k, "<k>": k} for k in reversed(range(8))]
    execution = net.run(records, **options(batch=4))
    outputs = list(execution)
    assert Counter(json.dumps(o, sort_keys=True) for o in outputs) == Counter(
        json.dumps({"s": 101 * k, "<k>": k}, sort_keys=True) for k in range(8))
    assert executor_part(execution.stats()).flushes >= 4  # 16 records in batches of 4 at most


def test_a_replica_that_never_fires_is_reported_at_the_end(executor, tmp_path):
    kind, options = executor
    net = load(tmp_path, PAIRS, ADD)
    execution = net.run([{"b": 1, "<k>": 3}, {"a": 2, "<k>": 4}, {"b": 3, "<k>": 4}], **options(batch=1))
    assert list(execution) == [{"s": 5, "<k>": 4}]
    assert len(execution.warnings) == 1 and "synchro-cell discarded with 1 of 2 patterns filled" in \
        execution.warnings[0]


ORDERED = "net ordered {\n  box work((v, <k>) -> (v, <k>));\n} connect work !! <k>;\n"
SLOW_FOR_SOME = ("import time\n\ndef work(v, k):\n    time.sleep((k % 3) * 0.01)\n"
                 "    return {'v': v * 10, '<k>': k}\n")


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 7, 1024])
def test_a_deterministic_split_keeps_the_input_order(executor, tmp_path, batch):
    kind, options = executor
    net = load(tmp_path, ORDERED, SLOW_FOR_SOME)
    records = [{"v": i, "<k>": (i * 7) % 5} for i in range(30)]
    assert list(net.run(records, **options(batch=batch))) == [{"v": 10 * i, "<k>": (i * 7) % 5} for i in range(30)]


PER_TAG = "net pertag {\n  box work((v, <k>) -> (v, <k>));\n} connect work ! <k>;\n"


def test_each_tag_keeps_its_order(executor, tmp_path):
    kind, options = executor
    net = load(tmp_path, PER_TAG, SLOW_FOR_SOME)
    records = [{"v": i, "<k>": i % 4} for i in range(40)]
    outputs = list(net.run(records, **options(batch=9)))
    for k in range(4):
        assert [o["v"] for o in outputs if o["<k>"] == k] == [10 * i for i in range(40) if i % 4 == k]


SPLIT = "net failing {\n  box f((a, <k>) -> (a));\n} connect f ! <k>;\n"
RAISING = "def f(a, k):\n    if a == 7:\n        raise ValueError('seven is refused')\n    return {'a': a}\n"
EXITING = "import os\n\ndef f(a, k):\n    if a == 7:\n        os._exit(3)\n    return {'a': a}\n"


def test_a_box_error_is_the_error_of_a_run_in_place(executor, tmp_path):
    kind, options = executor
    net = load(tmp_path, SPLIT, RAISING)
    records = [{"a": i, "<k>": i % 3} for i in range(12)]
    _, local = run_until_error(net, records, engine="reference")
    outputs, error = run_until_error(net, records, **options(batch=100))
    assert type(error) is type(local) is SNetBoxError
    assert error.message == local.message
    assert "ValueError: seven is refused" in error.detail
    assert error.span == local.span
    # the inputs before the failing one, each once
    assert sorted(o["a"] for o in outputs) == list(range(7))


def test_a_process_that_dies_in_a_box_is_named_with_the_box_and_the_record(executor, tmp_path):
    kind, options = executor
    net = load(tmp_path, SPLIT, EXITING)
    records = [{"a": i, "<k>": i % 3} for i in range(12)]
    outputs, error = run_until_error(net, records, **options(batch=100))
    assert isinstance(error, SNetBoxError)
    assert error.message.startswith("box 'f' ended ") and "(exit status 3)" in error.message, error.message
    assert error.span is not None and error.span.location.endswith("net.snet:3:11")  # the box in the network
    assert 'the split\'s input record: {"a":7,"<k>":1}' in error.detail
    assert sorted(o["a"] for o in outputs) == list(range(7))


def test_under_skip_the_record_a_process_died_on_fails_alone(executor, tmp_path):
    """``on_error`` "skip", replicas without state: the record is skipped, the records after it still run."""
    kind, options = executor
    net = load(tmp_path, SPLIT, EXITING)
    failures: list[dict] = []
    outputs = list(net.run([{"a": i, "<k>": i % 3} for i in range(12)], on_error=failures.append,
                           **options(batch=100)))
    assert sorted(o["a"] for o in outputs) == [i for i in range(12) if i != 7]
    assert len(failures) == 1, failures
    assert failures[0]["record"] == {"a": 7, "<k>": 1} and failures[0]["box"] == "f"
    assert failures[0]["error"].startswith("box 'f' ended ") and "(exit status 3)" in failures[0]["error"]


def descendants(pid: int) -> set[int]:
    """The processes under ``pid`` now (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (an ended process its parent has not reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc") or os.name != "posix", reason="needs Linux /proc and SIGINT")
def test_ctrl_c_ends_the_run_and_every_process_of_it(executor, tmp_path):
    interrupt_and_check(executor, tmp_path, group=False)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc") or os.name != "posix", reason="needs Linux /proc and SIGINT")
@pytest.mark.parametrize("engine", ["reference", "front"])
def test_ctrl_c_at_a_terminal_reaches_the_split_processes_too_and_ends_them(engine, tmp_path):
    """A terminal sends SIGINT to the whole foreground group: the split processes ignore it, the run ends them."""
    def options(batch: int = 1024):
        return {"engine": engine}
    interrupt_and_check(("processes", options), tmp_path, group=True)


def interrupt_and_check(executor, tmp_path: Path, group: bool) -> None:
    """``snet run`` of a long input through the executor, SIGINT once it is under way (to the run, or to its
    whole process group): exit status 1, "interrupted", no traceback, and no process of the run left."""
    kind, options = executor
    (tmp_path / "net.snet").write_text(PER_TAG)
    (tmp_path / "net.py").write_text("import time\n\ndef work(v, k):\n    if v == 40:\n"
                                     "        open('called-40', 'w').close()\n"
                                     "    time.sleep(0.01)\n    return {'v': v, '<k>': k}\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"v": i, "<k>": i % 8}) + "\n" for i in range(20000)))
    words = (["--spark", SPARK.MASTER, "--spark-splits", "all", "--spark-batch", "16"] if kind == "spark" else
             ["--split-processes", "2", "--process-splits", "all", "--process-batch", "16"])
    words += ["--engine", options()["engine"]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "snet", "run", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl",
                             *words], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300  # upper bound only: a Spark start on a busy machine
        while not (tmp_path / "called-40").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read()
        under = descendants(proc.pid)
        if kind == "processes":
            assert len(under) >= 2  # the split processes (and their fork server)
        if group:
            os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the whole foreground group
        else:
            proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    stderr = proc.stderr.read()
    assert code == 1 and stderr.strip().splitlines()[-1].startswith("error: interrupted"), stderr
    if kind == "processes":  # (py4j logs its own tracebacks when Ctrl-C interrupts a Spark job)
        assert "Traceback" not in stderr, stderr
    deadline = time.monotonic() + 60
    while any(running(p) for p in under) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in under if running(p)], "processes left after Ctrl-C"
    written = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(written) < 20000


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc") or os.name != "posix", reason="needs Linux /proc and signals")
def test_split_processes_end_with_a_run_killed_outright(tmp_path):
    """SIGKILL leaves the run no chance to end its processes: each ends with it all the same, even one in
    the middle of a long box call (it dies with the process that started it)."""
    (tmp_path / "net.snet").write_text(PER_TAG)
    (tmp_path / "net.py").write_text("import time\n\ndef work(v, k):\n    if v == 3:\n"
                                     "        open('called-3', 'w').close()\n        time.sleep(600)\n"
                                     "    return {'v': v, '<k>': k}\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"v": i, "<k>": i % 8}) + "\n" for i in range(100)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "snet", "run", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl",
                             "--split-processes", "2"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300  # upper bound only
        while not (tmp_path / "called-3").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read()
        under = descendants(proc.pid)
        assert len(under) >= 2
        proc.kill()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.monotonic() + 60  # at once at rest; an upper bound for a busy machine
    while any(running(p) for p in under) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in under if running(p)]
    for pid in left:  # not to leave them behind when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not left, "split processes left after the run was killed"
