"""``Network.spark_apply``: a whole network over a DataFrame, inside Spark tasks.

The split cases of the shared suite run through ``spark_apply`` on the
session's local Spark (read with ``spark.read.json``, as a user would) and
are compared with the reference engine's run of the same records: as
multisets, and per tag value in order where the network keeps per-tag
state.  One test repeats a case under Spark Connect, in a process of its
own (this one's JVM holds the classic session).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "conformance" / "cases"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def canonical(records) -> list[str]:
    return [json.dumps(r, sort_keys=True) for r in records]


def rows_as_records(df) -> list[dict]:
    return [{k: v for k, v in row.asDict().items() if v is not None} for row in df.collect()]


def per_tag(records, tag) -> dict:
    seqs: dict = {}
    for r in records:
        seqs.setdefault(r.get(tag), []).append(json.dumps(r, sort_keys=True))
    return seqs


# (case, the tag the network's state is partitioned by or None, an explicit schema or None)
CASES_APPLIED = [
    ("split_sync_per_key", "<k>", None),
    ("split_det_order", "<k>", None),
    ("split_many_keys", "<k>", None),
    ("fibonacci", "<id>", None),
    ("metadata_comments_placement", None, None),
    ("type_inference_routing", None, "d long, c long, b long, e string, out string, `<key>` long, `<viakey>` long"),
]


@pytest.mark.parametrize("name,tag,schema", CASES_APPLIED, ids=[c[0] for c in CASES_APPLIED])
def test_split_cases_through_spark_apply_equal_the_reference_engine(spark, name, tag, schema):
    import snet

    folder = CASES / name
    net = snet.load(str(folder / "net.snet"))
    records = read_jsonl(folder / "input.jsonl")
    local = list(net.run(records, engine="reference"))
    df = spark.read.json(str(folder / "input.jsonl"))
    out = net.spark_apply(df, schema)
    assert type(out).__name__ == "DataFrame"
    got = rows_as_records(out)
    assert Counter(canonical(got)) == Counter(canonical(local))
    assert Counter(canonical(got)) == Counter(canonical(read_jsonl(folder / "expected.jsonl")))
    if tag is not None:
        assert per_tag(got, tag) == per_tag(local, tag)  # each replica saw its records in input order


STATELESS = """
net three {
  box inc ((a) -> (a));
  box dbl ((a) -> (b));
  box tag ((b) -> (b, <even>));
} connect inc .. dbl .. tag;
"""


def inc(a):
    return {"a": a + 1}


def dbl(a):
    return {"b": a * 2}


def tag_even(b):
    return {"b": b, "<even>": int(b % 4 == 0)}


BOXES = {"inc": inc, "dbl": dbl, "tag": tag_even}


def test_a_stateless_network_keeps_row_order_and_needs_no_shuffle(spark):
    import snet

    net = snet.load(STATELESS, boxes=BOXES)
    records = [{"a": i, "id": i} for i in range(200)]
    df = spark.createDataFrame(records, "a long, id long").repartition(3)
    ordered = df.sortWithinPartitions("id")
    out = net.spark_apply(ordered, "b long, id long, `<even>` long")
    assert "Exchange" not in out._jdf.queryExecution().executedPlan().toString().split("MapInArrow")[0]
    got = rows_as_records(out)
    local = list(net.run(sorted(records, key=lambda r: r["id"]), engine="reference"))
    assert Counter(canonical(got)) == Counter(canonical(local))
    # within each partition the outputs keep the partition's input order
    parts = out.rdd.glom().collect()
    for part in parts:
        ids = [row["id"] for row in part]
        assert ids == sorted(ids)
    assert sorted(r.name for r in out.schema.fields) == sorted(["b", "id", "<even>"])


def thread_of(a):
    import threading

    return {"b": a, "thread": threading.current_thread().name}


def test_tasks_run_a_network_that_needs_an_engine_on_front_with_one_worker(spark):
    """Where the compiled runtime imports (here the executors import this tree's), tasks run FRONT with one
    worker, whose only worker thread calls the boxes; else the reference engine, in the task's own thread."""
    import importlib.util

    import snet

    net = snet.load("net where { box thread_of ((a) -> (b, thread)); } connect [{a} -> {a}] .. thread_of;",
                    boxes={"thread_of": thread_of})
    df = spark.createDataFrame([(i,) for i in range(40)], "a long").repartition(2)
    got = rows_as_records(net.spark_apply(df, "b long, thread string"))
    assert sorted(r["b"] for r in got) == list(range(40))
    front = importlib.util.find_spec("snet_front.runtime") is not None
    assert {r["thread"] for r in got} == ({"snet-front-worker-0"} if front else {"MainThread"})


SYNC_KEYED = "net keyed connect [| {a}, {b} |] ! <k>;"


def test_per_tag_order_is_kept_across_many_input_partitions(spark):
    import snet

    net = snet.load(SYNC_KEYED)
    # Each tag value gets a, b, a, b, ...: only the first a and b pair up, in input order.
    records = [{("a" if i % 2 == 0 else "b"): i, "<k>": k} for i in range(30) for k in range(7)]
    df = spark.createDataFrame([(r.get("a"), r.get("b"), r["<k>"]) for r in records], "a long, b long, `<k>` long")
    df = df.coalesce(1).repartition(4)  # rows spread round-robin: each value's records in several partitions
    # the input order is the order the rows had before; give it explicitly
    indexed = spark.createDataFrame([(i, r.get("a"), r.get("b"), r["<k>"]) for i, r in enumerate(records)],
                                    "seq long, a long, b long, `<k>` long").repartition(4)
    got = rows_as_records(net.spark_apply(indexed, order="seq", partitions=3))
    local = list(net.run(records, engine="reference"))
    assert Counter(canonical(got)) == Counter(canonical(local))
    assert per_tag(got, "<k>") == per_tag(local, "<k>")
    assert all("seq" not in r for r in got)  # the order column is not passed to the network
    # without order=: the row order of a DataFrame that was not shuffled
    plain = spark.createDataFrame([(r.get("a"), r.get("b"), r["<k>"]) for r in records],
                                  "a long, b long, `<k>` long")
    got = rows_as_records(net.spark_apply(plain))
    assert per_tag(got, "<k>") == per_tag(local, "<k>")


def test_it_is_lazy_and_composes_with_dataframe_operations(spark, tmp_path):
    import snet
    from pyspark.sql import functions as F

    marker = tmp_path / "called"

    def touch(a):
        with open(marker, "a") as f:
            f.write("x")
        return {"b": a * 3}

    net = snet.load("net lazy { box touch ((a) -> (b)); } connect touch;", boxes={"touch": touch})
    out = net.spark_apply(spark.createDataFrame([(i,) for i in range(10)], "a long"), "b long")
    assert not marker.exists()  # nothing ran yet
    total = out.where(F.col("b") > 6).agg(F.sum("b")).collect()[0][0]
    assert total == sum(3 * i for i in range(10) if 3 * i > 6)
    assert marker.exists()


def test_state_outside_a_split_is_refused_with_its_position(spark):
    import snet

    net = snet.load("net top connect [{x} -> {x}] .. [| {a}, {b} |];")
    df = spark.createDataFrame([(1, None)], "a long, b long")
    with pytest.raises(snet.SNetNotDistributable) as caught:
        net.spark_apply(df)
    assert "<string>:1:33: error: a synchro-cell keeps state outside any index split" in str(caught.value)
    ranged = snet.load(str(CASES / "split_range" / "net.snet"))
    with pytest.raises(snet.SNetNotDistributable, match=r"net\.snet:1:\d+: error: a range split with state"):
        ranged.spark_apply(spark.read.json(str(CASES / "split_range" / "input.jsonl")))


def test_user_mistakes_are_named(spark):
    import snet

    net = snet.load(SYNC_KEYED)
    with pytest.raises(snet.SNetUsageError, match=r"partitioned by the column '<k>', which the DataFrame lacks"):
        net.spark_apply(spark.createDataFrame([(1,)], "a long"))
    made = snet.load("net m { box f ((a) -> (z)); } connect f;", boxes={"f": lambda a: {"z": str(a)}})
    df = spark.createDataFrame([(1,), (2,)], "a long")
    with pytest.raises(snet.SNetUsageError, match=r"cannot infer the type of output field 'z'.*pass schema="):
        made.spark_apply(df)
    with pytest.raises(Exception, match=r"output label z holds '[12]' \(str\), which does not fit its column type"):
        made.spark_apply(df, "z long").collect()
    assert rows_as_records(made.spark_apply(df, "z string")) == [{"z": "1"}, {"z": "2"}]



def test_columns_that_are_no_labels_and_tags_that_are_no_integers_are_refused_before_anything_runs(spark):
    """As a record file or Network.run refuses such records, spark_apply refuses such columns, at the call."""
    import snet

    net = snet.load(SYNC_KEYED)
    for ddl, rows, words in [
            ("`<k>` string, a long", [("x", 1)], r"input column <k> is a tag, which holds integers, but its type "
                                                 r"is string; cast it"),
            ("`<k>` double, a long", [(1.0, 1)], r"input column <k> is a tag, which holds integers, but its type "
                                                 r"is double"),
            ("`<#b>` boolean, `<k>` long, a long", [(True, 1, 1)], r"input column <#b> is a binding tag, which "
                                                                   r"holds integers, but its type is boolean"),
            ("`user id` long, `<k>` long, a long", [(1, 1, 1)], r"input column 'user id' is not a record label")]:
        with pytest.raises(snet.SNetUsageError, match=words):
            net.spark_apply(spark.createDataFrame(rows, ddl))
    # the order= column is not passed to the network, so it may be named anyhow
    df = spark.createDataFrame([(1, 0, 2)], "`input order` long, `<k>` long, a long")
    out = net.spark_apply(df, "a long, b long, `<k>` long", order="input order")
    assert rows_as_records(out) == []  # one {a} waits in its cell

CONNECT = '''
import json, sys
sys.path.insert(0, {root!r})
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote("local[2]").getOrCreate()
import snet
folder = {folder!r}
net = snet.load(folder + "/net.snet")
records = [json.loads(l) for l in open(folder + "/input.jsonl") if l.strip()]
local = list(net.run(records, engine="reference"))
df = spark.createDataFrame([(r.get("a"), r.get("b"), r["<k>"]) for r in records], "a long, b long, `<k>` long")
out = net.spark_apply(df)
got = [{{k: v for k, v in row.asDict().items() if v is not None}} for row in out.collect()]
key = lambda r: json.dumps(r, sort_keys=True)
assert sorted(map(key, got)) == sorted(map(key, local)), (got, local)
print("CONNECT APPLY OK", type(out).__module__)
'''


def test_spark_apply_under_spark_connect(spark_installed):
    missing = [m for m in ("grpc", "grpc_status", "zstandard", "google.protobuf")
               if __import__("importlib.util").util.find_spec(m.split(".")[0]) is None]
    if missing:
        pytest.skip(f"Spark Connect needs the connect client packages (pyspark[connect]); missing: {missing}")
    code = CONNECT.format(root=str(ROOT), folder=str(CASES / "split_sync_per_key"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=400,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert "CONNECT APPLY OK pyspark.sql.connect" in result.stdout, result.stdout[-2000:] + result.stderr[-4000:]


# -- a serial chain of boxes: run without the engine, compared with the reference engine ------------

CHAIN = """
net chain {
  box fan ((a, <#b>) -> (a, <#b>) | (a, <#b>, <big>));
  net inner {
    box scale ((a, <#b>) -> (x, <#b>));
    box mark ((x, <#b>) -> (x, <#b>) | (x));
  } connect scale .. [] .. mark;
  box last ((x) -> (y));
} connect fan .. inner .. last;
"""


def fan(a, b):
    """Several outputs (a list), none (odd values past 10) or one (a generator)."""
    if a % 3 == 0:
        return [{"a": a, "<#b>": b}, {"a": a + 100, "<#b>": b, "<big>": 1}]
    if a > 10 and a % 2:
        return None
    return ({"a": a, "<#b>": b} for _ in range(1))


def scale(a, b):
    return {"x": a * 10, "<#b>": b}


def mark(x, b):
    return {"x": x + b, "<#b>": b} if x % 20 == 0 else {"x": x}


def last(x):
    if x == 4242:
        raise ValueError("no 4242 here")
    return {"y": x + 1}


CHAIN_BOXES = {"fan": fan, "scale": scale, "mark": mark, "last": last}


def chain_records(n: int) -> list[dict]:
    """Records with an inherited field, a tag, a binding tag, and some labels absent (nulls in a table)."""
    records = []
    for i in range(n):
        record = {"a": i, "<#b>": i % 4}
        if i % 2:
            record["id"] = f"r{i}"
        if i % 5 == 0:
            record["<t>"] = i // 5
        records.append(record)
    return records


CHAIN_SCHEMA = "a long, `<#b>` long, id string, `<t>` long"
CHAIN_OUT = "y long, id string, `<t>` long, `<big>` long"


def test_a_chain_of_boxes_runs_without_the_engine_and_equals_it():
    """The executor's function on Arrow batches, no Spark session: nested chains, 0/1/n outputs, inheritance."""
    pa = pytest.importorskip("pyarrow", reason="needs pyarrow, which the spark extra installs "
                                                "(pip install -e '.[spark]' or '.[all]')")

    import snet
    from snet.spark.tasks import plan_for
    from snet.spark.whole.dataframe import box_chain, map_partition
    from snet.spark.cluster.shipping import dump_context, make_context

    net = snet.load(CHAIN, boxes=CHAIN_BOXES)
    records = chain_records(300)
    local = list(net.run(records, engine="reference"))
    assert any("<big>" in r for r in local) and any("id" in r and "<t>" in r for r in local)
    assert not any("<#b>" in r for r in local)  # binding tags are not inherited
    context = dump_context(make_context(net.graph, 0, net.boxes))
    assert [c.name for c in box_chain(plan_for("chain-test", context))] == ["fan", "scale", "mark", "last"]
    columns = ["a", "<#b>", "id", "<t>"]
    schema = pa.schema([("a", pa.int64()), ("<#b>", pa.int64()), ("id", pa.string()), ("<t>", pa.int64())])
    batches = [pa.RecordBatch.from_pylist([{c: r.get(c) for c in columns} for r in records[i:i + 64]],
                                          schema=schema) for i in range(0, len(records), 64)]
    out_schema = _spark_schema(CHAIN_OUT)
    got = [{k: v for k, v in row.items() if v is not None}
           for batch in map_partition("chain-test", context, (), out_schema, True, iter(batches))
           for row in batch.to_pylist()]
    assert got == local  # one partition: the outputs in the reference engine's order


def _spark_schema(ddl: str) -> str:
    """A StructType's JSON for a DDL of long and string columns (no Spark session needed)."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    fields = []
    for part in ddl.split(", "):
        name, kind = part.rsplit(" ", 1)
        fields.append(StructField(name.strip("`"), LongType() if kind == "long" else StringType(), True))
    return StructType(fields).json()


def test_a_chain_of_boxes_through_spark_apply_and_its_errors(spark):
    import snet

    net = snet.load(CHAIN, boxes=CHAIN_BOXES)
    records = chain_records(120)
    local = list(net.run(records, engine="reference"))
    df = spark.createDataFrame([tuple(r.get(c) for c in ("a", "<#b>", "id", "<t>")) for r in records],
                               CHAIN_SCHEMA).repartition(3)
    got = rows_as_records(net.spark_apply(df, CHAIN_OUT))
    assert Counter(canonical(got)) == Counter(canonical(local))
    # a box raising names the box and the record, as the reference engine does
    failing = [{"a": 424, "<#b>": 2, "id": "bad"}]  # 4240 + 2 = 4242 reaches `last`
    with pytest.raises(snet.SNetBoxError) as local_error:
        list(net.run(failing, engine="reference"))
    expected = str(local_error.value).splitlines()[0].split("error: ", 1)[1]
    assert expected == "box 'last' raised ValueError: no 4242 here (input record {id, x, <#b>})"
    bad = spark.createDataFrame([(424, 2, "bad", None)], CHAIN_SCHEMA)
    with pytest.raises(Exception) as spark_error:
        net.spark_apply(bad, CHAIN_OUT).collect()
    assert expected in str(spark_error.value)
