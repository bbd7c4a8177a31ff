"""Which networks run whole inside Spark tasks, and how their input must be partitioned.

Engines in different tasks share nothing, so state must live in one task: a
stateless network takes any partitioning; state inside a top-level index
split ``X ! <t>`` partitions the input by ``<t>`` (the stages before it must
keep ``<t>``; several such splits, one tag).  Anything else makes
:func:`distribution` raise :class:`~snet.errors.SNetNotDistributable`.
"""

from __future__ import annotations

import attrs

from snet.errors import SNetNotDistributable
from snet.spg.nodes import (BoxNode, FilterNode, NetNode, Node, ParallelNode, PropertyGraph, SerialNode, SplitNode,
                            SyncNode)


@attrs.frozen
class Distribution:
    """How to partition the input: by the tag column ``key``, or any way (``key`` None)."""

    key: str | None = None
    split: Node | None = None  # the split that needs the key

    @property
    def where(self) -> str:
        span = self.split.span if self.split is not None else None
        return span.location if span is not None else "the network"


def _unwrap(node: Node) -> Node:
    while isinstance(node, NetNode):
        node = node.body
    return node


def _state_holder(node: Node) -> Node:
    """The outermost construct below ``node`` that holds the state (a cell, a star of one, an initialiser)."""
    node = _unwrap(node)
    if isinstance(node, (SyncNode, BoxNode)) or not node.children():
        return node
    holders = [c for c in node.children() if c.holds_state]
    if isinstance(node, (SerialNode, ParallelNode)):
        return _state_holder(holders[0]) if holders else node
    return node  # a star, a feedback loop or a split holding state


def _describe(node: Node) -> str:
    if isinstance(node, SyncNode):
        return "a synchro-cell"
    if isinstance(node, BoxNode):
        return f"the initialiser box '{node.name}'"
    return {"star": "a star", "feedback": "a feedback loop"}.get(node.kind, f"a {node.kind}") + \
        (" with a synchro-cell" if node.stateful else " with an initialiser")


def _not_distributable(node: Node) -> SNetNotDistributable:
    holder = _state_holder(node)
    if isinstance(holder, SplitNode) and holder.hi_tag is None:
        return SNetNotDistributable(
            "this index split holds state but sits inside a parallel composition, not in the top-level "
            "serial chain, so the input cannot be partitioned by its tag (see docs/spark.md); run it on the "
            "driver instead", holder.span)
    if isinstance(holder, SplitNode):
        return SNetNotDistributable(
            "a range split with state: it copies a record to several replicas, which no partitioning of the "
            "input can keep in one Spark task (see docs/spark.md); run it on the driver instead", holder.span)
    return SNetNotDistributable(
        f"{_describe(holder)} keeps state outside any index split: the network cannot be partitioned over Spark tasks "
        f"(state must live inside a top-level 'X ! <t>', see docs/spark.md); run it on the driver instead",
        holder.span)


def keeps_tag(node: Node, tag: str) -> bool:
    """True if every record leaves ``node`` with the value of ``tag`` it came in with (stateless ``node``)."""
    node = _unwrap(node)
    if isinstance(node, BoxNode):
        return tag not in node.arguments and not any(tag in v for v in node.variants)
    if isinstance(node, FilterNode):
        for clause in node.clauses:
            for output in clause.outputs:
                labels = {item.label: item for item in output}
                if tag in node.pattern:
                    item = labels.get(tag)
                    if item is None or item.source != tag:
                        return False  # the filter drops or rewrites the tag
                elif tag in labels:
                    return False  # the filter sets it
        return True
    if isinstance(node, SyncNode):
        return False
    return all(keeps_tag(child, tag) for child in node.children())


def distribution(graph: PropertyGraph) -> Distribution:
    """How the input of a Spark-native run must be partitioned; raises SNetNotDistributable (see module)."""
    root = _unwrap(graph.root)
    if not root.holds_state:
        return Distribution()
    stages = [_unwrap(s) for s in root.stages] if isinstance(root, SerialNode) else [root]
    keyed = [i for i, s in enumerate(stages) if s.holds_state]
    key: str | None = None
    split: Node | None = None
    for i in keyed:
        stage = stages[i]
        if not isinstance(stage, SplitNode) or stage.hi_tag is not None:
            raise _not_distributable(stage)
        if key is not None and stage.tag != key:
            raise SNetNotDistributable(
                f"this split keeps state per {stage.tag}, an earlier one per {key}: the input can be partitioned "
                f"by one tag only (see docs/spark.md); run it on the driver instead", stage.span)
        key, split = stage.tag, split or stage
    for i in range(keyed[-1]):
        if i not in keyed and key is not None and not keeps_tag(stages[i], key):
            at = split.span.location if split is not None and split.span is not None else "?"
            raise SNetNotDistributable(
                f"this stage may change {key} before the split at {at}, whose state is partitioned by {key}: "
                f"the input's {key} would not be the tag the split sees (see docs/spark.md); run it on the driver "
                "instead", stages[i].span)
    return Distribution(key, split)
