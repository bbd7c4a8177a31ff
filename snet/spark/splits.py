"""Splits on Spark: the Spark implementation of a split executor (:mod:`snet.splitexec`).

Selecting splits
================

``--spark-splits`` / ``spark_splits=`` takes the rules of
:func:`snet.splitexec.select_splits`: ``auto`` (the default: every
*outermost* split whose operand contains a box; a split of filters and
synchro-cells costs microseconds per record in place, less than shipping
the record), ``all``, or a comma list of split positions and net names.
A split nested inside a Spark split runs inside the executors' engine, with
its replicas part of the outer replica's state.  Every other split runs in
place as before.

Batching and ordering
=====================

:class:`SparkSplits` keeps the batch (the protocol's ``submit``, ``take``,
``run``) and runs each split node's part of a batch as one Spark job
through its :class:`~snet.spark.runner.SparkSplitRunner`.  When a batch
runs is the engine's choice (see :mod:`snet.splitexec`); between runs,
records accumulate across inputs.  That is allowed because everything the
language leaves non-deterministic may be reordered: a batched record's
outputs may come after outputs of later inputs that did not pass through
the split, but two records on the same path keep their order (outputs come
back per input in sequence order, and the engine moves them on in that
order).  A Spark split that is itself ``!!`` needs nothing more for the
same reason.  Nested deterministic combinators inside the operand run on
the executor, exactly ordered by the reference engine there.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from snet.splitexec import SplitExecutor, select_splits, split_positions
from snet.spg.nodes import PropertyGraph
from snet.stats import SparkStats, SplitStats

log = logging.getLogger("snet.spark")

Record = dict


def start_session(master: str, conf: dict[str, str] | None = None):
    """Check ``master`` (:mod:`snet.spark.preflight`) and start or reuse its session, ``snet.*`` keys left out."""
    from snet.spark.preflight import addresses
    from snet.spark.session import get_session

    addresses(master)  # a malformed URL is an error even when a session is running already
    return get_session(master, {k: v for k, v in (conf or {}).items() if not k.startswith("snet.")})


def start_for(graph: PropertyGraph, options: Any):
    """Start Spark now if a run of ``graph`` with ``options`` will use it (None otherwise).

    ``snet run`` calls this before it opens the output file, so that a run
    that cannot start Spark leaves an existing output untouched.
    """
    if not options.spark_master:
        return None
    from snet.spark.preflight import addresses

    addresses(options.spark_master)
    if not select_splits(graph, options.spark_splits):
        # Not an error (the same command may run a network with boxes next), but the user asked for
        # Spark: say that it is not used, so that the master is not taken as checked either.
        rule = options.spark_splits or "auto"
        why = ("no split of this network has a box in its operand (--spark-splits auto leaves splits of "
               "filters and synchro-cells local)" if rule == "auto" else f"--spark-splits {rule} selects no split")
        log.warning("warning: %s: the run does not use Spark, and %s is not contacted", why, options.spark_master)
        return None
    return start_session(options.spark_master, options.spark_conf)


class SparkSplits(SplitExecutor):
    """The Spark splits of one run: a split executor whose runners are Spark jobs.

    ``options``: the run's options (``spark_master``, ``spark_conf``,
    ``spark_splits``, ``spark_batch``).
    """

    name = "spark"
    place = "on Spark (Spark retries a failed task itself)"

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable], options: Any):
        from snet.spark.runner import DEFAULT_BATCH

        super().__init__(select_splits(graph, options.spark_splits), options.spark_batch or DEFAULT_BATCH)
        self.graph = graph
        self.boxes = boxes
        self.master = options.spark_master
        self.conf = dict(options.spark_conf or {})
        if self.selected:
            # Start the session now: a missing pyspark or Java is a start-up error,
            # and the 5-8 s start is not charged to the first batch.
            start_session(self.master, self.conf)

    def make_runner(self, node_id: int):
        from snet.spark.runner import SparkSplitRunner

        return SparkSplitRunner(self.graph, node_id, self.boxes, self.master, self.conf, self.batch_size,
                                skip_errors=self.error_policy is not None)

    def stats(self) -> SparkStats:
        return SparkStats(
            master=self.master,
            batch_size=self.batch_size,
            selected=tuple(sorted(self.graph.nodes[i].span.location if self.graph.nodes[i].span else str(i)
                                  for i in self.selected)),
            flushes=self.flushes,
            seconds=self.flush_seconds,
            splits={r.where: SplitStats.from_runner(r.stats()) for r in self.runners.values()},
        )


__all__ = ["SparkSplits", "select_splits", "split_positions", "start_for", "start_session"]
