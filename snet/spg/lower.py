"""Lowering: from the property graph to the plan an engine runs.

The property graph (:mod:`snet.spg.nodes`) says what a program *is*; the
plan (:mod:`snet.plan`) says, per node, what an engine does to a record
and where records go next.  :func:`lower` computes the second from the
first once per run, with the run's bound box functions, its error policy
and its split executor.  This is the one place that maps property-graph
classes to run-time operators (:mod:`snet.core`): ``snet.plan`` only
declares the templates, so an engine that reads a plan imports nothing of
the compiler.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping, TypedDict

from snet.core.boxes import BoxCaller
from snet.core.compiled import PatternMatcher, Router, SplitKeys, compile_filter
from snet.core.semantics import SyncPatterns
from snet.errorpolicy import ErrorPolicy, SkippingBox, SkippingFilter
from snet.plan import (BoxCall, BoxPlan, ExecutorSplitPlan, Exit, FeedbackPlan, FilterPlan, IdentityPlan,
                       InitBoxPlan, NetPlan, ParallelPlan, Plan, PlanNode, SerialPlan, SplitPlan, StarPlan,
                       SyncPlan, SyncStarPlan)
from snet.source import Span
from snet.spg.fusion import fused_chains
from snet.spg.nodes import (BoxNode, FeedbackNode, FilterNode, IdentityNode, NetNode, Node, ParallelNode,
                            PropertyGraph, SerialNode, SplitNode, StarNode, SyncNode)
from snet.splitexec import SplitExecutor


class _Common(TypedDict):
    """The fields every template has (:class:`snet.plan.PlanNode`)."""

    id: int
    span: Span | None
    children: tuple[int, ...]
    exit: Exit
    next: int
    owns_init: bool
    deterministic: bool
    holds_executor_split: bool


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


def lower(graph: PropertyGraph, boxes: Mapping[str, Callable[..., Any]], *, box_concurrency: int | None = None,
          box_concurrency_per_box: Mapping[str, int] | None = None, executor: SplitExecutor | None = None,
          on_error: ErrorPolicy | None = None, defer_async: bool = False) -> Plan:
    """Lower ``graph`` with its bound ``boxes`` into a :class:`~snet.plan.Plan`.

    ``on_error``: the policy that skips records failing in a box or a
    filter (:mod:`snet.errorpolicy`); None stops the run at the first error.
    ``defer_async``: the engine overlaps the calls of ``async def`` boxes
    and of boxes in box processes, which then go in batches (their plans
    are ``deferred``; :attr:`snet.execution.Engine.overlaps_async_boxes`);
    else each call is awaited in place.

    ``executor``: a split executor; the split nodes in its ``selected`` set
    become :class:`~snet.plan.ExecutorSplitPlan` templates and ``plan.executor``.
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
        common = _Common(id=node.id, span=node.span, children=tuple(c.id for c in node.children()),
                         exit=exits[node.id][0], next=exits[node.id][1], owns_init=owns_init[node.id],
                         deterministic=node.deterministic, holds_executor_split=holds[node.id])
        concurrency = per_box.get(node.name, box_concurrency) if isinstance(node, BoxNode) else None
        templates.append(_template(node, common, boxes, concurrency, node.id in selected, on_error, defer_async))
    nodes = tuple(templates)
    return Plan(nodes, graph.net_name, graph.signature, executor if selected else None, fused_chains(nodes))


def _link(parent: Node, exits: list[tuple[Exit, int]]) -> None:
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


def _template(node: Node, common: _Common, boxes: Mapping[str, Callable[..., Any]], concurrency: int | None,
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
        call: BoxCall = caller if on_error is None else SkippingBox(caller, on_error)
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


__all__ = ["lower", "sync_operand"]
