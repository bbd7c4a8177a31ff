"""The FRONT engine: adapter from a plan to the Cython runtime.

:mod:`snet_front.runtime` knows nothing about the language: it runs the
plan's per-node numbers (kind, exit links, initialiser ownership,
determinism) and builds each entity from its node's template.  This module
adds what depends on the run's options (how many calls of each box may run
at once) and wraps a run in the engine interface of :mod:`snet.backends`.

Box concurrency default
=======================

``DEFAULT_BOX_CONCURRENCY`` is ``None``: as many concurrent calls per box
instance as there are workers.  Boxes are stateless by the language's
rules, so this never changes results (the box's reorder buffer keeps its
output stream in input order), and it is what lets two workers overlap the
calls of one slow box that releases the GIL (docs/performance.md, bench 4).
For pure-Python boxes it neither helps nor costs much: the GIL serialises
the calls anyway and the reorder buffer is a dict insert per record.  The
C runtime made the same choice (``-c 2D``, where any value >= 2 meant "no
cap").  ``--box-concurrency 1`` restores one call at a time.
"""

from __future__ import annotations

import os
from typing import Iterable

from snet.backends import RunOptions
from snet.execution import Execution
from snet.core.semantics import unfinished_warning
from snet.plan import Kind, Plan
from snet.stats import RunStats

DEFAULT_BOX_CONCURRENCY: int | None = None  # None: the number of workers
ASYNC_BOX_CONCURRENCY = 256  # calls of one async def box instance in flight at once, by default

Record = dict


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
        return Runtime  # type: ignore[no-any-return]
    from snet.errors import SNetUsageError

    tree = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # above snet/
    raise SNetUsageError(f"the FRONT engine {why} in {tree}: run 'python3 -m pip install -e .' there, or "
                         f"'python3 setup.py build_ext --inplace' (or run with --engine reference)") from None


def box_limits(plan: Plan, workers: int) -> list[int]:
    """Concurrent calls per box instance, per node id (1 for other nodes)."""
    limits = []
    for node in plan.nodes:
        limit = 1
        if node.kind == Kind.BOX and node.deferred:  # an async box's calls wait on the loop, not in workers
            limit = max(1, int(node.concurrency if node.concurrency is not None else ASYNC_BOX_CONCURRENCY))
        elif node.kind == Kind.BOX:
            limit = node.concurrency if node.concurrency is not None else (DEFAULT_BOX_CONCURRENCY or workers)
            limit = max(1, min(int(limit), workers))
        limits.append(limit)
    return limits


class FrontExecution(Execution):
    """A running FRONT network: iterate it for the outputs."""

    def __init__(self, plan: Plan, records: Iterable[Record], options: RunOptions):
        super().__init__()
        Runtime = load_runtime()

        self.plan = plan
        self.executor = plan.executor
        self.workers = options.workers or os.cpu_count() or 1
        throttle = None
        if options.throttle is not None:
            throttle = (float(options.throttle[0]), float(options.throttle[1]))
        self.runtime = Runtime(plan, records, self.workers, box_limits(plan, self.workers), throttle,
                               bool(options.steal), int(options.seed or 0),
                               max_held=options.max_held, memory_limit=options.memory_limit)
        self._closed = False
        self._ended = False
        self.checkpoints = None  # a snet.checkpoint.front.FrontCheckpoints when the run takes them
        checkpointing = getattr(records, "snet_checkpoint", None)  # an input gate (snet.checkpoint.gate)
        if checkpointing is not None:
            from snet.checkpoint.front import FrontCheckpoints

            self.checkpoints = FrontCheckpoints(self.runtime, checkpointing)
        self.runtime.start()

    def __next__(self) -> Record:
        if self._ended or self._closed:
            raise StopIteration
        try:
            return self.runtime.next_output()
        except StopIteration:
            if not self._closed:  # terminated, not stopped by close() from another thread
                self._finish()
            raise
        except BaseException:
            self.close()
            raise

    def ready(self) -> bool:
        return self.runtime.has_output()

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
        return RunStats.from_front(self.runtime.statistics(), executor, self.runtime.held_in_cells())


def start(plan: Plan, records: Iterable[Record], options: RunOptions | None = None) -> FrontExecution:
    """Run ``plan`` on the FRONT engine (see :mod:`snet.backends` for the contract)."""
    return FrontExecution(plan, records, options or RunOptions())


start.overlaps_async_boxes = True  # type: ignore[attr-defined]  # async def boxes: plans are `deferred`


__all__ = ["FrontExecution", "box_limits", "start", "DEFAULT_BOX_CONCURRENCY"]
