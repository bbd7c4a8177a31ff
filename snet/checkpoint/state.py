"""The engine state a snapshot holds, in a form both engines export and import.

At a quiescent point (:mod:`snet.checkpoint.gate`) no record is in flight,
so the whole state of a run is where records are stored and which instances
exist:

* ``cells``: every plain synchro-cell that holds records or has fired, as
  ``(path, node, slots)``; ``slots`` lists the stored record per pattern
  (None: empty), or is None for a fired cell (an identity for ever);
* ``sync_stars``: every synchro-cell star with unfired cells, as
  ``(path, node, replicas, [(k, slots), ...])``: how many cells it has made
  and the slots of each unfired one;
* ``fired``: the paths of the instances whose initialisers have fired (a
  rebuilt one must not fire them again: their outputs are in the output);
* ``parked``: ``(node, record)`` for each record kept for ever in a
  synchro-cell star (the run still fails at its end, as it would have).

A *path* names the instance a cell lives in: the replicas on the way from
the top, each ``(node, k)`` for replica ``k`` (from 0) of star ``node`` or
``(node, value)`` for the replica of split ``node`` for tag value
``value``.  Parallel branches and feedback loops have one instance each, so
the node id alone tells them apart.  Paths are the same in both engines.

Engines restore lazily: a :class:`Restore` is consulted whenever the engine
builds a synchro-cell, a synchro-cell star or an initialiser, so replicas
are rebuilt only when a record reaches them, exactly as in the first run.
What no record has reached yet is exported again as it was.
"""

from __future__ import annotations

from typing import Any

Path = tuple


class Restore:
    """The state a resumed run starts from, taken piece by piece as the engine builds its instances."""

    def __init__(self, state: dict):
        self.cells: dict[tuple[Path, int], Any] = {(tuple(p), n): s for p, n, s in state["cells"]}
        self.stars: dict[tuple[Path, int], Any] = {(tuple(p), n): (r, c) for p, n, r, c in state["sync_stars"]}
        self.fired: set[Path] = {tuple(p) for p in state["fired"]}
        self.parked: list = list(state["parked"])
        self.prefixes: set[Path] = set()
        for path in [p for p, _ in self.cells] + [p for p, _ in self.stars] + list(self.fired):
            for i in range(1, len(path) + 1):
                self.prefixes.add(path[:i])

    def take_cell(self, path: Path, node: int) -> Any:
        """The saved slots of the cell ``node`` in ``path`` (None: fired), or ``False`` when it was fresh."""
        return self.cells.pop((path, node), False)

    def take_star(self, path: Path, node: int) -> Any:
        """``(replicas, [(k, slots)])`` of the synchro-cell star ``node`` in ``path``, or None."""
        return self.stars.pop((path, node), None)

    def unfinished(self, plan: Any) -> list[tuple[int, int, int]]:
        """``(cell node, filled, patterns)`` of the saved cells holding records that no record reached: the
        termination warnings an uninterrupted run would give for them."""
        found = []
        for (_, node), slots in self.cells.items():
            if slots is not None and len(slots) > len(empty_slots(slots)):
                found.append((node, len(slots) - len(empty_slots(slots)), len(slots)))
        for (_, node), (_, cells) in self.stars.items():
            for _, slots in cells:
                found.append((plan.nodes[node].cell, len(slots) - len(empty_slots(slots)), len(slots)))
        return found

    def leftover(self) -> tuple[list, list]:
        """What no record reached in this run: exported again unchanged."""
        return ([(p, n, s) for (p, n), s in self.cells.items()],
                [(p, n, r, c) for (p, n), (r, c) in self.stars.items()])


def empty_slots(slots: list) -> list[int]:
    """The indices of the empty slots of saved ``slots``."""
    return [i for i, r in enumerate(slots) if r is None]


def replica_value(path: Path, split: int) -> Any:
    """The tag value of the replica of ``split`` that ``path`` goes through, or None when it goes through none."""
    for node, value in path:
        if node == split:
            return value
    return None


def take_replicas(state: dict, splits: set[int]) -> dict[int, dict]:
    """Take out of ``state`` what the replicas of ``splits`` hold, wherever their instances are (a path
    ``(..., (split, value), ...)``): a state dict per split, for the split executor that runs them.

    No split of ``splits`` encloses another (an executor runs the
    outermost splits it selects), so a path goes through one of them at
    most.
    """
    parts: dict[int, dict] = {}

    def ours(path: Path) -> int | None:
        for node, _ in path:
            if node in splits:
                return node
        return None

    def part(split: int) -> dict:
        return parts.setdefault(split, empty_state())

    for key in ("cells", "sync_stars", "fired"):
        kept = []
        for entry in state[key]:
            split = ours(tuple(entry if key == "fired" else entry[0]))
            if split is None:
                kept.append(entry)
            else:
                part(split)[key].append(entry)
        state[key] = kept
    return parts


def empty_state() -> dict:
    return {"cells": [], "sync_stars": [], "fired": [], "parked": []}


def add_state(state: dict, part: dict) -> None:
    """Add a split executor's ``part`` (its replicas' cells, stars, fired initialisers and records parked for
    ever) to ``state``."""
    state["cells"] = state["cells"] + list(part["cells"])
    state["parked"] = state["parked"] + list(part["parked"])
    state["sync_stars"] = state["sync_stars"] + list(part["sync_stars"])
    state["fired"] = sorted({*map(tuple, state["fired"]), *map(tuple, part["fired"])}, key=repr)


def new_state(cells: list, stars: list, fired: set, parked: list, restore: Restore | None) -> dict:
    """The state dict of a snapshot, with what a restore left untouched."""
    if restore is not None:
        old_cells, old_stars = restore.leftover()
        cells = cells + old_cells
        stars = stars + old_stars
        fired = fired | restore.fired
    return {"cells": cells, "sync_stars": stars, "fired": sorted(fired, key=repr), "parked": parked}
