"""The plan: the one contract between the compiler and every engine.

The front end ends with a :class:`~snet.spg.nodes.PropertyGraph`, a tree of
construct occurrences with their types and properties.  An engine needs
something else: for every node, *what it does to a record* (the compiled
operator) and *where records go next*.  This module declares that: the
templates, one class per kind, and the operators' interfaces.  The
compiler computes it once per run (:func:`snet.spg.lower.lower`: the spg
lowers, the plan declares), so this module imports nothing of the
compiler, and engines read nothing but the plan:

* the reference engine (:mod:`snet.reference`) builds its instance tree
  from it;
* the FRONT runtime (:mod:`snet_front`) copies the per-node numbers into C
  arrays and builds each entity class from its node's template;
* a split executor (:mod:`snet.splitexec`) runs the operand of the splits
  it was given, from a plan of its own lowered on the other side.

Nodes
=====

One frozen template per node of the property graph, with the same dense ids
(``plan.nodes[i].id == i``, parents before children).  The class of a
template is its kind: an engine written in Python dispatches on the class
(``match node: case BoxPlan(): ...``), so a type checker knows which fields
each case may read; :class:`Kind` numbers the kinds for engines that
dispatch on integers.  The Cython runtime declares the same numbers in
``snet_front/kinds.pxd``; ``tests/structure/test_plan_kinds.py`` fails when
the two disagree.

Common fields say where a node sits:

* ``children``: node ids entered from this node (a net's body, serial
  stages, parallel branches, the operand of a star, split or feedback);
* ``exit`` / ``next``: where records leaving the node go.
  :attr:`Exit.NEXT`: into serial stage ``next``; :attr:`Exit.UP`: out of
  the parent ``next`` as well; :attr:`Exit.POP`: to the enclosing
  combinator instance (the operand of a star, split, feedback or a
  parallel branch ends here); :attr:`Exit.SINK`: the network's output;
* ``owns_init``: an initialiser fires when this node's instance is created
  (star and split operands are instances of their own, so an initialiser
  behind one does not count for the enclosing node);
* ``deterministic``: ``||``, ``**`` or ``!!``;
* ``holds_executor_split``: the node is, or contains, a split whose
  replicas run in the split executor.

Operators
=========

What an engine calls is declared here as interfaces (:class:`BoxCall`,
:data:`FilterCall`, :class:`RecordRouter`) or as the operator classes of
:mod:`snet.core` (pattern matchers, split keys, synchro-cell patterns),
and the split executor as :class:`snet.splitexec.SplitExecutorProtocol`.
An engine sees no error policy: a run that skips failing records gets
operators that do so (:mod:`snet.errorpolicy`).

Adding a combinator
===================

``docs/architecture.md`` has the checklist; in short: a property-graph node
(``snet/spg/nodes.py``), its operator (``snet/core``), a :class:`Kind`
member, a template class here and its case in
:func:`snet.spg.lower._template`, the same number in
``snet_front/kinds.pxd``, an instance class in the reference engine, an
entity class and factory in ``snet_front``.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator, Protocol, Union

import attrs

from snet.source import Span

if TYPE_CHECKING:
    from snet.core.compiled import PatternMatcher, SplitKeys
    from snet.core.semantics import SyncPatterns
    from snet.splitexec import SplitExecutorProtocol

Record = dict[str, Any]  # label (S-Net spelling: "x", "<t>", "<#b>") -> value


class BoxCall(Protocol):
    """A box's caller (:class:`snet.core.boxes.BoxCaller`, or an error policy's wrapper around one).

    ``call(record)`` runs the box on one record and returns its outputs in
    order; ``fire()`` runs an initialiser; ``resume(future, record)`` turns
    the finished coroutine of a deferred call (:attr:`BoxPlan.deferred`)
    into the outputs.  A run-time error is an
    :class:`~snet.errors.SNetRuntimeError`.
    """

    @property
    def name(self) -> str: ...

    @property
    def function(self) -> Callable[..., Any]: ...  # the box's function (a box process's stand-in, say)

    def __call__(self, record: Record, /) -> list[Record]: ...

    def resume(self, future: Any, record: Record, /) -> list[Record]: ...

    def fire(self) -> list[Record]: ...


#: a filter's operator: one record in, its outputs in order
FilterCall = Callable[[Record], list[Record]]


class RecordRouter(Protocol):
    """A parallel composition's choice: ``route(record)`` is the branch index, or raises the error.

    ``cache`` maps a record's label set to the branch its routing gave, for
    engines that route a known shape without calling ``route``.
    """

    cache: dict[frozenset[str], int]

    def route(self, record: Record, /) -> int: ...


class Kind(enum.IntEnum):
    """Node kinds; the same numbers as ``snet_front/kinds.pxd``."""

    NET = 0
    SERIAL = 1
    IDENTITY = 2
    INIT_BOX = 3
    BOX = 4
    FILTER = 5
    SYNC = 6
    PARALLEL = 7
    STAR = 8
    SYNC_STAR = 9
    SPLIT = 10
    FEEDBACK = 11
    EXECUTOR_SPLIT = 12


class Exit(enum.IntEnum):
    """Where records leaving a node go; the same numbers as ``snet_front/kinds.pxd``."""

    NEXT = 0
    UP = 1
    POP = 2
    SINK = 3


def _fields_repr(obj: PlanNode | Plan) -> str:
    """``Name(field=value, ...)``: one method for every template class, where attrs would compile one
    per class at import (half of this module's import time, paid by every first run)."""
    fields = ", ".join(f"{a.name}={getattr(obj, a.name)!r}" for a in attrs.fields(type(obj)))
    return f"{type(obj).__name__}({fields})"


@attrs.frozen(kw_only=True, eq=False, repr=False)
class PlanNode:
    """What every node template has (see the module docstring)."""

    kind: ClassVar[Kind] = Kind.IDENTITY  # overridden by each template class

    id: int
    span: Span | None
    children: tuple[int, ...] = ()
    exit: Exit = Exit.SINK
    next: int = -1
    owns_init: bool = False
    deterministic: bool = False
    holds_executor_split: bool = False

    @property
    def where(self) -> str:
        return self.span.location if self.span is not None else f"node {self.id}"

    def __repr__(self) -> str:
        return _fields_repr(self)


@attrs.frozen(kw_only=True, eq=False, repr=False)
class NetPlan(PlanNode):
    """An occurrence of a named net: wiring only; ``children == (body,)``."""

    kind = Kind.NET
    name: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SerialPlan(PlanNode):
    """``A .. B ..``: wiring only; ``children`` are the stages."""

    kind = Kind.SERIAL


@attrs.frozen(kw_only=True, eq=False, repr=False)
class IdentityPlan(PlanNode):
    """``[]``: wiring only."""

    kind = Kind.IDENTITY


@attrs.frozen(kw_only=True, eq=False, repr=False)
class BoxPlan(PlanNode):
    """A box: ``call(record) -> [records]``.

    ``concurrency``: concurrent calls one instance may run (None: the
    engine's default).
    """

    kind = Kind.BOX
    name: str
    call: BoxCall
    concurrency: int | None = None
    # an async def box (or a box in box processes) whose calls the engine overlaps: call() gives a Deferred,
    # call.resume() the outputs
    deferred: bool = False


@attrs.frozen(kw_only=True, eq=False, repr=False)
class InitBoxPlan(PlanNode):
    """An initialiser box: ``call.fire() -> [records]`` once per instance; records reaching it pass."""

    kind = Kind.INIT_BOX
    name: str
    call: BoxCall


@attrs.frozen(kw_only=True, eq=False, repr=False)
class FilterPlan(PlanNode):
    """A filter: ``apply(record) -> [records]``."""

    kind = Kind.FILTER
    apply: FilterCall


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SyncPlan(PlanNode):
    """A synchro-cell: ``shape.new_cell()`` is the state of one instance."""

    kind = Kind.SYNC
    shape: SyncPatterns


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ParallelPlan(PlanNode):
    """``A | B`` / ``A || B``: ``router.route(record) -> branch index``."""

    kind = Kind.PARALLEL
    router: RecordRouter


@attrs.frozen(kw_only=True, eq=False, repr=False)
class StarPlan(PlanNode):
    """``A * P`` / ``A ** P``: ``exits.first(record) >= 0`` leaves the star.

    ``loops``: the operand holds no state (no synchro-cell, no initialiser),
    so every replica is the same as a fresh one and engines may run one
    operand instance whose outputs come back to the exit test, instead of a
    new replica per unfolding: a star unfolded a million times then costs
    the memory of one replica.  Streams stay FIFO per unfolding depth (the
    shared entities keep arrival order), and ``**`` still orders by the
    record that entered the star.
    """

    kind = Kind.STAR
    exits: PatternMatcher
    loops: bool = False


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SyncStarPlan(StarPlan):
    """A star whose whole operand is a synchro-cell (node ``cell``, patterns ``shape``).

    Engines may run it as one entity that keeps the chain of cells (the C
    runtime's zipper); ``children`` still holds the operand for those that
    do not.
    """

    kind = Kind.SYNC_STAR
    cell: int
    shape: SyncPatterns


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SplitPlan(PlanNode):
    """``A ! <t>`` (and ``!!``, ranges): ``keys.values(record)`` are the replicas to enter."""

    kind = Kind.SPLIT
    keys: SplitKeys


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ExecutorSplitPlan(SplitPlan):
    """A split whose replicas run in the run's split executor (:mod:`snet.splitexec`).

    Its operand is not instantiated by the engine: records are checked
    with ``keys`` (a missing tag fails where it would locally) and handed
    to ``plan.executor``.
    """

    kind = Kind.EXECUTOR_SPLIT


@attrs.frozen(kw_only=True, eq=False, repr=False)
class FeedbackPlan(PlanNode):
    """``A \\ P``: operand outputs with ``back.first(record) >= 0`` go round again."""

    kind = Kind.FEEDBACK
    back: PatternMatcher


@attrs.frozen(eq=False, repr=False)
class Plan:
    """A lowered program: ``nodes[0]`` is the root; ``executor`` runs the executor splits; ``fused``: the chains of
    static stages (:mod:`snet.spg.fusion`)."""

    nodes: tuple[PlanNode, ...]
    net_name: str
    signature: str
    executor: SplitExecutorProtocol | None = None  # when some split runs in one
    #: chains of boxes and filters an engine may run as one entity, node ids in the order records pass them
    #: (:mod:`snet.spg.fusion`; docs/runtime.md, "Fusion")
    fused: tuple[tuple[int, ...], ...] = ()

    @property
    def root(self) -> PlanNode:
        return self.nodes[0]

    def __repr__(self) -> str:
        return _fields_repr(self)

    def span_of(self, node_id: int) -> Span | None:
        return self.nodes[node_id].span if 0 <= node_id < len(self.nodes) else None

    def walk(self, start: int = 0) -> Iterator[PlanNode]:
        """Every node under ``start``, parents before children."""
        stack = [start]
        while stack:
            node = self.nodes[stack.pop()]
            yield node
            stack.extend(reversed(node.children))

    def of_kind(self, *kinds: Kind) -> list[PlanNode]:
        return [n for n in self.nodes if n.kind in kinds]


#: every template class, for an exhaustive ``match`` (subclasses before their bases)
AnyPlanNode = Union[NetPlan, SerialPlan, IdentityPlan, BoxPlan, InitBoxPlan, FilterPlan, SyncPlan, ParallelPlan,
                    SyncStarPlan, StarPlan, ExecutorSplitPlan, SplitPlan, FeedbackPlan]


_COMMON = frozenset(f.name for f in attrs.fields(PlanNode))


def operators(node: PlanNode) -> dict[str, Any]:
    """The per-kind fields of a template (its operators and settings), by name."""
    return {f.name: getattr(node, f.name) for f in attrs.fields(type(node)) if f.name not in _COMMON}


__all__ = ["Kind", "Exit", "Plan", "PlanNode", "AnyPlanNode", "NetPlan", "SerialPlan", "IdentityPlan", "BoxPlan",
           "InitBoxPlan", "FilterPlan", "SyncPlan", "ParallelPlan", "StarPlan", "SyncStarPlan", "SplitPlan",
           "ExecutorSplitPlan", "FeedbackPlan", "BoxCall", "FilterCall", "RecordRouter", "Record", "operators"]
