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

import difflib
import importlib
import logging
import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import attrs

from snet.errors import SNetUsageError
from snet.execution import Engine, Execution, Input
from snet.options import AUTO, DEFAULT_ENGINE, ENGINES, RunOptions, engine_names  # re-exported here
from snet.spg.nodes import BoxNode, PropertyGraph
from snet.splitexec import SplitExecutor

if TYPE_CHECKING:
    from snet.core.processes import BoxProcesses

Boxes = Mapping[str, Callable[..., Any]]


def engine(name: str | None) -> Engine:
    """Engine ``name`` (None: the default), with its ``start`` and what it declares it can do."""
    name = name or DEFAULT_ENGINE
    target = ENGINES.get(name)
    if target is None:
        raise SNetUsageError(f"unknown engine '{name}' (engines: {', '.join(engine_names())})")
    module_name, attribute = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SNetUsageError(f"engine '{name}' is not available: {e}") from e
    found = getattr(module, attribute)
    assert isinstance(found, Engine), f"{target} is not an snet.execution.Engine"
    return found


def split_executor(graph: PropertyGraph, boxes: Boxes, options: RunOptions) -> SplitExecutor | None:
    """The split executor the options ask for (:func:`snet.splitexec.executor_for`), or None to run every
    split in place.

    Executors register in :mod:`snet.splitexec`; each is imported only when
    a run asks for it.  The executor sizes its batches itself unless the
    options give the size: under box concurrency ``auto`` (the default) by
    their time and bytes, else its default size, kept to their bytes.
    """
    from snet.splitexec import executor_for

    executor = executor_for(graph, dict(boxes), options)
    if executor is not None:
        executor.choose_batch_sizes(options, options.auto_concurrency)
        executor.started()
    return executor


def start(engine_name: str | None, graph: PropertyGraph, boxes: Boxes, records: Iterable[Input],
          options: RunOptions | None = None) -> Execution:
    """Lower ``graph`` for this run and start it on engine ``engine_name`` over ``records``; returns the execution."""
    from snet.spg.lower import lower

    from snet.core.guard import guard_boxes
    from snet.errorpolicy import policy_for
    from snet.splitexec import check_resume

    options = options or RunOptions()
    check_box_names(graph, options)
    chosen = engine(engine_name)
    policy = policy_for(options.on_error)
    executor = split_executor(graph, boxes, options)  # with the functions themselves: they travel
    if executor is not None:
        executor.error_policy = policy
    checkpointing = getattr(records, "snet_checkpoint", None)  # a run that takes checkpoints
    if checkpointing is not None:
        try:
            if checkpointing.restore is not None:  # the split replicas saved in the form this run keeps them
                check_resume(graph, checkpointing.restore, executor, checkpointing.store.path)
            if executor is not None:
                executor.take_checkpoints(graph, checkpointing)
        except BaseException:
            if executor is not None:
                executor.close()
            raise
    processes = None
    try:
        # numbers only: a box given "auto" is lowered with no number, and the engine chooses (snet.autoconc)
        per_box = {name: limit for name, limit in options.box_concurrency_per_box.items() if isinstance(limit, int)}
        processes, boxes, options = _box_processes(graph, boxes, options, per_box)
        boxes, guards = guard_boxes(graph, boxes, options)  # timeouts, retries
        if executor is not None and guards is not None and not executor.applies_guards:
            _warn_unguarded(graph, executor.selected, guards.table(), executor.place)
        fixed = options.box_concurrency if isinstance(options.box_concurrency, int) else None
        plan = lower(graph, boxes, box_concurrency=fixed, box_concurrency_per_box=per_box,
                     executor=executor, on_error=policy, defer_async=chosen.overlaps_async_boxes)
        execution = chosen.start(plan, records, options, error_policy=policy, guards=guards)
        if processes is not None:
            execution.add_release(processes.close)
        return execution
    except BaseException:
        if executor is not None:
            executor.close()
        if processes is not None:
            processes.close()
        raise


def _warn_unguarded(graph: PropertyGraph, splits: Iterable[int], guarded: Iterable[str], place: str) -> None:
    """Warn that the boxes given timeouts or retries are called without them inside the executor's splits."""
    inside = set()
    stack = [graph.nodes[i] for i in splits]
    while stack:
        node = stack.pop()
        if isinstance(node, BoxNode):
            inside.add(node.name)
        stack.extend(node.children())
    names = sorted(inside & set(guarded))
    if names:
        logging.getLogger("snet").warning(
            "warning: box %s %s a timeout or retries, which do not apply inside the splits that run %s",
            ", ".join(repr(n) for n in names), "has" if len(names) == 1 else "have", place)


PER_BOX = (("box_concurrency_per_box", "box concurrency"), ("box_processes_per_box", "box processes"),
           ("box_timeout_per_box", "box timeout"), ("box_retries_per_box", "box retries"))


def check_box_names(graph: PropertyGraph, options: RunOptions) -> None:
    """Refuse a per-box option (``PER_BOX``) that names a box the network does not use.

    A misspelt name would otherwise set nothing and the run go on as if the
    option had not been given.

    Raises:
        SNetUsageError: naming the option, the unknown box, a close match,
            and the boxes of the network.
    """
    used = sorted(graph.used_boxes())
    for attribute, what in PER_BOX:
        unknown = sorted(set(getattr(options, attribute)) - set(used))
        if unknown:
            close = difflib.get_close_matches(unknown[0], used, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise SNetUsageError(f"{what} given for {', '.join(repr(n) for n in unknown)}, which the network "
                                 f"does not use ({hint}its boxes: {', '.join(used) or 'none'})")


def _box_processes(graph: PropertyGraph, boxes: Boxes, options: RunOptions,
                   per_box: dict[str, int]) -> tuple[BoxProcesses | None, Boxes, RunOptions]:
    """Start the box process pools the options ask for: (pools or None, the box table to lower, options).

    A box given N processes runs up to N calls at once (its concurrency,
    unless set for it by name), and FRONT gets at least N workers unless
    their number was given: each call holds a worker while it waits.
    """
    asked = {name: options.box_processes_per_box.get(name, options.box_processes)
             for name in sorted(graph.used_boxes())}
    counts = {name: n for name, n in asked.items() if n}
    if not counts:
        return None, boxes, options
    from snet.core.processes import BoxProcesses

    labels = {decl.name: tuple(decl.arguments) for decl in graph.boxes}
    processes = BoxProcesses(boxes, counts, labels, max_calls=options.box_process_calls,
                             max_memory=options.box_process_memory)
    stand_ins = {}
    for name in counts:
        stand_in = processes.function(name)
        assert stand_in is not None, f"box {name!r} was given processes and has no pool"
        stand_ins[name] = stand_in
    boxes = {**boxes, **stand_ins}
    for name, n in counts.items():
        per_box.setdefault(name, n)
    if options.workers is None:
        options = attrs.evolve(options, workers=max(os.cpu_count() or 1, max(counts.values())))
    return processes, boxes, options
