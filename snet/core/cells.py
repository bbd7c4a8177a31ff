"""Synchro-cells: the state of one cell, and the index of a synchro-cell star's cells.

One implementation for every engine.  The reference engine and the FRONT
runtime both keep their cells as :class:`SyncCell` and the cells of a
``[| ... |] * P`` as a :class:`SyncStarIndex`; the module is compiled by
Cython (``cells.pxd`` makes the classes extension types and the hot
methods C calls, which FRONT's entities reach directly), and the same file
runs as plain Python where no build has been made.  The engines decide
*when* a record is offered and hold whatever lock guards the state (the
FRONT entity that owns a cell holds its own lock while it calls in; the
reference engine has one thread); what an offer *does* is decided here.

A cell (language.md §6.12)
==========================

A cell has one slot per pattern.  A record fills every empty slot whose
pattern it matches (with its guard holding); a record that fills none
passes the cell unchanged.  The record that fills the last empty slot
leaves as the merged record: slot 1's record whole, then from each later
slot the labels of its pattern (``SyncPatterns.later``).  The cell has then
*fired*: it forgets its records and passes everything unchanged from then on.

Invariant: ``slots[i]`` is None exactly for the indices in ``empty`` until
the cell fires; then ``fired`` is True and ``slots`` is None.  ``empty`` is
replaced, never changed in place, when a record is stored, so a caller that
kept the old list sees which slots the record filled.

A synchro-cell star
===================

Replica *k* of ``[| ... |] * P`` is one cell, so a record's way along the
replicas is fixed by the cells alone: a fired cell passes it unchanged, and
the exit test of an unchanged record gives the same answer before every
replica.  A record that matches the patterns M therefore goes straight to
the first unfired cell after its position with an empty slot in M, or to a
new replica's cell at the end of the chain; the record a cell merges goes
on from the replica after that cell.  ``waiting[i]`` lists, in replica
order, the unfired cells whose slot *i* is empty, so that cell is the
earliest head among ``waiting[i]`` for i in M: pairing costs the same
however many records the cells hold (``probes`` counts the cells looked at).
When a guard cannot be evaluated on the record (it lacks a tag) the record
walks along the unfired cells instead, and the first of them tests it, as
in the definition, and fails there.
"""

from __future__ import annotations

import sysconfig
from collections import deque
from typing import Any, Sequence

from snet.tagexpr import TagExpressionError

Record = dict

# See snet.core.boxes: on a free-threaded CPython ``d.copy()`` locks ``d`` twice, ``update`` once.
_FREE_THREADED_BUILD = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))

#: Cells waiting for one slot past which the index keeps them in a deque: most sync-stars (a split's
#: replicas of the Fibonacci join, say) hold one cell or two, where a short list costs a tenth of a
#: deque, but taking the head of a long list would cost its length.
LONG_WAIT = 32


class SyncCell:
    """The state of one synchro-cell instance (see the module docstring).

    ``shape`` is the cell's :class:`~snet.core.semantics.SyncPatterns`;
    ``replica`` is the replica of a sync-star the cell belongs to (-1 for
    a cell of its own).  Made by :func:`new_cell`.
    """

    def fill(self, shape: Any, replica: int) -> None:
        """Make this the empty cell of the patterns ``shape`` (a new cell's state)."""
        self.shape = shape
        self.replica = replica
        self.slots: list | None = [None] * shape.count
        self.empty: list[int] = list(range(shape.count))
        self.fired = False

    def accept(self, record: Record) -> Record | None:
        """Offer a record, testing it against the empty slots: what leaves the cell now, or None if stored."""
        return self.take(record, None)

    def take(self, record: Record, hits: Sequence[int] | None) -> Record | None:
        """Offer a record that matches the patterns ``hits`` (all of them; None: not tested yet).

        Returns what leaves the cell now, or None if the record was stored:
        a record that fills no empty slot leaves unchanged, and the record
        that fills the last one is replaced by the merged record.  Untested,
        the record is tested against the empty slots only, and a guard that
        cannot be evaluated raises the positioned error.
        """
        if self.fired:
            return record
        if hits is None:
            hits = self.shape.matcher.matching(record, self.empty)
        slots = self.slots
        assert slots is not None  # unfired
        stored = False
        for i in hits:
            if slots[i] is None:
                slots[i] = record
                stored = True
        if not stored:
            return record
        self.empty = [i for i in self.empty if slots[i] is None]
        if self.empty:
            return None
        self.fired = True
        self.slots = None
        return merged_record(slots, self.shape.later)

    def filled(self) -> int:
        """How many slots hold a record (0 once fired)."""
        return 0 if self.fired else self.shape.count - len(self.empty)

    def stored_records(self) -> int:
        """How many distinct records the cell holds (a record may fill several slots)."""
        if self.slots is None:  # fired
            return 0
        return len({id(r) for r in self.slots if r is not None})

    def saved(self) -> list | None:
        """The cell's state for a checkpoint (snet.checkpoint.state): its slots, None where empty; None once fired."""
        return None if self.slots is None else list(self.slots)

    def restore(self, slots: list | None) -> None:
        """Put back a state :meth:`saved` gave: the cell of a resumed run."""
        if slots is None:
            self.fired = True
            self.slots = None
            self.empty = []
        else:
            self.slots = list(slots)
            self.empty = [i for i in range(len(slots)) if slots[i] is None]
            self.fired = False


def new_cell(shape: Any, replica: int = -1) -> SyncCell:
    """A cell with every slot empty, of the patterns ``shape`` (``replica``: its sync-star replica, or -1)."""
    cell = SyncCell.__new__(SyncCell)
    cell.fill(shape, replica)
    return cell


def merged_record(slots: list, later: tuple) -> Record:
    """The record a cell emits when it fires: slot 1's record whole, then from slot *j+2* the labels ``later[j]``."""
    if _FREE_THREADED_BUILD:
        merged = {}
        merged.update(slots[0])
    else:
        merged = slots[0].copy()
    for j in range(len(later)):
        record = slots[j + 1]
        for label in later[j]:
            merged[label] = record[label]
    return merged


def patterns_matched(record: Record, labels: tuple | None, all_patterns: Any) -> Sequence[int] | None:
    """The indices of every cell pattern ``record`` matches, in order, or None where a guard cannot be evaluated on it.

    ``labels`` are the patterns' labels when no pattern has a guard (tested
    here, with no call); otherwise ``all_patterns`` is the patterns'
    generated test (``PatternMatcher.raw_all``).  None sends the record
    along the cells one by one, and the first cell that tests it raises the
    positioned error (see the module docstring).
    """
    if labels is not None:
        # Mostly one pattern matches: a tuple of one (CPython keeps small tuples in a freelist) or none;
        # a list only for a record that matches several.
        first = -1
        out: list[int] | None = None
        for i in range(len(labels)):
            for label in labels[i]:
                if label not in record:
                    break
            else:
                if first < 0:
                    first = i
                elif out is None:
                    out = [first, i]
                else:
                    out.append(i)
        if out is not None:
            return out
        return () if first < 0 else (first,)
    try:
        return all_patterns(record)
    except (KeyError, TagExpressionError):
        return None


class SyncStarIndex:
    """The unfired cells of one ``[| ... |] * P`` instance, indexed by their empty slots.

    ``cells`` maps each unfired cell's replica to the cell, in replica order
    (a fired cell leaves it); ``waiting[i]`` lists the unfired cells whose
    slot *i* is empty, in replica order;
    ``replicas`` is how many cells were ever opened.  An engine offers a
    record with ``find``, then ``open`` when there is no cell for it, then
    ``offer`` (see the module docstring).
    """

    def __init__(self, shape: Any) -> None:
        self.shape = shape
        self.cells: dict[int, SyncCell] = {}
        self.waiting: list = [[] for _ in range(shape.count)]
        self.replicas = 0
        self.probes = 0

    def find(self, hits: Sequence[int] | None, after: int) -> SyncCell | None:
        """The cell a record that matches ``hits`` (None: untested) goes to after replica ``after``.

        None when no open cell takes it: a new replica's cell does.
        """
        if hits is None:
            return self.first_after(after)
        return self.first_waiting(hits, after)

    def first_waiting(self, hits: Sequence[int], after: int) -> SyncCell | None:
        """The earliest unfired cell after ``after`` with an empty slot among ``hits``."""
        best = None
        for i in hits:
            for cell in self.waiting[i]:
                self.probes += 1
                if cell.replica > after:
                    if best is None or cell.replica < best.replica:
                        best = cell
                    break
        return best

    def first_after(self, after: int) -> SyncCell | None:
        """The first unfired cell after replica ``after``: the one whose guards test an untested record."""
        for k in self.cells:
            self.probes += 1
            if k > after:
                return self.cells[k]
        return None

    def open(self) -> SyncCell:
        """A new replica's cell at the end of the chain, on every waiting list."""
        cell = new_cell(self.shape, self.replicas)
        self.replicas += 1
        self.cells[cell.replica] = cell
        for i in range(len(self.waiting)):
            queue = self.waiting[i]
            queue.append(cell)
            if type(queue) is list and len(queue) > LONG_WAIT:
                self.waiting[i] = deque(queue)
        return cell

    def offer(self, cell: SyncCell, record: Record, hits: Sequence[int] | None) -> Record | None:
        """Offer ``record`` to ``cell`` (see :meth:`SyncCell.take`); the index follows what it filled."""
        before = cell.empty
        result = cell.take(record, hits)
        if cell.empty is not before:  # it stored the record: off the waiting lists of the slots it filled
            for i in before:
                if i not in cell.empty:
                    self.unlist(i, cell)
            if cell.fired:
                del self.cells[cell.replica]
        return result

    def unlist(self, slot: int, cell: SyncCell) -> None:
        """Take ``cell`` off ``waiting[slot]`` (it is usually the head)."""
        queue = self.waiting[slot]
        if queue[0] is not cell:
            queue.remove(cell)
        elif type(queue) is list:
            del queue[0]
        else:
            queue.popleft()

    def unfired(self) -> int:
        """How many of its cells have not fired."""
        return len(self.cells)

    def saved(self) -> tuple:
        """The index's state for a checkpoint: ``(replicas opened, [(replica, slots) of each unfired cell]``)."""
        return self.replicas, [(k, cell.saved()) for k, cell in self.cells.items()]

    def restore(self, replicas: int, cells: list) -> list:
        """Put back a state :meth:`saved` gave (into an index that has opened no cell); returns the cells."""
        self.replicas = replicas
        made = []
        for k, slots in cells:  # in replica order, as saved: the waiting lists stay in replica order
            cell = new_cell(self.shape, k)
            cell.restore(slots)
            self.cells[k] = cell
            for i in cell.empty:
                queue = self.waiting[i]
                queue.append(cell)
                if type(queue) is list and len(queue) > LONG_WAIT:
                    self.waiting[i] = deque(queue)
            made.append(cell)
        return made
