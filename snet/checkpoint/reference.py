"""The reference engine's checkpoint hooks (:mod:`snet.checkpoint.state` gives the format).

The engine asks the gate for input only when its work stack is empty, so
every call of the gate is a quiescent point, unless records wait in a split
executor's partial batch, which the engine runs when the gate says "nothing
yet": a due snapshot is taken there and then (``synchronous``).  The engine
tells this object about every synchro-cell, synchro-cell star and
initialiser it builds, with the path of the replica it builds them in; this
object restores their saved state and lists them for the next snapshot.
"""

from __future__ import annotations

from typing import Any

from snet.checkpoint.state import Restore, new_state
from snet.core.semantics import unfinished_warning
from snet.gcpause import gc_paused


class ReferenceCheckpoints:
    """The checkpoint hooks of one :class:`~snet.reference.ReferenceEngine`, resuming from ``restore`` (a state
    dict, or None for a fresh run); bound to the run's :class:`~snet.checkpoint.gate.Checkpointing` by the
    caller (a split process's engine answers its parent instead: :mod:`snet.splitworker`)."""

    engine_name = "reference"
    synchronous = True

    def __init__(self, engine: Any, restore: dict | None):
        self.engine = engine
        self.restore = Restore(restore) if restore is not None else None
        self.cells: list = []  # (path, node id, SyncCell)
        self.stars: list = []  # (path, node id, _SyncStar)
        self.fired: set = set()
        engine.checkpoints = self

    # -- as the engine builds -------------------------------------------------------

    def fires(self, path: tuple) -> bool:
        """Whether the initialisers of the instance at ``path`` fire now (not if they fired before a resume)."""
        if self.restore is not None and path in self.restore.fired:
            return False
        self.fired.add(path)
        return True

    def cell(self, path: tuple, node: Any, cell: Any) -> None:
        self.cells.append((path, node.id, cell))
        if self.restore is None:
            return
        slots = self.restore.take_cell(path, node.id)
        if slots is not False:  # False: nothing saved for it
            cell.restore(slots)

    def sync_star(self, path: tuple, node: Any, zipper: Any) -> None:
        self.stars.append((path, node.id, zipper))
        saved = self.restore.take_star(path, node.id) if self.restore is not None else None
        if saved is None:
            return
        replicas, cells = saved
        with gc_paused():  # many cells at once: collections would walk them again and again
            for cell in zipper.index.restore(replicas, cells):
                self.engine.held += 1
                self.engine.cells.append((cell, zipper.cell_node))

    def restore_parked(self) -> None:
        if self.restore is not None:
            nodes = self.engine.plan.nodes
            self.engine.parked.extend((nodes[n], record) for n, record in self.restore.parked)

    def unfinished_warnings(self) -> list[str]:
        if self.restore is None:
            return []
        plan = self.engine.plan
        return [unfinished_warning(plan.nodes[n].span, filled, total)
                for n, filled, total in self.restore.unfinished(plan)]

    # -- what the gate asks ------------------------------------------------------------

    def quiescent(self) -> bool:
        e = self.engine
        return not e.stack and not (e.executor is not None and e.executor.pending)

    def batch_waits(self) -> bool:
        """Between two inputs, records wait in the split executor's partial batch: the engine runs it when the
        gate says "nothing yet" (a snapshot came due while the batch filled)."""
        e = self.engine
        return not e.stack and e.executor is not None and bool(e.executor.pending)

    def records_out(self) -> int:
        return self.engine.records_out

    def export_state(self) -> dict:
        cells = [(p, n, c.saved()) for p, n, c in self.cells if c.fired or c.filled()]
        stars = [(p, n, *z.index.saved()) for p, n, z in self.stars if z.index.cells]
        parked = [(node.id, record) for node, record in self.engine.parked]
        return new_state(cells, stars, self.fired, parked, self.restore)


__all__ = ["ReferenceCheckpoints"]
