"""Runs with splits on a real local Spark equal runs without it.

Hand-built graphs (tests/spark/handmade.py) keep these independent of the
front end; test_spark_conformance.py runs the shared cases from source.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import handmade  # noqa: E402

import snet  # noqa: E402
from snet.backends import RunOptions, start  # noqa: E402
from snet.errors import SNetBoxError, SNetRuntimeError  # noqa: E402

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


def run(graph, boxes, records, engine="reference", **options):
    execution = start(engine, graph, boxes, records, RunOptions(**options))
    outputs = list(execution)
    return outputs, execution


def multiset(records):
    return Counter(json.dumps(r, sort_keys=True) for r in records)


def pairing_input(keys=5, per_key=4):
    """a and b records for every key, interleaved so that cells fill across batches."""
    records = []
    for i in range(per_key):
        records += [{"a": i, "<k>": k} for k in range(keys)]
        records += [{"b": 100 + i, "<k>": k, "x": i} for k in reversed(range(keys))]
    records.append({"a": 99, "<k>": keys})  # a cell left unfinished: a termination warning
    return records


@pytest.mark.parametrize("batch", [1, 2, 7])
def test_synchro_cells_keep_state_across_small_batches(spark_options, batch):
    graph = handmade.sync_split()
    records = pairing_input()
    local, local_run = run(graph, {}, records)
    out, execution = run(graph, {}, records, **spark_options(spark_batch=batch))
    assert multiset(out) == multiset(local)
    assert execution.warnings == local_run.warnings
    assert len(execution.warnings) == 1
    stats = execution.stats().spark.splits["hand.snet:1:33"]
    assert stats.batches == -(-len(records) // batch)
    assert stats.records == len(records)
    assert stats.replicas == 6


def test_records_kept_for_ever_in_a_replica_on_spark_end_the_run_as_in_process(spark_options):
    """A record no pattern of a synchro-cell star matches stays in its replica on the executor; once the input
    has ended, the run fails saying how many, as in process (the other records' outputs first)."""
    net = snet.load("net stuck connect ([| {a}, {b} |] * {a, b}) ! <k>;")
    records = [{"a": 1, "<k>": 0}, {"c": 5, "<k>": 1}, {"b": 2, "<k>": 0}, {"c": 6, "<k>": 2}, {"c": 7, "<k>": 3}]
    got = []
    with pytest.raises(SNetRuntimeError, match=r"cannot terminate: 3 record\(s\) stay in the synchro-cell star"):
        for record in net.run(records, **spark_options(spark_batch=2)):
            got.append(record)
    assert got == [{"a": 1, "b": 2, "<k>": 0}]


def test_range_split_copies_in_ascending_order(spark_options):
    graph = handmade.sync_split(tag="<lo>", hi_tag="<hi>")
    records = [{"a": 1, "<lo>": 0, "<hi>": 3}, {"a": 2, "<lo>": 5, "<hi>": 4}, {"b": 7, "<lo>": 2, "<hi>": 2},
               {"b": 8, "<lo>": 1, "<hi>": 3}, {"a": 3, "<lo>": 3, "<hi>": 3}]
    local, _ = run(graph, {}, records)
    for batch in (1, 3, 100):
        out, _ = run(graph, {}, records, **spark_options(spark_batch=batch))
        assert out == local  # also in order: copies come back per input, lo..hi


def test_a_range_split_without_state_gives_each_input_a_copy_for_every_value_in_order(spark_options):
    """A stateless operand's records go to the executors without their keys; a range split's copies come back
    joined per input, and an error keeps the outputs of the inputs before it (batches of 9 over 2 tasks)."""
    def twice(v):
        if v == 23:
            raise ValueError("twenty-three")
        return [{"v": v}, {"v": -v}]

    net = snet.load("box twice ((v) -> (v)); net r connect twice ! <lo>:<hi>;", boxes={"twice": twice})
    records = [{"v": i, "<lo>": i % 3, "<hi>": i % 3 + i % 4 - 1} for i in range(30)]
    local, spark = [], []
    for into, options in ((local, {"engine": "reference"}), (spark, spark_options(spark_batch=9))):
        with pytest.raises(SNetBoxError, match="twenty-three"):
            for record in net.run(records, **options):
                into.append(record)
    assert spark == local and len(local) == sum(2 * max(0, i % 4) for i in range(23))
    clean = [r for r in records if r["v"] != 23]
    assert list(net.run(clean, **spark_options(spark_batch=9))) == list(net.run(clean, engine="reference"))


def work(v, k):
    return {"v": v * 10, "<k>": k}


def echo(v, k):
    return {"v": v, "<k>": k}


@pytest.mark.parametrize("deterministic", [False, True])
def test_box_split_orders_outputs_per_input(spark_options, deterministic):
    graph = handmade.box_split(deterministic=deterministic)
    records = [{"v": i, "<k>": (i * 7) % 5} for i in range(40)]
    local, _ = run(graph, {"work": work}, records)
    out, execution = run(graph, {"work": work}, records, **spark_options(spark_batch=16))
    assert out == local
    stats = execution.stats().spark.splits["hand.snet:1:54"]
    assert stats.batches == 3 and stats.boxes["work"].calls == 40


def test_large_records_go_in_batches_kept_to_their_bytes(spark_options, monkeypatch):
    """No --spark-batch: the default 4,096 records a batch, fewer where the records are large (a batch's
    payloads and results are held in the JVM at once: 4,096 records of 64 KiB ran local[2] out of Java heap
    space).  Here MOST_BYTES is 256 KiB and a record about 3 KiB each way: 32 a batch, from the first on."""
    from snet.splitexec import SplitBatchSizer

    monkeypatch.setattr(SplitBatchSizer, "MOST_BYTES", 256 << 10)
    graph = handmade.box_split()
    records = [{"v": "x" * 3000 + str(i), "<k>": i % 5} for i in range(300)]
    out, execution = run(graph, {"work": echo}, records, **spark_options())
    assert multiset(out) == multiset(records)
    spark = execution.stats().spark
    assert spark.batch_sizes[0] == 32 and max(spark.batch_sizes) <= 32, spark.batch_sizes
    assert spark.splits["hand.snet:1:54"].batches >= 300 // 32


def test_while_a_batch_runs_the_next_fills_to_its_size_and_no_further(spark_options, caplog):
    """The input pauses after three records, so the quiet network runs that partial batch (a Spark job, a
    tenth of a second at least); meanwhile FRONT's other worker admits input into the next batch only until
    two batches' worth wait (the one running and the one full), so a batch holds at most twice the size. It
    used to take in all the rest of the input meanwhile: batches of 3 and 197."""
    import logging
    import time

    graph = handmade.box_split()
    records = [{"v": i, "<k>": i % 5} for i in range(200)]

    def source():
        for record in records:
            if record["v"] == 3:
                time.sleep(0.3)  # longer than the executor's linger (0.05 s): the batch of three runs
            yield record

    with caplog.at_level(logging.INFO, logger="snet.spark"):
        out, _ = run(graph, {"work": echo}, source(), **spark_options(spark_batch=8))
    assert multiset(out) == multiset(records)
    sizes = [int(m.split(" records")[0].rsplit(" ", 1)[1]) for m in caplog.messages
             if m.startswith("spark split ") and " records, " in m]
    assert sum(sizes) == 200 and max(sizes) <= 16, sizes


def test_dataframe_path_gives_the_same_results(spark_options):
    graph = handmade.box_split(sync_first=True)
    records = [{"w": 0, "<k>": 0}] + [{"v": i, "<k>": i % 3} for i in range(12)] + [{"w": 1, "<k>": 2}]
    local, local_run = run(graph, {"work": work}, records)
    out, execution = run(graph, {"work": work}, records,
                         **spark_options(spark_batch=5, spark_conf={"snet.path": "dataframe"}))
    assert multiset(out) == multiset(local)
    assert sorted(execution.warnings) == sorted(local_run.warnings)
    assert execution.stats().spark.splits["hand.snet:1:54"].path == "dataframe"


def test_box_exception_on_an_executor_reads_like_a_local_one(spark_options):
    graph = handmade.box_split()

    def work(v, k):
        if v == 13:
            raise ValueError("thirteen")
        return {"v": v, "<k>": k}

    records = [{"v": i, "<k>": i % 4} for i in range(20)]
    with pytest.raises(SNetBoxError) as local_error:
        list(start("reference", graph, {"work": work}, records))
    got = []
    options = spark_options(spark_batch=8)
    with pytest.raises(SNetBoxError) as spark_error:
        for record in start(options.pop("engine"), graph, {"work": work}, records, RunOptions(**options)):
            got.append(record)
    assert spark_error.value.render() == local_error.value.render()
    assert "box 'work' raised ValueError: thirteen (input record {v, <k>})" in spark_error.value.render()
    assert got == [{"v": i, "<k>": i % 4} for i in range(13)]  # the outputs before the failing input


def test_skipped_records_on_an_executor_are_reported_as_local_ones(spark_options, caplog):
    """on_error="skip" with the failing box inside a split that runs on Spark: same outputs and error records."""
    graph = handmade.box_split()

    def work(v, k):
        if v % 7 == 3:
            raise ValueError(f"bad {v}")
        return {"v": v, "<k>": k}

    records = [{"v": i, "<k>": i % 4} for i in range(40)]
    local_errors, spark_errors = [], []
    local = list(start("reference", graph, {"work": work}, records, RunOptions(on_error=local_errors.append)))
    options = spark_options(spark_batch=8, on_error=spark_errors.append)
    caplog.clear()
    with caplog.at_level("WARNING", logger="snet"):
        execution = start(options.pop("engine"), graph, {"work": work}, records, RunOptions(**options))
        out = list(execution)
    assert multiset(out) == multiset(local) and len(out) == 34
    assert sorted(map(json.dumps, spark_errors)) == sorted(map(json.dumps, local_errors))
    assert len(spark_errors) == 6 and spark_errors[0]["exception"] == "ValueError"
    assert execution.failures == 6
    assert sum("(record skipped)" in r.getMessage() for r in caplog.records) == 6


def test_a_request_skipped_on_an_executor_fails_its_future(spark_options):
    import snet

    def work(v, k):
        if v == 3:
            raise ValueError("bad 3")
        return {"v": v, "<k>": k}

    net = snet.load("box work ((v, <k>) -> (v, <k>)); net n connect work ! <k>;", boxes={"work": work})
    with net.session(**spark_options(spark_batch=4, on_error="skip")) as session:
        futures = {v: session.submit({"v": v, "<k>": v % 3}) for v in range(8)}
        for v, future in futures.items():
            if v == 3:
                with pytest.raises(SNetBoxError, match="box 'work' raised ValueError: bad 3"):
                    future.result(timeout=300)
            else:
                assert future.result(timeout=300) == [{"v": v, "<k>": v % 3}]
    assert session.stats().failures == 1


FLAKY = '''
import os, sys

def work(v, k):
    marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "failed-once")
    if v == 5 and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(3)  # the Python worker dies: Spark fails the task and retries it
    return {"v": v, "<k>": k}
'''


def test_a_task_that_fails_once_is_retried_without_duplicates(spark_options, tmp_path):
    from snet.core.boxes import load_module_from_path

    (tmp_path / "flaky.py").write_text(FLAKY)
    module = load_module_from_path(str(tmp_path / "flaky.py"))
    graph = handmade.box_split(sync_first=True)
    records = [{"w": 0, "<k>": k} for k in range(3)] + [{"v": i, "<k>": i % 3} for i in range(9)]
    out, execution = run(graph, {"work": module.work}, records, **spark_options(spark_batch=6))
    assert (tmp_path / "failed-once").exists()  # the failure did happen
    expected = [{"v": i, "w": 0, "<k>": i} for i in range(3)] + [{"v": i, "<k>": i % 3} for i in range(3, 9)]
    assert multiset(out) == multiset(expected)
    assert execution.warnings == []


KILLS_THE_JVM = """
import os
import signal


def f(v, k):
    if v == 3:  # the JVM of this task's executor dies, as when the kernel kills it for its memory
        with open(f"/proc/{os.getppid()}/stat") as stat:  # (this worker's parent is pyspark's daemon)
            jvm = int(stat.read().rsplit(")", 1)[1].split()[1])
        os.kill(jvm, signal.SIGKILL)
    return {"v": v, "<k>": k}
"""


@pytest.mark.slow  # a Spark of its own: the one of these tests would not outlive it
def test_a_jvm_that_dies_mid_run_ends_it_with_the_split_s_error_and_the_outputs_before_it(tmp_path):
    """``snet run --spark local[2]``, a batch a record: the JVM (driver and executor in one) is killed by the
    task of record 3.  The run ends at once with status 1, an error at the split's position (whichever py4j
    call noticed first), and the outputs of records 0-2 in the output file; not a write error of the output
    file, which the connection's OSError once read as."""
    (tmp_path / "net.snet").write_text("net one {\n  box f((v, <k>) -> (v, <k>));\n} connect f ! <k>;\n")
    (tmp_path / "net.py").write_text(KILLS_THE_JVM)
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"v": i, "<k>": i % 2}) + "\n" for i in range(8)))
    done = subprocess.run([sys.executable, "-m", "snet", "run", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl",
                           "--spark", "local[2]", "--spark-batch", "1", "-w", "1"], cwd=tmp_path, timeout=300,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if " error: " in line or line.startswith("error: ")]
    assert errors and errors[-1].startswith("net.snet:3:13: error: "), done.stderr[-3000:]
    assert "cannot write" not in done.stderr
    assert [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()] == \
        [{"v": i, "<k>": i % 2} for i in range(3)]


def test_without_a_master_spark_is_never_imported(tmp_path):
    code = (
        "import sys; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
        "import handmade\n"
        "from snet.backends import RunOptions\n"
        "from snet.backends import start\n"
        "out = list(start('reference', handmade.sync_split(), {}, [{'a': 1, '<k>': 0}, {'b': 2, '<k>': 0}],"
        " RunOptions()))\n"
        "assert out == [{'a': 1, 'b': 2, '<k>': 0}], out\n"
        "assert not [m for m in sys.modules if m.startswith(('pyspark', 'snet.spark'))]\n"
    ) % (str(Path(__file__).resolve().parents[2]), str(Path(__file__).parent))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


CONNECT = '''
import os, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r})
from pyspark.sql import SparkSession
# A local Spark Connect server in this process; snet connects to it as a client.
SparkSession.builder.remote("local[2]").getOrCreate()
import handmade
from snet.backends import RunOptions
from snet.backends import start

def work(v, k):
    return {{"v": v * 10, "<k>": k}}

graph = handmade.box_split(sync_first=True)
records = [{{"w": 0, "<k>": 0}}] + [{{"v": i, "<k>": i % 3}} for i in range(12)] + [{{"w": 1, "<k>": 2}}]
local_run = start("reference", graph, {{"work": work}}, records)
local = list(local_run)
run = start("reference", graph, {{"work": work}}, records,
            RunOptions(spark_master="sc://localhost:15002", spark_batch=5))
out = list(run)
key = lambda r: sorted(r.items())
assert sorted(out, key=key) == sorted(local, key=key), (out, local)
assert sorted(run.warnings) == sorted(local_run.warnings) and run.warnings, run.warnings
split = run.stats().spark.splits["hand.snet:1:54"]
assert split.path == "dataframe" and split.batches == 3, split
print("CONNECT OK")
'''


@pytest.mark.slow  # a Spark Connect server in a child process
def test_spark_connect_takes_the_dataframe_path(tmp_path):
    pytest.importorskip("grpc", reason="Spark Connect needs the connect client packages (grpcio, ...)")
    pytest.importorskip("zstandard", reason="Spark Connect needs the connect client packages")
    if not __import__("shutil").which("java"):
        pytest.skip("needs Java")
    code = CONNECT.format(root=str(Path(__file__).resolve().parents[2]), here=str(Path(__file__).parent))
    # A separate process: this one's JVM already holds the classic session.
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert "CONNECT OK" in result.stdout, result.stdout[-2000:] + result.stderr[-4000:]
