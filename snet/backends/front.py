"""The FRONT engine: adapter from a property graph to the Cython runtime.

:mod:`snet_front.runtime` knows nothing about the language: it runs a
table of node kinds, exit links and per-node operators.  This module builds
that table from a :class:`~snet.spg.nodes.PropertyGraph` (the static
*property graph* of the paper) and wraps a run in the engine interface of
:mod:`snet.backends`.

The table, per node id:

* ``kind``: what entity the node becomes (or that it is pure wiring);
* ``child0``: the node entered first (a net's body, a serial's first
  stage, a feedback's operand);
* ``exit_mode`` / ``next_stage``: where records leaving the node go: the
  next serial stage, up to the parent (``next_stage`` is then the parent),
  to the innermost enclosing combinator instance, or to the output;
* ``inst_init``: the node contains an initialiser in its own instance (not
  behind a star or split, whose replicas are separate instances);
* ``det``: ``||``, ``**`` or ``!!``;
* ``conc``: how many calls of this box one instance may run at once.

A star whose operand is a synchro-cell (``[| ... |] * P``) becomes one
entity (``SYNCSTAR``), as the C runtime's zipper.

Box concurrency default
=======================

``DEFAULT_BOX_CONCURRENCY`` is ``None``: as many concurrent calls per box
instance as there are workers.  Boxes are stateless by the language's
rules, so this never changes results (the box's reorder buffer keeps its
output stream in input order), and it is what lets two workers overlap the
calls of one slow box that releases the GIL (docs/performance.md, bench 4).
For pure-Python boxes it neither helps nor costs much: the GIL serialises
the calls anyway and the reorder buffer is a dict insert per record.  The
C runtime made the same choice (``-c 2D``, where any value >= 2 meant "no
cap").  ``--box-concurrency 1`` restores one call at a time.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from snet.backends import Execution, RunOptions
from snet.core.semantics import Operators, unfinished_warning
from snet.spg.nodes import (BoxNode, FeedbackNode, FilterNode, IdentityNode, NetNode, Node, ParallelNode,
                            PropertyGraph, SerialNode, SplitNode, StarNode, SyncNode)
from snet.stats import RunStats

(K_NET, K_SERIAL, K_IDENT, K_INITBOX, K_BOX, K_FILTER, K_SYNC, K_PAR, K_STAR, K_SYNCSTAR, K_SPLIT, K_FEEDBACK,
 K_SPARKSPLIT) = range(13)
X_NEXT, X_UP, X_POP, X_SINK = range(4)

DEFAULT_BOX_CONCURRENCY: int | None = None  # None: the number of workers

# Seconds the input may keep a worker waiting in its iterator before a Spark
# batch that is not full runs anyway (when nothing else is in flight): a
# slow source still gets its outputs, a fast one fills whole batches.
SPARK_LINGER = 0.05

Record = dict


def sync_operand(node: StarNode) -> SyncNode | None:
    """The synchro-cell that is a star's whole operand (through named nets), if any."""
    operand = node.operand
    while isinstance(operand, NetNode):
        operand = operand.body
    return operand if isinstance(operand, SyncNode) else None


@dataclass
class Program:
    """The static tables the runtime reads (see the module docstring)."""

    kind: list[int] = field(default_factory=list)
    child0: list[int] = field(default_factory=list)
    exit_mode: list[int] = field(default_factory=list)
    next_stage: list[int] = field(default_factory=list)
    inst_init: list[int] = field(default_factory=list)
    det: list[int] = field(default_factory=list)
    conc: list[int] = field(default_factory=list)
    ops: list[Any] = field(default_factory=list)
    children: list[tuple[int, ...]] = field(default_factory=list)
    names: list[str | None] = field(default_factory=list)
    spans: list[Any] = field(default_factory=list)

    def span_of(self, node_id: int):
        return self.spans[node_id] if 0 <= node_id < len(self.spans) else None


def box_limit(node: BoxNode, options: RunOptions, workers: int) -> int:
    limit = options.box_concurrency_per_box.get(node.name, options.box_concurrency)
    if limit is None:
        limit = DEFAULT_BOX_CONCURRENCY or workers
    return max(1, min(int(limit), workers))


def build_program(graph: PropertyGraph, boxes: dict[str, Callable], options: RunOptions, workers: int,
                  spark_splits: frozenset[int] = frozenset()) -> Program:
    """Encode ``graph`` for the runtime.  Requires ``graph.root.id == 0`` (parents come first).

    ``spark_splits``: the split nodes whose replicas run on Spark; their
    operands get no entities here.
    """
    ops = Operators(graph, boxes)
    n = len(graph.nodes)
    prog = Program(kind=[K_IDENT] * n, child0=[-1] * n, exit_mode=[X_SINK] * n, next_stage=[-1] * n,
                   inst_init=[0] * n, det=[0] * n, conc=[1] * n, ops=[None] * n, children=[()] * n,
                   names=[None] * n, spans=[None] * n)
    assert graph.root.id == 0, "the property graph lists the root first"

    def link(parent: Node, children: tuple[Node, ...], combinator: bool) -> None:
        for i, child in enumerate(children):
            if combinator:
                prog.exit_mode[child.id] = X_POP
            elif isinstance(parent, SerialNode) and i + 1 < len(children):
                prog.exit_mode[child.id] = X_NEXT
                prog.next_stage[child.id] = children[i + 1].id
            else:
                prog.exit_mode[child.id] = X_UP
                prog.next_stage[child.id] = parent.id

    for node in graph.nodes:
        i = node.id
        prog.spans[i] = node.span
        prog.det[i] = int(node.deterministic)
        op = ops[i]
        if isinstance(node, NetNode):
            prog.kind[i] = K_NET
            prog.child0[i] = node.body.id
            prog.children[i] = (node.body.id,)
            link(node, (node.body,), False)
        elif isinstance(node, SerialNode):
            prog.kind[i] = K_SERIAL
            prog.child0[i] = node.stages[0].id
            prog.children[i] = tuple(s.id for s in node.stages)
            link(node, node.stages, False)
        elif isinstance(node, IdentityNode):
            prog.kind[i] = K_IDENT
        elif isinstance(node, BoxNode):
            prog.kind[i] = K_INITBOX if node.initialiser else K_BOX
            prog.names[i] = node.name
            prog.conc[i] = box_limit(node, options, workers)
            prog.ops[i] = op
        elif isinstance(node, FilterNode):
            prog.kind[i] = K_FILTER
            prog.ops[i] = op
        elif isinstance(node, SyncNode):
            prog.kind[i] = K_SYNC
            prog.ops[i] = op
        elif isinstance(node, ParallelNode):
            prog.kind[i] = K_PAR
            prog.children[i] = tuple(b.id for b in node.branches)
            prog.ops[i] = op
            link(node, node.branches, True)
        elif isinstance(node, StarNode):
            cell = sync_operand(node)
            prog.children[i] = (node.operand.id,)
            link(node, (node.operand,), True)
            if cell is not None:
                prog.kind[i] = K_SYNCSTAR
                prog.ops[i] = (op, ops[cell.id], cell.id)
            else:
                prog.kind[i] = K_STAR
                prog.ops[i] = op
        elif isinstance(node, SplitNode):
            prog.kind[i] = K_SPARKSPLIT if i in spark_splits else K_SPLIT
            prog.children[i] = (node.operand.id,)
            prog.ops[i] = op
            link(node, (node.operand,), True)
        elif isinstance(node, FeedbackNode):
            prog.kind[i] = K_FEEDBACK
            prog.child0[i] = node.operand.id
            prog.children[i] = (node.operand.id,)
            prog.ops[i] = op
            link(node, (node.operand,), True)
        else:  # pragma: no cover - the graph has no other kinds
            raise TypeError(f"the FRONT engine cannot run a {node.kind} node")
    prog.exit_mode[0] = X_SINK

    # Initialisers of a node's own instance (star and split operands are other instances).
    for node in reversed(graph.nodes):  # children after parents in `nodes`: go bottom-up
        i = node.id
        if isinstance(node, BoxNode):
            prog.inst_init[i] = int(node.initialiser)
        elif isinstance(node, (NetNode, SerialNode, ParallelNode, FeedbackNode)):
            prog.inst_init[i] = int(any(prog.inst_init[c.id] for c in node.children()))
    return prog


class FrontExecution(Execution):
    """A running FRONT network: iterate it for the outputs."""

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable], records: Iterable[Record],
                 options: RunOptions):
        super().__init__()
        from snet_front.runtime import Runtime

        self.graph = graph
        self.workers = options.workers or os.cpu_count() or 1
        self.spark = None  # snet.spark.splits.SparkSplits when splits run on Spark
        if options.spark_master:
            from snet.spark.splits import SparkSplits
            self.spark = SparkSplits(graph, boxes, options)
        selected = self.spark.selected if self.spark is not None else frozenset()
        self.program = build_program(graph, boxes, options, self.workers, selected)
        throttle = None
        if options.throttle is not None:
            throttle = (float(options.throttle[0]), float(options.throttle[1]))
        self.runtime = Runtime(self.program, records, self.workers, throttle, bool(options.steal),
                               int(options.seed or 0), spark=self.spark if selected else None,
                               spark_linger=SPARK_LINGER)
        self._closed = False
        self._ended = False
        self.runtime.start()

    def __next__(self) -> Record:
        if self._ended:
            raise StopIteration
        try:
            return self.runtime.next_output()
        except StopIteration:
            self._finish()
            raise
        except BaseException:
            self.close()
            raise

    def _finish(self) -> None:
        if self._ended:
            return
        self._ended = True
        self.close()
        for node_id, filled, total in self.runtime.termination_warnings():
            self.warnings.append(unfinished_warning(self.program.span_of(node_id), filled, total))
        if self.spark is not None:
            self.warnings.extend(self.spark.warnings())

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.spark is not None and not self._ended:
                # Stopped early (an error, Ctrl-C, the caller): a worker may be waiting
                # for a Spark job; cancel it so that the worker can be joined now.
                self.runtime.halt()  # first, so that no new batch starts
                self.spark.cancel()
            self.runtime.close()
            if self.spark is not None:
                self.spark.close()

    def __del__(self) -> None:
        # An execution dropped unfinished must not leave workers reading its input.
        try:
            self.close()
        except Exception:
            pass

    def stats(self) -> RunStats:
        return RunStats.from_front(self.runtime.statistics(), self.spark.stats() if self.spark is not None else None)


def start(graph: PropertyGraph, boxes: dict[str, Callable], records: Iterable[Record],
          options: RunOptions | None = None) -> FrontExecution:
    """Run ``graph`` on the FRONT engine (see :mod:`snet.backends` for the contract).

    With ``options.spark_master`` the splits that :mod:`snet.spark.splits`
    selects run on Spark and the rest of the network here, as without it.
    """
    return FrontExecution(graph, boxes, records, options or RunOptions())


__all__ = ["FrontExecution", "Program", "build_program", "start", "DEFAULT_BOX_CONCURRENCY"]
