"""A streaming run against the batch run of the same files.

Run with ``python -m pytest bench/test_bench_stream.py --benchmark-only -s``
(``-s`` shows the figures).  Ten Parquet files of ``SNET_BENCH_RECORDS``
records in all (default 100,000; the target speaks of 1,000,000) go through
the 3-box network ``inc .. dbl .. tag``, its boxes in a box file, two ways,
each a ``snet run`` in this process on one ``local[2]`` session (its start
paid in a warm-up):

* the candidate: ``snet run --stream --available-now`` over the folder,
  into a new sink with a new checkpoint location each round (the query's
  start, its micro-batch, the commit of its offset and sink logs);
* the baseline: the batch run a user would otherwise write, ``snet run``
  with the folder as a Parquet source and a new Parquet sink.

Ratios come from runs alternated in the same process (``paired``); the
target is at most 1.3.  ``SNET_BENCH_ROUNDS`` sets the pairs (default 3).
"""

from __future__ import annotations

import os
import shutil

import pytest

from conftest import paired
from test_bench_spark_native import THREE

pytestmark = pytest.mark.spark

MASTER = "local[2]"
RECORDS = int(os.environ.get("SNET_BENCH_RECORDS", "100000"))
FILES = 10

# The 3-box network of the Spark-native benchmarks; its boxes here with return annotations, which type the
# stream's output columns before any record has run.
THREE_PY = """
def inc(a: int) -> {"a": int}:
    return {"a": a + 1}

def dbl(a: int) -> {"b": int}:
    return {"b": a * 2}

def tag(b: int) -> {"b": int, "<even>": int}:
    return {"b": b, "<even>": int(b % 4 == 0)}
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.skip("needs Java 17 for a local Spark")
    pytest.importorskip("pyspark", reason="needs pyspark (the spark extra)")
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("stream")
    (folder / "net.snet").write_text(THREE)
    (folder / "net.py").write_text(THREE_PY)
    (folder / "src").mkdir()
    per = RECORDS // FILES
    for i in range(FILES):
        pq.write_table(pa.table({"a": pa.array(range(i * per, (i + 1) * per), pa.int64())}),
                       folder / "src" / f"part-{i:02d}.parquet")
    return folder


def test_stream_against_batch(benchmark, report, files):
    from snet.cli import main

    runs = {"n": 0}

    def words(*extra: str) -> list[str]:
        runs["n"] += 1
        return ["run", str(files / "net.snet"), "--spark", MASTER, "-q", "-i", str(files / "src"),
                "--input-format", "parquet", "--output-format", "parquet", *extra]

    def stream():
        n = runs["n"]
        assert main(words("--stream", "--available-now", "-o", str(files / f"out-{n}"),
                          "--checkpoint", str(files / f"ck-{n}"))) == 0

    def batch():
        n = runs["n"]
        assert main(words("-o", str(files / f"out-{n}"))) == 0

    stream()  # the session, the Python workers, the first query: not measured
    batch()
    figures = benchmark.pedantic(lambda: paired(stream, batch, int(os.environ.get("SNET_BENCH_ROUNDS", "3"))),
                                 rounds=1, iterations=1)
    report(records=RECORDS, files=FILES, stream_s=figures["candidate_s"], batch_s=figures["baseline_s"],
           ratio=figures["ratio"])
