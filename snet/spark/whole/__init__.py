"""Whole networks inside Spark tasks: :mod:`~.distribute` (which networks can be partitioned, by which tag),
:mod:`~.dataframe` (``Network.spark_apply``), :mod:`~.schema` (the columns), :mod:`~.native` (``snet run`` with
Spark sources and sinks), and after a failed job :mod:`~.taskcrash` (the box and record that killed a worker)
and :mod:`~.salvage` (the outputs made before the failure)."""
