"""snet on Spark (docs/spark.md; the design: docs/architecture.md, "Spark", and the modules' docstrings).

:mod:`~snet.spark.splits` runs the selected ``!<t>`` splits' replicas on executors (``--spark``);
:mod:`~snet.spark.whole` runs whole networks inside tasks (``Network.spark_apply``, ``snet run`` with Spark
sources and sinks); :mod:`~snet.spark.cluster` reaches the cluster (sessions, checks, shipping, job tags);
:mod:`~snet.spark.tasks` runs a plan inside a task, for every executor-side path; :mod:`~snet.spark.failures`
reads Spark's error texts.  Nothing here imports pyspark until a run asks for Spark.
"""
