"""Engines: the interface every engine implements, and the registry.

An engine takes a :class:`~snet.plan.Plan` (the program lowered with its
bound box functions and, when some splits run elsewhere, its split
executor) and an iterable of input records, and returns an
:class:`Execution`: an iterator over the output records, streamed as they
reach the network's output.  :func:`start` does the lowering, so every
engine sees the same plan and none reads the property graph.

The contract of every execution is in :mod:`snet.execution`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Iterable

from snet.errors import SNetUsageError
from snet.execution import Execution
from snet.spg.nodes import PropertyGraph

Record = dict


@dataclass
class RunOptions:
    """What the user may tune about a run (interfaces.md §1 and §4).

    Engines ignore the options that do not apply to them.
    """

    workers: int | None = None  # FRONT: worker threads (None: number of cores)
    throttle: tuple[float, float] | None = None  # admit input while inputs < a + b * outputs
    box_concurrency: int | None = None  # default concurrent calls per box instance (None: engine default)
    box_concurrency_per_box: dict[str, int] = field(default_factory=dict)
    steal: bool = True
    seed: int | None = None
    stats: bool = False  # collect statistics (cheap counters are always kept)
    spark_master: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    spark_splits: str | None = None  # "auto", "all", or a comma list of positions / net names
    spark_batch: int | None = None


# engine name -> "module:function"; the function has the signature of `start`.
ENGINES: dict[str, str] = {
    "reference": "snet.reference:start",
    "front": "snet.backends.front:start",
}
DEFAULT_ENGINE = "front"  # passes every conformance case with 1, 2 and 4 workers


def engine_names() -> list[str]:
    return sorted(ENGINES)


def engine_function(name: str | None) -> Callable:
    """The ``start(plan, records, options)`` function of engine ``name`` (None: the default)."""
    name = name or DEFAULT_ENGINE
    target = ENGINES.get(name)
    if target is None:
        raise SNetUsageError(f"unknown engine '{name}' (engines: {', '.join(engine_names())})")
    module_name, function = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SNetUsageError(f"engine '{name}' is not available: {e}") from e
    return getattr(module, function)


def split_executor(graph: PropertyGraph, boxes: dict[str, Callable], options: RunOptions):
    """The split executor the options ask for, or None to run every split in place.

    The Spark package is imported only here and only when a master is given.
    """
    if not options.spark_master:
        return None
    from snet.spark.splits import SparkSplits

    executor = SparkSplits(graph, boxes, options)
    return executor if executor.selected else None


def start(engine: str | None, graph: PropertyGraph, boxes: dict[str, Callable], records: Iterable[Record],
          options: RunOptions | None = None) -> Execution:
    """Lower ``graph`` for this run and start it on ``engine`` over ``records``; returns the execution."""
    from snet.plan import lower

    options = options or RunOptions()
    run = engine_function(engine)
    executor = split_executor(graph, boxes, options)
    try:
        plan = lower(graph, boxes, box_concurrency=options.box_concurrency,
                     box_concurrency_per_box=options.box_concurrency_per_box, executor=executor)
        return run(plan, records, options)
    except BaseException:
        if executor is not None:
            executor.close()
        raise
