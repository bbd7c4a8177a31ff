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
from typing import Callable, Iterable

from snet.errors import SNetUsageError
from snet.execution import Execution
from snet.options import DEFAULT_ENGINE, ENGINES, RunOptions, engine_names  # re-exported here
from snet.spg.nodes import PropertyGraph

Record = dict


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

    from snet.errorpolicy import policy_for

    options = options or RunOptions()
    run = engine_function(engine)
    policy = policy_for(options.on_error)
    executor = split_executor(graph, boxes, options)
    if executor is not None:
        executor.error_policy = policy
    try:
        plan = lower(graph, boxes, box_concurrency=options.box_concurrency,
                     box_concurrency_per_box=options.box_concurrency_per_box, executor=executor, on_error=policy)
        execution = run(plan, records, options)
        execution.error_policy = policy
        return execution
    except BaseException:
        if executor is not None:
            executor.close()
        raise
