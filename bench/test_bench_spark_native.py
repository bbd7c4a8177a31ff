"""Spark-native runs: the whole network inside Spark tasks against the driver path, and against hand-written PySpark.

Run with ``python -m pytest bench/test_bench_spark_native.py --benchmark-only -s``
(``-s`` shows the figures).  One ``local[2]`` session serves every benchmark;
its start and the Python workers' first start are paid in a warm-up.  The
ratios come from runs alternated in the same process (``paired``).
The number of records is 100,000 unless the environment variable
``SNET_BENCH_RECORDS`` says otherwise; the target speaks of 1,000,000::

    SNET_BENCH_RECORDS=1000000 python -m pytest bench/test_bench_spark_native.py --benchmark-only -s

The default keeps a plain run to about two minutes on a shared 2-core
machine (per-record costs dominate at 100,000 already); at 1,000,000 the
three Spark benchmarks took about six minutes on a loaded machine.  ``SNET_BENCH_ROUNDS`` sets the number
of alternated pairs of each comparison (default 3 for the Parquet runs, 5
for ``spark_apply`` against ``mapInPandas``, 7 without Spark).

1. Parquet in, Parquet out, through a stateless 3-box network and through
   ``work ! <k>`` with 64 tag values: the Spark-native path
   (:class:`snet.spark.whole.native.NativeRun`: ``spark.read``, ``spark_apply``,
   ``df.write``) against the driver path, which is what ``snet run --spark``
   does with record files, applied to the same Parquet: the records come to
   the driver (``toLocalIterator``), the FRONT engine with 2 workers runs
   the network there with its split on Spark in batches, and the outputs go
   back with ``createDataFrame`` (``--spark-driver-fallback`` does exactly
   this).
2. ``spark_apply`` of the 3-box network against a hand-written
   ``mapInPandas`` that calls the same three functions per row, both ending
   in Spark's ``noop`` sink (the whole plan runs, nothing is written).
   Also printed: the box caller module the Python workers imported
   (``worker_box_caller``).  ``local[N]`` workers run in the driver's
   working directory, which comes first on their path: run from the
   repository's root they import the source tree's snet; run from another
   folder (``cd /tmp && PYTHONPATH=/path/to/repo python -m pytest
   /path/to/repo/bench/...``) they import the shipped one, as cluster
   executors do.
3. The same two without Spark: the task function ``map_partition`` on Arrow
   batches against the hand-written function's loop on pandas frames, with
   the shares of the task function's time (no JVM: steadier figures).
4. Networks that need an engine in their tasks: the task function on FRONT
   with one worker against the reference engine without Spark
   (``-k task_engine``), and ``spark_apply`` with FRONT tasks against
   reference-engine tasks in one session (``-k front_tasks``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

from conftest import paired

pytestmark = pytest.mark.spark

MASTER = "local[2]"
RECORDS = int(os.environ.get("SNET_BENCH_RECORDS", "100000"))
TAGS = 64
BATCH = 10_000  # Spark's Arrow batch size (spark.sql.execution.arrow.maxRecordsPerBatch)


def rounds(default: int) -> int:
    """The number of alternated pairs: ``SNET_BENCH_ROUNDS`` or the benchmark's own default."""
    return int(os.environ.get("SNET_BENCH_ROUNDS", default))

THREE = """
net three {
  box inc ((a) -> (a));
  box dbl ((a) -> (b));
  box tag ((b) -> (b, <even>));
} connect inc .. dbl .. tag;
"""
KEYED = """
net keyed {
  box work ((v, <k>) -> (v, <k>));
} connect work ! <k>;
"""


def inc(a):
    return {"a": a + 1}


def dbl(a):
    return {"b": a * 2}


def tag(b):
    return {"b": b, "<even>": int(b % 4 == 0)}


def by_hand_frame(frame):
    """The three boxes over one pandas frame, written by hand: the mapInPandas baseline."""
    import pandas as pd

    b, ids, even = [], [], []
    for a, i in zip(frame["a"].tolist(), frame["id"].tolist()):
        out = tag(**dbl(**inc(a)))
        b.append(out["b"])
        ids.append(i)
        even.append(out["<even>"])
    return pd.DataFrame({"b": b, "id": ids, "<even>": even})


def work(v, k):
    return {"v": v * 3 + 1, "<k>": k}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if shutil.which("java") is None or importlib.util.find_spec("pyspark") is None:
        pytest.skip("needs Java and pyspark")
    import pyarrow as pa
    import pyarrow.parquet as pq

    import snet
    from snet.spark.cluster.session import get_session

    session = get_session(MASTER, {"spark.default.parallelism": "2", "spark.sql.shuffle.partitions": "2"})
    folder = tmp_path_factory.mktemp("native")
    pq.write_table(pa.table({"a": list(range(RECORDS)), "id": list(range(RECORDS))}), folder / "three.parquet",
                   row_group_size=max(1, RECORDS // 4))
    pq.write_table(pa.table({"v": list(range(RECORDS)), "<k>": [i % TAGS for i in range(RECORDS)]}),
                   folder / "keyed.parquet", row_group_size=max(1, RECORDS // 4))
    nets = {"three": (snet.load(THREE, boxes={"inc": inc, "dbl": dbl, "tag": tag}), "b long, id long, `<even>` long"),
            "keyed": (snet.load(KEYED, boxes={"work": work}), None)}
    return session, folder, nets


def _native(setup, name):
    from snet.spark.whole.native import write_sink

    session, folder, nets = setup
    net, schema = nets[name]
    df = session.read.parquet(str(folder / f"{name}.parquet"))
    write_sink(net.spark_apply(df, schema), "parquet", str(folder / f"{name}-native.out"), "overwrite")


def _driver(setup, name):
    from snet.options import RunOptions
    from snet.spark.whole.dataframe import output_schema
    from snet.spark.whole.native import driver_run

    session, folder, nets = setup
    net, schema = nets[name]
    df = session.read.parquet(str(folder / f"{name}.parquet"))
    options = RunOptions.from_keywords(engine="front", workers=2, spark_master=MASTER)
    # (the output schema as the command line gives it to the driver path: every output column, typed)
    out = output_schema(net.graph, df.schema, schema, cli=True, boxes=net.boxes)
    written, failure = driver_run(net, session, df, "parquet", str(folder / f"{name}-driver.out"), options,
                                  "overwrite", out)
    assert failure is None
    return written


@pytest.mark.parametrize("name", ["three", "keyed"])
def test_native_parquet_against_the_driver_path(benchmark, report, setup, name):
    session, folder, _ = setup
    _native(setup, name)  # warm-up, and the outputs compared once
    assert _driver(setup, name) == RECORDS
    cols = ["b", "id", "`<even>`"] if name == "three" else ["v", "`<k>`"]
    native_rows, driver_rows = (sorted(tuple(r) for r in session.read.parquet(str(folder / f"{name}-{how}.out"))
                                       .selectExpr(*cols).collect()) for how in ("native", "driver"))
    assert native_rows == driver_rows and len(native_rows) == RECORDS
    figures = paired(lambda: _native(setup, name), lambda: _driver(setup, name), rounds=rounds(3))
    benchmark.pedantic(_native, args=(setup, name), rounds=1, iterations=1)
    report(records=RECORDS, network=name, native_s=figures["candidate_s"], driver_s=figures["baseline_s"],
           speedup=1 / figures["ratio"])
    assert figures["ratio"] < 1.0  # the target is a speed-up of 2 or more


def _box_caller_file(_):
    import snet.core.boxes

    return snet.core.boxes.__file__


def worker_box_caller(session) -> str:
    """The box caller module the Python workers import: the compiled one (from the source tree where the
    workers run in it, else extracted from the shipped zip) or the pure-Python one."""
    return ",".join(sorted(set(session.sparkContext.parallelize(range(2), 2).map(_box_caller_file).collect())))


def test_spark_apply_against_hand_written_map_in_pandas(benchmark, report, setup):
    import sys

    from pyspark import cloudpickle

    # The functions live in this test module, which Python workers cannot import: ship them by value
    # (snet does this for its own box functions).
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    session, folder, nets = setup
    net, schema = nets["three"]
    df = session.read.parquet(str(folder / "three.parquet"))

    def by_hand(frames):
        for frame in frames:
            yield by_hand_frame(frame)

    def hand():
        df.mapInPandas(by_hand, schema).write.format("noop").mode("overwrite").save()

    def applied():
        net.spark_apply(df, schema).write.format("noop").mode("overwrite").save()

    hand()
    applied()
    assert sorted(tuple(r) for r in df.mapInPandas(by_hand, schema).collect()) == \
        sorted(tuple(r) for r in net.spark_apply(df, schema).collect())
    figures = paired(applied, hand, rounds=rounds(5))
    benchmark.pedantic(applied, rounds=1, iterations=1)
    report(records=RECORDS, spark_apply_s=figures["candidate_s"], map_in_pandas_s=figures["baseline_s"],
           overhead=figures["ratio"], worker_box_caller=worker_box_caller(session))
    assert figures["ratio"] < 2.0  # the target is 1.2 or less


def test_the_task_function_against_the_hand_written_loop_without_spark(benchmark, report):
    """What a task's Python does, without Spark: ``map_partition`` on Arrow batches against ``by_hand``'s loop.

    The same RECORDS records in batches of 10,000 (Spark's Arrow batch size);
    the baseline is the body of the hand-written ``mapInPandas`` function
    (pandas frames in and out, the frames made from the batches beforehand,
    as Spark gives them).  Also printed: the shares of ``map_partition``
    (rows to records, the chain of box callers, records to Arrow batches).
    """
    import sys
    import time

    pytest.importorskip("pyspark")
    import pyarrow as pa
    from pyspark.sql.types import LongType, StructField, StructType

    import snet
    from snet.core.boxes import chain_outputs
    from snet.spark.tasks import plan_for, rows as _rows
    from snet.spark.whole.dataframe import Writer, box_chain, map_partition
    from snet.spark.cluster.shipping import dump_context, make_context

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    net = snet.load(THREE, boxes={"inc": inc, "dbl": dbl, "tag": tag})
    context = dump_context(make_context(net.graph, 0, net.boxes))
    schema = StructType([StructField(n, LongType(), True) for n in ("b", "id", "<even>")]).json()
    batches = [pa.RecordBatch.from_pydict({"a": list(range(i, min(i + BATCH, RECORDS))),
                                           "id": list(range(i, min(i + BATCH, RECORDS)))})
               for i in range(0, RECORDS, BATCH)]
    frames = [b.to_pandas() for b in batches]

    def applied():
        for _ in map_partition("bench", context, (), schema, True, iter(batches)):
            pass

    def hand():
        for frame in frames:
            by_hand_frame(frame)

    figures = paired(applied, hand, rounds=rounds(7))
    chain, writer = box_chain(plan_for("bench", context)), Writer(schema, True)
    shares = {}
    for _ in range(3):  # the best of three, a batch at a time as in a task
        spent = [0.0, 0.0, 0.0]
        for batch in batches:
            t0 = time.perf_counter()
            rows = _rows(batch, ())
            t1 = time.perf_counter()
            out = chain_outputs(chain, rows)
            t2 = time.perf_counter()
            writer.batch(out)
            t3 = time.perf_counter()
            spent[0] += t1 - t0
            spent[1] += t2 - t1
            spent[2] += t3 - t2
        for key, seconds in zip(("rows_us", "chain_us", "writer_us"), spent):
            shares[key] = min(shares.get(key, float("inf")), seconds * 1e6 / RECORDS)
    benchmark.pedantic(applied, rounds=1, iterations=1)
    report(records=RECORDS, task_us_per_record=figures["candidate_s"] * 1e6 / RECORDS,
           hand_us_per_record=figures["baseline_s"] * 1e6 / RECORDS, overhead=figures["ratio"], **shares)


PAIRS = """
net pairs {
  box split ((v, <k>) -> (a) | (b));
} connect (split .. [| {a}, {b} |]) ! <k>;
"""
ROUTED = """
net routed {
  box inc ((a) -> (a));
  box dbl ((a) -> (b));
} connect inc .. [{a} -> {a, <t>}] .. ([{<t>} -> {a}] || dbl);
"""


def split(v, k):
    return {"a": v} if v % 2 else {"b": v}


@pytest.mark.parametrize("name", ["keyed", "pairs", "routed"])
def test_the_task_engine_front_against_the_reference_engine_without_spark(benchmark, report, name):
    """``map_partition`` of a network that is not a chain of boxes (so it needs an engine), on FRONT with one
    worker (what tasks run where the compiled runtime imports) against the reference engine, no Spark:
    ``keyed`` and ``pairs`` (a synchro-cell per tag) as after the shuffle by ``<k>``, ``routed`` a stateless
    network with a filter and a deterministic parallel."""
    import sys

    pytest.importorskip("pyspark")
    pytest.importorskip("snet_front.runtime")
    import pyarrow as pa
    from pyspark import cloudpickle
    from pyspark.sql.types import LongType, StructField, StructType

    import snet
    import snet.spark.whole.dataframe as dataframe
    from snet.spark.cluster.shipping import dump_context, make_context

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    nets = {"keyed": (KEYED, {"work": work}, ("v", "<k>")), "pairs": (PAIRS, {"split": split}, ("a", "b", "<k>")),
            "routed": (ROUTED, {"inc": inc, "dbl": dbl}, ("a", "b", "<t>"))}
    source, boxes, columns = nets[name]
    net = snet.load(source, boxes=boxes)
    context = dump_context(make_context(net.graph, 0, net.boxes))
    schema = StructType([StructField(n, LongType(), True) for n in columns]).json()
    values = list(range(RECORDS))
    if name == "routed":
        batches = [pa.RecordBatch.from_pydict({"a": values[i:i + BATCH]}) for i in range(0, RECORDS, BATCH)]
    else:  # a partition after the shuffle: the records of each tag value together, in input order
        ordered = sorted(values, key=lambda v: v % TAGS)
        batches = [pa.RecordBatch.from_pydict({"v": ordered[i:i + BATCH], "<k>": [v % TAGS for v in ordered[i:i + BATCH]]})
                   for i in range(0, RECORDS, BATCH)]

    def run(engine):
        def go():
            return list(dataframe.map_partition("bench-" + name, context, (), schema, True, iter(batches), engine))
        return go

    front, reference = run("front"), run("reference")
    assert pa.Table.from_batches(front()).to_pylist() == pa.Table.from_batches(reference()).to_pylist()
    figures = paired(front, reference, rounds=rounds(5))
    benchmark.pedantic(front, rounds=1, iterations=1)
    report(records=RECORDS, network=name, front_us_per_record=figures["candidate_s"] * 1e6 / RECORDS,
           reference_us_per_record=figures["baseline_s"] * 1e6 / RECORDS, ratio=figures["ratio"])
    assert figures["ratio"] < 1.5  # FRONT is meant to be the faster: the figure is in docs/performance.md


@pytest.mark.parametrize("name", ["keyed", "pairs"])
def test_spark_apply_on_front_tasks_against_reference_engine_tasks(benchmark, report, setup, name):
    """``spark_apply`` of a network that needs an engine, its tasks on FRONT with one worker against the
    same on the reference engine, in one session, both ending in the ``noop`` sink; the outputs compared
    first.  ``keyed`` is ``work ! <k>``, ``pairs`` a synchro-cell per tag (``split`` makes ``a`` or ``b``)."""
    import sys

    from pyspark import cloudpickle

    import snet
    import snet.spark.whole.dataframe as dataframe

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    session, folder, nets = setup
    net = nets["keyed"][0] if name == "keyed" else snet.load(PAIRS, boxes={"split": split})
    schema = "v long, `<k>` long" if name == "keyed" else "a long, b long, `<k>` long"
    df = session.read.parquet(str(folder / "keyed.parquet"))

    def applied(engine):
        dataframe.TASK_ENGINE = engine  # read by spark_apply, carried to the tasks
        try:
            return net.spark_apply(df, schema)
        finally:
            dataframe.TASK_ENGINE = "front"

    front, reference = applied("front"), applied("reference")
    assert sorted(map(repr, front.collect())) == sorted(map(repr, reference.collect()))

    def run(frame):
        return lambda: frame.write.format("noop").mode("overwrite").save()

    figures = paired(run(front), run(reference), rounds=rounds(5))
    benchmark.pedantic(run(front), rounds=1, iterations=1)
    report(records=RECORDS, network=name, front_s=figures["candidate_s"], reference_s=figures["baseline_s"],
           ratio=figures["ratio"], worker_box_caller=worker_box_caller(session))
    assert figures["ratio"] < 2.0
