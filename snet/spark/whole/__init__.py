"""Whole networks inside Spark tasks: which can (:mod:`~.distribute`), ``spark_apply`` (:mod:`~.dataframe`,
:mod:`~.schema`), ``snet run`` with Spark sources and sinks (:mod:`~.native`, :mod:`~.taskcrash`, :mod:`~.salvage`)."""
