"""Many short Spark tasks of a whole network: what the reused Python workers' collections cost them.

    PYTHONPATH=$PWD python3 bench/worker_collections.py [PARTITIONS]

Spark reuses its Python workers and, after every task, pyspark's daemon runs
a full collection of the cyclic garbage collector in the worker.  The worker
holds its imports and the run's plan (snet.spark.tasks.RunCache), which such
a collection walks every time unless the cache has frozen them out
(``gc.freeze``).  This runs ``net.spark_apply`` on ``local[2]`` over 100,000
records cut into PARTITIONS partitions (80 by default: tasks of 1,250
records), writing to the ``noop`` sink, five times after a warm-up, and
prints the seconds of each; run it at two commits, alternately, to compare.
"""

from __future__ import annotations

import sys
import time

import snet

SOURCE = """
net cheap {
  box work ((v, <k>) -> (v, <k>));
} connect work;
"""
RECORDS = 100_000


def work(v, k):
    return {"v": v, "<k>": k}


def main(partitions: int) -> None:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    net = snet.load(SOURCE, boxes={"work": work})
    rows = [(i, i % 64) for i in range(RECORDS)]
    df = spark.createDataFrame(rows, "v long, `<k>` long").repartition(partitions).cache()
    df.count()

    def once() -> float:
        started = time.perf_counter()
        net.spark_apply(df).write.format("noop").mode("overwrite").save()
        return time.perf_counter() - started

    once()
    times = [once() for _ in range(5)]
    print(f"{partitions} tasks of {RECORDS // partitions} records: seconds {' '.join(f'{t:.3f}' for t in times)}, "
          f"median {sorted(times)[2]:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 80)
