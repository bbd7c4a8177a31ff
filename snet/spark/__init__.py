"""snet on Spark: splits on executors, whole networks inside tasks, and reaching the cluster.

docs/spark.md is the user's guide; the design lives in the docstrings:

* :mod:`snet.spark.splits` - ``--spark MASTER``: the selected ``!<t>``
  splits run their replicas on executors (a split executor,
  :mod:`snet.splitexec`), the rest of the network locally;
* :mod:`snet.spark.whole` - whole networks inside Spark tasks, records never
  on the driver: ``Network.spark_apply`` and ``snet run`` with Spark sources
  and sinks;
* :mod:`snet.spark.cluster` - reaching the cluster: sessions, preflight
  checks, what is shipped to executors, job tags, ``snet spark-submit``;
* :mod:`snet.spark.tasks` - running a plan inside a task, the one core of
  every executor-side path; :mod:`snet.spark.isolation` - a forked child for
  work that may kill its Python worker; :mod:`snet.spark.failures` - Spark's
  error texts, read.

Nothing here imports pyspark until a run asks for Spark.
"""
