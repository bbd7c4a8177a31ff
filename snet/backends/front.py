"""The FRONT engine: adapter from a plan to the Cython runtime.

:mod:`snet_front.runtime` knows nothing about the language: it runs the
plan's per-node numbers (kind, exit links, initialiser ownership,
determinism) and builds each entity from its node's template.  This module
adds what depends on the run's options (how many calls of each box may run
at once) and wraps a run in the engine interface of :mod:`snet.backends`.

Box concurrency default
=======================

Box concurrency ``auto`` is the default (``--box-concurrency auto``, or no
number given for a box): the runtime chooses each box's concurrency and
the active workers while the run goes on (:mod:`snet.autoconc`).  Such a
box starts at one call at a time; the runtime makes up to ``cores +
MAX_LEVEL`` workers (or the ``-w`` given), of which one runs at first
under the GIL (as many as there are cores without it, or where a split
executor or a box given a number holds workers:
:func:`snet.autoconc.first_workers`); and a tuner thread changes the
levels and the active workers while the run goes on (docs/runtime.md,
"Automatic box concurrency").  Boxes are stateless by the language's rules,
so the levels never change results: a box's reorder buffer keeps its output
stream in input order.  A number (``--box-concurrency N``, ``NAME=N``)
fixes a box's level, at most the workers; with a number for every box the
run has no tuner and runs all its workers, as every run did before ``auto``
became the default (then the default was as many calls as workers).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from snet.autoconc import MAX_LEVEL, Controller, Tuner, first_workers
from snet.backends import RunOptions
from snet.core.limits import resident_bytes
from snet.execution import Engine, Execution, Input
from snet.options import AUTO
from snet.core.semantics import unfinished_warning
from snet.plan import BoxPlan, Plan
from snet.stats import RunStats

if TYPE_CHECKING:
    from snet.core.guard import GuardCounters
    from snet.errorpolicy import ErrorPolicy

ASYNC_BOX_CONCURRENCY = 256  # calls of one async def box instance in flight at once, by default

Record = dict[str, object]


def load_runtime() -> type:
    """The compiled runtime's ``Runtime`` class.

    A tree whose extensions were never built (a clone before ``pip install -e .``), or were built against
    another version of the box caller, cannot run this engine: that is one line that says how to build
    it, an :class:`~snet.errors.SNetUsageError` (exit status 2), not the import's traceback.
    """
    try:
        from snet_front.runtime import Runtime
    except ImportError as e:
        if e.name not in ("snet_front.runtime", "snet_front"):
            raise
        why = "is not built"
    except ValueError as e:  # Cython's check of an imported extension type: "... size changed ..."
        if "size changed" not in str(e):
            raise
        why = "was built from other sources than snet's (rebuild it)"
    else:
        return Runtime
    from snet.errors import SNetUsageError

    tree = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # above snet/
    raise SNetUsageError(f"the FRONT engine {why} in {tree}: run 'python3 -m pip install -e .' there, or "
                         f"'python3 setup.py build_ext --inplace' (or run with --engine reference)") from None


def box_limits(plan: Plan, workers: int) -> list[int]:
    """Concurrent calls per box instance, per node id (1 for other nodes)."""
    limits = []
    for node in plan.nodes:
        limit = 1
        if isinstance(node, BoxPlan) and node.deferred:  # calls wait on the loop or in box processes, not in workers
            limit = max(1, int(node.concurrency if node.concurrency is not None else ASYNC_BOX_CONCURRENCY))
            limit *= getattr(node.call.function, "BATCH_LIMIT", 1)  # box processes: calls per batch in flight
        elif isinstance(node, BoxPlan) and node.concurrency is not None:  # (else automatic: from level 1)
            limit = max(1, min(int(node.concurrency), workers))
        limits.append(limit)
    return limits


def auto_boxes(plan: Plan, options: RunOptions) -> dict[int, str]:
    """The box nodes whose concurrency the controller chooses: node id -> box name.

    A box is automatic unless a number is given for it (``NAME=N``, a
    number for every box, or its box processes'); an ``async def`` box
    keeps its own default (its calls wait on the box loop).
    """
    chosen = {}
    for i, node in enumerate(plan.nodes):
        if not isinstance(node, BoxPlan) or node.deferred or node.concurrency is not None:
            continue
        given = options.box_concurrency_per_box.get(node.name, options.box_concurrency)
        if given is None or given == AUTO:
            chosen[i] = node.name
    return chosen


class FrontExecution(Execution):
    """A running FRONT network: iterate it for the outputs."""

    def __init__(self, plan: Plan, records: Iterable[Input], options: RunOptions, *,
                 error_policy: ErrorPolicy | None = None, guards: GuardCounters | None = None):
        super().__init__(error_policy=error_policy, guards=guards)
        Runtime = load_runtime()
        from snet_front.runtime import OutputStream

        self.plan = plan
        self.executor = plan.executor
        self.workers = options.workers or os.cpu_count() or 1
        throttle = None
        if options.throttle is not None:
            throttle = (float(options.throttle[0]), float(options.throttle[1]))
        automatic = auto_boxes(plan, options)
        self.controller = None
        limits = box_limits(plan, self.workers)
        if automatic or options.auto_concurrency:  # (no box to tune: the active workers still are)
            cores = self.workers
            self.workers = options.workers or (cores + MAX_LEVEL if automatic else cores)
            # workers held apart from the automatic boxes' calls: a split executor's batch holds the worker
            # that runs it, a box given a number above one as many as its number
            held = plan.executor is not None or any(
                limit > 1 and i not in automatic and isinstance(node, BoxPlan) and not node.deferred
                for i, (node, limit) in enumerate(zip(plan.nodes, limits)))
            self.controller = Controller(automatic, cores=cores, max_workers=self.workers,
                                         start_workers=first_workers(cores, held=held))
            limits = [1 if i in automatic else limit for i, limit in enumerate(limits)]  # others: as without auto
        self.chains = plan.fused if options.fuse else ()
        for chain in self.chains:  # one entity: as many calls at once as its least concurrent box allows
            # (a box the controller tunes counts with its level, read by the entity as the run goes on)
            boxes = [limits[n] for n in chain if isinstance(plan.nodes[n], BoxPlan) and n not in automatic]
            for n in chain:
                if n not in automatic:
                    limits[n] = min(boxes) if boxes else 1
        self.runtime = Runtime(plan, records, self.workers, limits, throttle,
                               bool(options.steal), int(options.seed or 0),
                               max_held=options.max_held, memory_limit=options.memory_limit,
                               active=self.controller.active() if self.controller else 0, auto_nodes=automatic,
                               chains=self.chains)
        self._closed = False
        self._ended = False
        # the outputs, taken from the runtime a batch at a time (next() and loops share it)
        self._outputs = OutputStream(self._refill)
        self.tuner = Tuner(self.runtime, self.controller) if self.controller is not None else None
        self.checkpoints = None  # a snet.checkpoint.front.FrontCheckpoints when the run takes them
        checkpointing = getattr(records, "snet_checkpoint", None)  # an input gate (snet.checkpoint.gate)
        if checkpointing is not None:
            from snet.checkpoint.front import FrontCheckpoints

            self.checkpoints = FrontCheckpoints(self.runtime, checkpointing)
        self.runtime.start()
        if self.tuner is not None:
            self.tuner.start()

    def __next__(self) -> Record:
        return self._outputs.take(self._next_alone)

    def __iter__(self) -> Iterator[Record]:
        """The outputs, taken from the runtime many at a time (one call per batch, not per record).

        The iterator is the execution's compiled output stream itself: what a
        batch holds that a loop has not reached yet, a later ``next()`` returns first.
        """
        return self._outputs

    def iterate(self, on_end: Callable[[BaseException], object]) -> Iterator[Record]:
        self._outputs.on_end = on_end
        return self._outputs

    def _refill(self) -> list[Record]:
        """The next outputs (at least one) for the stream; ``StopIteration`` at the end, or the run's error."""
        return self._from_runtime(self.runtime.take_outputs)

    def _next_alone(self) -> Record:
        """The next output, taken alone (``next()``); as :meth:`_refill`."""
        return self._from_runtime(self.runtime.next_output)

    def _from_runtime(self, take: Callable[[], Any]) -> Any:
        if self._ended or self._closed:
            raise StopIteration
        try:
            return take()
        except StopIteration:
            if not self._closed:  # terminated, not stopped by close() from another thread
                self._finish()
            raise
        except BaseException:
            self.close()
            raise

    def ready(self) -> bool:
        return self._outputs.waiting() > 0 or self.runtime.has_output()

    def _finish(self) -> None:
        if self._ended:
            return
        self._ended = True
        self.close()
        saved = self.checkpoints.unfinished(self.plan) if self.checkpoints is not None else []
        for node_id, filled, total in self.runtime.termination_warnings() + saved:
            self.warnings.append(unfinished_warning(self.plan.span_of(node_id), filled, total))
        if self.executor is not None:
            self.warnings.extend(self.executor.warnings())

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.tuner is not None:
                self.tuner.stop()
            if self.executor is not None and not self._ended:
                # Stopped early (an error, Ctrl-C, the caller): a worker may be waiting
                # for a batch; cancel it so that the worker can be joined now.
                self.runtime.halt()  # first, so that no new batch starts
                self.executor.cancel()
            self.runtime.close()
            if self.executor is not None:
                self.executor.close()
            self.release()

    def __del__(self) -> None:
        # An execution dropped unfinished must not leave workers reading its input.
        try:
            self.close()
        except Exception:
            pass

    def stats(self) -> RunStats:
        executor = self.executor.stats() if self.executor is not None else None
        stats = RunStats.from_front(self.runtime.statistics(), executor, self.runtime.held_in_cells(),
                                    resident_bytes())
        if self.controller is not None:
            stats = stats.with_auto(dict(self.controller.summary(), started=self.runtime.workers_started()))
        return stats


def start(plan: Plan, records: Iterable[Input], options: RunOptions | None = None, *,
          error_policy: ErrorPolicy | None = None, guards: GuardCounters | None = None) -> FrontExecution:
    """Run ``plan`` on the FRONT engine (see :mod:`snet.execution` for the contract)."""
    return FrontExecution(plan, records, options or RunOptions(), error_policy=error_policy, guards=guards)


#: the FRONT engine, as :mod:`snet.backends` finds it (``snet.options.ENGINES``); the calls of
#: ``async def`` boxes wait on its event loop, not in its workers, so their plans are ``deferred``
ENGINE = Engine(name="front", start=start, overlaps_async_boxes=True)


__all__ = ["ENGINE", "FrontExecution", "box_limits", "start"]
