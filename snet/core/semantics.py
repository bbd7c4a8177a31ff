"""The semantic core: what every construct means, in one place for all engines.

Engines differ in *scheduling* only.  The plan (:mod:`snet.plan`) holds,
per node, the object that applies that node to a record, built from the
property graph and the bound box functions once per run:

=============  ================================================================
node kind      operator
=============  ================================================================
box            :class:`~snet.core.boxes.BoxCaller`: ``op(record) -> [records]``
filter         a compiled function ``op(record) -> [records]``
sync           :class:`SyncPatterns` (shared); per instance state is a :class:`~snet.core.cells.SyncCell`
parallel       :class:`~snet.core.compiled.Router`: ``op.route(record) -> branch``
star           :class:`~snet.core.compiled.PatternMatcher` of the exit patterns
feedback       :class:`~snet.core.compiled.PatternMatcher` of the back patterns
split          :class:`~snet.core.compiled.SplitKeys`
=============  ================================================================

The operators are immutable after construction (apart from the routing cache,
whose entries are idempotent), so workers share them without locks.
"""

from __future__ import annotations

import logging

from snet.core.cells import SyncCell, new_cell
from snet.core.compiled import PatternMatcher
from snet.errors import SNetRuntimeError
from snet.records import describe
from snet.source import Span
from snet.spg.nodes import Pattern, SyncNode

Record = dict


class SyncPatterns:
    """The static part of a synchro-cell: patterns, guards, the merge rule."""

    __slots__ = ("patterns", "matcher", "span", "count", "later")

    def __init__(self, node: SyncNode):
        self.patterns: tuple[Pattern, ...] = node.patterns
        self.matcher = PatternMatcher(node.patterns, "synchro-cell guard", node.span)
        self.span: Span | None = node.span
        self.count = len(node.patterns)
        # the labels of each pattern after the first: what a merged record takes from that slot
        self.later: tuple[tuple[str, ...], ...] = tuple(tuple(p.labels) for p in node.patterns[1:])

    def new_cell(self) -> SyncCell:
        """The state of one instance: every slot empty."""
        return new_cell(self)


def unfinished_warning(span: Span | None, filled: int, total: int) -> str:
    """The termination warning for a cell that holds records but never fired (§9)."""
    where = f"{span.location}: " if span is not None else ""
    return f"{where}warning: synchro-cell discarded with {filled} of {total} patterns filled"


# -- records that stay in a synchro-cell star for ever ----------------------------------
#
# A record that matches neither an exit pattern of ``[| ... |] * P`` nor any
# pattern of its cell passes every replica unchanged: each later replica tests
# the same exit patterns and holds a cell with the same patterns.  The language
# (§9, §10) makes this no error: the record stays in the network and the
# network cannot terminate.  Engines therefore keep such a record *parked*
# (counted as in flight, costing nothing), say so once with a warning, and when
# the input has ended and nothing but parked records is left, end the run with
# the error below instead of waiting for ever.

def parked_warning(span: Span | None, record: dict) -> str:
    where = f"{span.location}: " if span is not None else ""
    return (f"{where}warning: record {describe(record)} matches neither an exit pattern nor a synchro-cell "
            f"pattern of the star: it stays in the star for ever, and the network cannot terminate")


def cannot_terminate(span: Span | None, count: int, record: dict) -> SNetRuntimeError:
    return SNetRuntimeError(
        f"the network cannot terminate: {count} record(s) stay in the synchro-cell star for ever, matching "
        f"neither its exit patterns nor a synchro-cell pattern (the first: {describe(record)})", span)


def log_parked(span: Span | None, record: dict) -> None:
    logging.getLogger("snet").warning("%s", parked_warning(span, record))


def throttle_warning(offset: float, factor: float, inputs: int, outputs: int) -> str:
    """The network went idle with the throttle holding its input: input is admitted anyway."""
    return (f"warning: throttle ({offset:g}, {factor:g}) held the input back after {inputs} input(s) and "
            f"{outputs} output(s) while the network had nothing left to do; input is admitted whenever "
            f"that happens (the network needs more inputs per output than the factor {factor:g} allows)")


def log_throttle_overridden(offset: float, factor: float, inputs: int, outputs: int) -> None:
    logging.getLogger("snet").warning("%s", throttle_warning(offset, factor, inputs, outputs))
