"""Splits on Spark: the Spark implementation of a split executor (:mod:`snet.splitexec`).

:class:`SparkSplits` keeps the batch of the selected splits and runs each
split node's part as one Spark job (:mod:`~.runner`; executors:
:mod:`~.replicas`; a dead worker: :mod:`~.crash`).  Outputs come back per
input in order, so batching reorders only what the language leaves open.
"""

from __future__ import annotations

from typing import Any, Callable

from snet.splitexec import SplitExecutor, select_splits, split_positions
from snet.spg.nodes import PropertyGraph
from snet.stats import SparkStats, SplitStats

class SparkSplits(SplitExecutor):
    """The Spark splits of one run (``options``: ``spark_master``, ``spark_conf``, ``spark_splits``,
    ``spark_batch``): a split executor whose runners are Spark jobs."""

    name = "spark"
    place = "on Spark"
    batch_option, default_batch = "spark_batch", 4096
    batch_seconds = 4.0  # under auto: a batch's fixed cost is a Spark job's start (a few hundred milliseconds)
    saves_state = "bytes"  # checkpoints hold each replica's bytes, as the driver keeps them between batches
    applies_guards = True  # the tasks call the boxes through their timeouts and retries (snet.core.guard)

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable], options: Any):
        from snet.core.guard import guards_for
        from snet.spark.cluster.session import start_session

        super().__init__(select_splits(graph, options.spark_splits), options.spark_batch or self.default_batch)
        self.graph, self.boxes, self.guards = graph, boxes, guards_for(graph, options)
        self.master, self.conf = options.spark_master, dict(options.spark_conf or {})
        if self.selected:  # now: a missing pyspark or Java is a start-up error, the 5-8 s not the first batch's
            start_session(self.master, self.conf)

    def make_runner(self, node_id: int):
        from snet.spark.splits.runner import SparkSplitRunner

        return SparkSplitRunner(self.graph, node_id, self.boxes, self.master, self.conf,
                                skip_errors=self.error_policy is not None, guards=self.guards)

    def stats(self) -> SparkStats:
        selected = tuple(sorted(span.location if (span := self.graph.nodes[i].span) is not None else str(i)
                                for i in self.selected))
        return SparkStats(master=self.master, batch_size=self.batch_size, selected=selected, flushes=self.flushes,
                          seconds=self.flush_seconds, batch_sizes=self.sizer.chosen() if self.sizer else (),
                          splits={r.where: SplitStats.from_runner(r.stats()) for r in self.runners.values()})


__all__ = ["SparkSplits", "select_splits", "split_positions"]
