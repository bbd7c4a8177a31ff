"""Fusion: the chains of static stages an engine may run as one entity.

A record that leaves a box or a filter inside a serial composition goes to
one place, known before the run: the next stage (through named nets,
nested serials and ``[]``, which only pass it on).  Where that place is
again a box or a filter, nothing can happen between the two: no other
stream merges in (a stage has one input stream, from the stage before
it), no state is kept (boxes are stateless, filters are functions of the
record), and the number of records one record becomes is decided by the
stages themselves.  A maximal run of such stages, each the static
successor of the one before, is a *chain*; running a record through the
whole chain at once, each output of a stage through the rest before the
next (depth first), gives the chain's output stream exactly as the stages
one after another would (docs/runtime.md, "Fusion", has the argument).

What breaks a chain: anything with state or with more than one input
stream (a synchro-cell, a parallel's collector, a star, a split, a
feedback), an initialiser (it fires when its instance is made), a box
whose calls finish outside the workers (``async def``, box processes),
and the end of a combinator's operand (records leaving it go to the
combinator instance, which only the run knows).

One combinator is passed through: a *transparent split*, ``X ! <t>`` or
``X !! <t>`` (a plain tag, no range) whose operand is a serial run of
fusible stages (boxes, filters, named nets, ``[]``, transparent splits).
Its replicas keep no state and each keeps its records' order, so one
replica is any other, and every record goes through the same stages in
input order: the split decides nothing but whether the record has the
tag.  In a chain it is a stage of its own, that check; its operand's
stages follow it, and the stage after the split follows them.

The chains are recorded in the plan (:attr:`snet.plan.Plan.fused`);
an engine may run them fused (FRONT does, unless ``--no-fuse``) or not
(the reference engine, the definition, never does).
"""

from __future__ import annotations

from typing import Sequence

from snet.plan import BoxPlan, Exit, FilterPlan, IdentityPlan, NetPlan, PlanNode, SerialPlan, SplitPlan


def fusible(node: PlanNode, nodes: Sequence[PlanNode] = ()) -> bool:
    """A stage a chain may hold: a filter, a box whose calls run in the workers, or (given the plan's
    ``nodes``) a transparent split."""
    if isinstance(node, FilterPlan):
        return not node.owns_init
    if type(node) is SplitPlan:
        return bool(nodes) and transparent(nodes, node.id)
    return isinstance(node, BoxPlan) and not node.deferred and not node.owns_init


def transparent(nodes: Sequence[PlanNode], n: int) -> bool:
    """Whether split ``n`` only checks its tag: a plain ``!``/``!!`` split (not run by a split executor, no
    range) whose operand is nothing but fusible stages in series (see the module docstring)."""
    node = nodes[n]
    if type(node) is not SplitPlan or node.keys.hi_tag is not None or node.owns_init:
        return False
    stack = list(node.children)
    while stack:
        inner = nodes[stack.pop()]
        if isinstance(inner, (NetPlan, SerialPlan)):
            stack.extend(inner.children)
        elif not isinstance(inner, IdentityPlan) and not fusible(inner, nodes):
            return False
    return True


def parents(nodes: Sequence[PlanNode]) -> list[int]:
    """Each node's parent (-1 for the root)."""
    up = [-1] * len(nodes)
    for node in nodes:
        for child in node.children:
            up[child] = node.id
    return up


def static_successor(nodes: Sequence[PlanNode], n: int, up: Sequence[int] | None = None) -> int | None:
    """The box or filter (or other stage) records leaving node ``n`` always enter next, or None.

    None when they leave for something only the run knows (the end of a
    combinator's operand, the network's output).  Named nets, serial
    compositions and ``[]`` stages are passed through, as the engines pass
    records through them; so is the end of a transparent split's operand
    (records leave the split).  ``up``: :func:`parents`, when the caller has them.
    """
    if type(nodes[n]) is SplitPlan and transparent(nodes, n):
        return _entered(nodes, nodes[n].children[0], up)  # its check passed: into its operand
    return exit_successor(nodes, n, up)


def exit_successor(nodes: Sequence[PlanNode], n: int, up: Sequence[int] | None = None) -> int | None:
    """Where records leaving node ``n`` as a whole (past its operand, if it has one) go, as
    :func:`static_successor`."""
    if up is None:
        up = parents(nodes)
    seen = 0
    while seen <= len(nodes):  # (a bound: a well-formed plan never loops here)
        seen += 1
        node = nodes[n]
        if node.exit == Exit.NEXT:
            return _entered(nodes, node.next, up)
        if node.exit == Exit.UP:
            n = node.next  # out of the parent, as it leaves
            continue
        if node.exit == Exit.POP and up[n] >= 0 and transparent(nodes, up[n]):
            n = up[n]  # out of a transparent split's operand: out of the split
            continue
        return None
    return None


def _entered(nodes: Sequence[PlanNode], n: int, up: Sequence[int] | None) -> int | None:
    """The stage a record entering node ``n`` reaches first (through nets, serials and ``[]``)."""
    while True:  # entering stage n: to the first stage inside it
        entered = nodes[n]
        if isinstance(entered, (NetPlan, SerialPlan)) and entered.children:
            n = entered.children[0]
            continue
        break
    if isinstance(nodes[n], IdentityPlan):
        return exit_successor(nodes, n, up)  # [] passes it on: where records leaving it go
    return n


def chain_exit(nodes: Sequence[PlanNode], chain: Sequence[int]) -> int:
    """The node whose exit a chain's outputs take: its last stage, or the transparent split of the chain
    whose operand that stage ends (the outermost, when several end there)."""
    up = parents(nodes)
    n = last = chain[-1]
    while True:
        node = nodes[n]
        if node.exit == Exit.UP:
            n = node.next
            continue
        if node.exit == Exit.POP and up[n] in chain:
            n = last = up[n]
            continue
        return last


def fused_chains(nodes: Sequence[PlanNode]) -> tuple[tuple[int, ...], ...]:
    """Every maximal chain of two or more fusible stages, each the static successor of the one before.

    Each chain is a tuple of node ids in the order a record passes them; no
    node is in two chains.  ``nodes`` are a plan's templates (``nodes[i].id == i``).
    """
    successor: dict[int, int] = {}
    has_predecessor: set[int] = set()
    up = parents(nodes)
    for node in nodes:
        if not fusible(node, nodes):
            continue
        after = static_successor(nodes, node.id, up)
        if after is not None and fusible(nodes[after], nodes):
            successor[node.id] = after
            has_predecessor.add(after)
    chains = []
    for head in sorted(successor):
        if head in has_predecessor:
            continue
        chain = [head]
        while chain[-1] in successor:
            chain.append(successor[chain[-1]])
        chains.append(tuple(chain))
    return tuple(chains)


__all__ = ["chain_exit", "exit_successor", "fusible", "fused_chains", "parents", "static_successor", "transparent"]
