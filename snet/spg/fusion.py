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

The chains are recorded in the plan (:attr:`snet.plan.Plan.fused`);
an engine may run them fused (FRONT does, unless ``--no-fuse``) or not
(the reference engine, the definition, never does).
"""

from __future__ import annotations

from typing import Sequence

from snet.plan import BoxPlan, Exit, FilterPlan, IdentityPlan, NetPlan, PlanNode, SerialPlan


def fusible(node: PlanNode) -> bool:
    """A stage a chain may hold: a filter, or a box whose calls run in the workers."""
    if isinstance(node, FilterPlan):
        return not node.owns_init
    return isinstance(node, BoxPlan) and not node.deferred and not node.owns_init


def static_successor(nodes: Sequence[PlanNode], n: int) -> int | None:
    """The box or filter (or other stage) records leaving node ``n`` always enter next, or None.

    None when they leave for something only the run knows (the end of a
    combinator's operand, the network's output).  Named nets, serial
    compositions and ``[]`` stages are passed through, as the engines pass
    records through them.
    """
    seen = 0
    while seen <= len(nodes):  # (a bound: a well-formed plan never loops here)
        seen += 1
        node = nodes[n]
        if node.exit == Exit.NEXT:
            n = node.next
            while True:  # entering stage n: to the first stage inside it
                entered = nodes[n]
                if isinstance(entered, (NetPlan, SerialPlan)) and entered.children:
                    n = entered.children[0]
                    continue
                break
            if isinstance(nodes[n], IdentityPlan):
                continue  # [] passes it on: where records leaving it go
            return n
        if node.exit == Exit.UP:
            n = node.next  # out of the parent, as it leaves
            continue
        return None
    return None


def fused_chains(nodes: Sequence[PlanNode]) -> tuple[tuple[int, ...], ...]:
    """Every maximal chain of two or more fusible stages, each the static successor of the one before.

    Each chain is a tuple of node ids in the order a record passes them; no
    node is in two chains.  ``nodes`` are a plan's templates (``nodes[i].id == i``).
    """
    successor: dict[int, int] = {}
    has_predecessor: set[int] = set()
    for node in nodes:
        if not fusible(node):
            continue
        after = static_successor(nodes, node.id)
        if after is not None and fusible(nodes[after]):
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


__all__ = ["fusible", "fused_chains", "static_successor"]
