"""Index splits on Spark: one replica of the operand per tag value, on executors.

``A ! <t>`` (and ``!!``, ``!@``, ``!!@``, range splits ``A ! <lo>:<hi>``)
runs one replica of ``A`` per tag value.  With ``--spark MASTER`` (or
``spark_master=`` in the API), the selected splits run their replicas on
Spark: every record with the same tag value goes through the same replica,
in order, on an executor, and the rest of the network runs locally as
before.  docs/spark.md is the user's guide; the design lives in the module
docstrings:

* :mod:`snet.spark.splits` - which splits go to Spark, and when an engine
  flushes its buffered records (batching versus ordering);
* :mod:`snet.spark.runner` - :class:`SparkSplitRunner`, the driver side of
  one split: a batch in, outputs per input out, one Spark job per batch;
* :mod:`snet.spark.replicas` - the executor side: replicas built by the
  reference engine's machinery, their state as bytes across batches,
  retries, errors as data;
* :mod:`snet.spark.shipping` - the program, the boxes and the snet package
  on the executors;
* :mod:`snet.spark.session` - master URLs, session reuse, environment;
* :mod:`snet.spark.preflight` - checks of the master, Java and the
  master's address before a session starts;
* :mod:`snet.spark.crash` - a Python worker that died: the box and the
  record that killed it, the batch's earlier outputs kept.

Whole networks inside Spark tasks (records never on the driver):

* :mod:`snet.spark.distribute` - which networks can be partitioned over
  tasks, and by which tag;
* :mod:`snet.spark.dataframe` - ``Network.spark_apply``: the network in
  ``mapInArrow``, an engine per task;
* :mod:`snet.spark.native` - ``snet run --spark`` with Spark sources and
  sinks (Parquet, JSON, CSV, ORC).

Nothing here imports pyspark until a run asks for Spark.
"""

from __future__ import annotations

__all__ = ["SparkSplitRunner", "SparkSplits", "select_splits"]


def __getattr__(name):
    if name == "SparkSplitRunner":
        from snet.spark.runner import SparkSplitRunner
        return SparkSplitRunner
    if name in ("SparkSplits", "select_splits"):
        from snet.spark import splits
        return getattr(splits, name)
    raise AttributeError(f"module 'snet.spark' has no attribute {name!r}")
