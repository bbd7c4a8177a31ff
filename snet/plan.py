"""The plan: the one contract between the compiler and every engine.

The front end ends with a :class:`~snet.spg.nodes.PropertyGraph`, a tree of
construct occurrences with their types and properties.  An engine needs
something else: for every node, *what it does to a record* (the compiled
operator) and *where records go next*.  :func:`lower` computes that once per
run, and engines read nothing but the plan:

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
template is its kind; :class:`Kind` numbers the kinds for engines that
dispatch on integers.  The Cython runtime declares the same numbers in
``snet_front/kinds.pxd``; ``tests/runtime/test_plan_kinds.py`` fails when the
two disagree.

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

Adding a combinator
===================

``docs/architecture.md`` has the checklist; in short: a property-graph node
(``snet/spg/nodes.py``), its operator (``snet/core``), a :class:`Kind`
member, a template class here and its case in :func:`_template`, the same
number in ``snet_front/kinds.pxd``, an instance class in the reference
engine, an entity class and factory in ``snet_front``.
"""

from __future__ import annotations

import enum
import inspect
from typing import Any, Callable, Iterator, Mapping

import attrs

from snet.core.boxes import BoxCaller
from snet.core.compiled import PatternMatcher, Router, SplitKeys, compile_filter
from snet.core.semantics import SyncPatterns
from snet.errorpolicy import ErrorPolicy, SkippingBox, SkippingFilter
from snet.source import Span
from snet.spg.nodes import (BoxNode, FeedbackNode, FilterNode, IdentityNode, NetNode, Node, ParallelNode,
                            PropertyGraph, SerialNode, SplitNode, StarNode, SyncNode)


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


def _fields_repr(obj) -> str:
    """``Name(field=value, ...)``: one method for every template class, where attrs would compile one
    per class at import (half of this module's import time, paid by every first run)."""
    fields = ", ".join(f"{a.name}={getattr(obj, a.name)!r}" for a in attrs.fields(type(obj)))
    return f"{type(obj).__name__}({fields})"


@attrs.frozen(kw_only=True, eq=False, repr=False)
class PlanNode:
    """What every node template has (see the module docstring)."""

    kind = Kind.IDENTITY  # overridden by each template class

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
    call: Any  # a BoxCaller, or a SkippingBox around one
    concurrency: int | None = None
    # an async def box (or a box in box processes) whose calls the engine overlaps: call() gives a Deferred,
    # call.resume() the outputs
    deferred: bool = False


@attrs.frozen(kw_only=True, eq=False, repr=False)
class InitBoxPlan(PlanNode):
    """An initialiser box: ``call.fire() -> [records]`` once per instance; records reaching it pass."""

    kind = Kind.INIT_BOX
    name: str
    call: Any  # a BoxCaller, or a SkippingBox around one


@attrs.frozen(kw_only=True, eq=False, repr=False)
class FilterPlan(PlanNode):
    """A filter: ``apply(record) -> [records]``."""

    kind = Kind.FILTER
    apply: Callable[[dict], list]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SyncPlan(PlanNode):
    """A synchro-cell: ``shape.new_cell()`` is the state of one instance."""

    kind = Kind.SYNC
    shape: SyncPatterns


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ParallelPlan(PlanNode):
    """``A | B`` / ``A || B``: ``router.route(record) -> branch index``."""

    kind = Kind.PARALLEL
    router: Router


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
    """A lowered program: ``nodes[0]`` is the root; ``executor`` runs the executor splits."""

    nodes: tuple[PlanNode, ...]
    net_name: str
    signature: str
    executor: Any = None  # a snet.splitexec.SplitExecutor, when some split runs in one

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


_COMMON = frozenset(f.name for f in attrs.fields(PlanNode))


def operators(node: PlanNode) -> dict[str, Any]:
    """The per-kind fields of a template (its operators and settings), by name."""
    return {f.name: getattr(node, f.name) for f in attrs.fields(type(node)) if f.name not in _COMMON}


def sync_operand(node: StarNode) -> SyncNode | None:
    """The synchro-cell that is, in effect, a star's whole operand, if any.

    Named nets and ``[]`` stages around it change nothing a record sees
    (``[| {a}, {b} |] .. []`` passes exactly what the cell passes), so they
    are looked through.
    """
    operand = node.operand
    while True:
        if isinstance(operand, NetNode):
            operand = operand.body
        elif isinstance(operand, SerialNode):
            rest = [s for s in operand.stages if not _is_identity(s)]
            if len(rest) != 1:
                return None
            operand = rest[0]
        else:
            return operand if isinstance(operand, SyncNode) else None


def _is_identity(node: Node) -> bool:
    while isinstance(node, NetNode):
        node = node.body
    return isinstance(node, IdentityNode)


def lower(graph: PropertyGraph, boxes: Mapping[str, Callable], *, box_concurrency: int | None = None,
          box_concurrency_per_box: Mapping[str, int] | None = None, executor: Any = None,
          on_error: ErrorPolicy | None = None, defer_async: bool = False) -> Plan:
    """Lower ``graph`` with its bound ``boxes`` into a :class:`Plan`.

    ``on_error``: the policy that skips records failing in a box or a
    filter (:mod:`snet.errorpolicy`); None stops the run at the first error.
    ``defer_async``: the engine overlaps the calls of ``async def`` boxes
    and of boxes in box processes, which then go in batches (their plans
    are ``deferred``); else each call is awaited in place.

    ``executor``: a split executor; the split nodes in its ``selected`` set
    become :class:`ExecutorSplitPlan` templates and ``plan.executor``.
    """
    assert graph.root.id == 0, "the property graph lists the root first"
    per_box = dict(box_concurrency_per_box or {})
    selected = frozenset(executor.selected) if executor is not None else frozenset()
    n = len(graph.nodes)
    exits: list[tuple[Exit, int]] = [(Exit.SINK, -1)] * n
    for node in graph.nodes:
        _link(node, exits)
    owns_init = [False] * n
    holds = [False] * n
    for node in reversed(graph.nodes):  # children after parents in `nodes`: bottom-up
        kids = node.children()
        holds[node.id] = node.id in selected or any(holds[c.id] for c in kids)
        if isinstance(node, BoxNode):
            owns_init[node.id] = node.initialiser
        elif isinstance(node, (NetNode, SerialNode, ParallelNode, FeedbackNode)):
            owns_init[node.id] = any(owns_init[c.id] for c in kids)
    templates = []
    for node in graph.nodes:
        common = dict(id=node.id, span=node.span, children=tuple(c.id for c in node.children()),
                      exit=exits[node.id][0], next=exits[node.id][1], owns_init=owns_init[node.id],
                      deterministic=node.deterministic, holds_executor_split=holds[node.id])
        concurrency = per_box.get(node.name, box_concurrency) if isinstance(node, BoxNode) else None
        templates.append(_template(node, common, boxes, concurrency, node.id in selected, on_error, defer_async))
    return Plan(tuple(templates), graph.net_name, graph.signature, executor if selected else None)


def _link(parent: Node, exits: list) -> None:
    """Record where the children of ``parent`` send the records leaving them."""
    if isinstance(parent, (ParallelNode, StarNode, SplitNode, FeedbackNode)):
        for child in parent.children():
            exits[child.id] = (Exit.POP, -1)
        return
    children = parent.children()
    for i, child in enumerate(children):
        if isinstance(parent, SerialNode) and i + 1 < len(children):
            exits[child.id] = (Exit.NEXT, children[i + 1].id)
        else:
            exits[child.id] = (Exit.UP, parent.id)


def _template(node: Node, common: dict, boxes: Mapping[str, Callable], concurrency: int | None,
              in_executor: bool, on_error: ErrorPolicy | None, defer_async: bool = False) -> PlanNode:
    """The one place that maps property-graph node classes to templates and operators."""
    if isinstance(node, NetNode):
        return NetPlan(name=node.name, **common)
    if isinstance(node, SerialNode):
        return SerialPlan(**common)
    if isinstance(node, IdentityNode):
        return IdentityPlan(**common)
    if isinstance(node, BoxNode):
        function = boxes[node.name]
        batched = getattr(function, "__snet_batched__", None)  # a box process stand-in: its calls may go in batches
        deferred = defer_async and not node.initialiser and (inspect.iscoroutinefunction(function) or batched is not None)
        caller = BoxCaller(node, batched() if deferred and batched is not None else function)
        caller.defer = deferred
        call: Any = caller if on_error is None else SkippingBox(caller, on_error)
        if node.initialiser:
            return InitBoxPlan(name=node.name, call=call, **common)
        return BoxPlan(name=node.name, call=call, concurrency=concurrency, deferred=deferred, **common)
    if isinstance(node, FilterNode):
        apply = compile_filter(node)
        return FilterPlan(apply=apply if on_error is None else SkippingFilter(apply, on_error), **common)
    if isinstance(node, SyncNode):
        return SyncPlan(shape=SyncPatterns(node), **common)
    if isinstance(node, ParallelNode):
        what = "deterministic parallel" if node.deterministic else "parallel"
        return ParallelPlan(router=Router(node.routes, node.span, what), **common)
    if isinstance(node, StarNode):
        matcher = PatternMatcher(node.exits, "star exit pattern guard", node.span)
        cell = sync_operand(node)
        if cell is not None:
            return SyncStarPlan(exits=matcher, cell=cell.id, shape=SyncPatterns(cell), **common)
        loops = not node.operand.stateful and not node.operand.has_initialisers
        return StarPlan(exits=matcher, loops=loops, **common)
    if isinstance(node, SplitNode):
        if in_executor:
            return ExecutorSplitPlan(keys=SplitKeys(node), **common)
        return SplitPlan(keys=SplitKeys(node), **common)
    if isinstance(node, FeedbackNode):
        return FeedbackPlan(back=PatternMatcher(node.back, "feedback pattern guard", node.span), **common)
    raise TypeError(f"no plan template for a {node.kind} node")  # pragma: no cover - every kind is above


__all__ = ["Kind", "Exit", "Plan", "PlanNode", "NetPlan", "SerialPlan", "IdentityPlan", "BoxPlan", "InitBoxPlan",
           "FilterPlan", "SyncPlan", "ParallelPlan", "StarPlan", "SyncStarPlan", "SplitPlan", "ExecutorSplitPlan",
           "FeedbackPlan", "lower", "operators", "sync_operand"]
