"""Which splits run on Spark, and the engine-side buffer that batches them.

Selecting splits
================

``--spark-splits`` / ``spark_splits=`` takes:

* ``auto`` (the default): every *outermost* split whose operand contains a
  box.  A split of filters and synchro-cells only costs microseconds per
  record locally, less than shipping the record, so it stays local (and a
  split with boxes nested inside it is then considered in turn);
* ``all``: every outermost split;
* a comma list of split positions ``FILE:LINE:COL`` (or ``LINE:COL``) and
  net names; a net name selects the outermost splits inside that net.

Of the selected splits only the outermost are kept: a split nested inside a
Spark split runs inside the executors' engine, with its replicas part of
the outer replica's state.  Every other split runs locally as before.

Batching and ordering (engine-side)
===================================

:class:`SparkSplits` is what an engine's split instance talks to: the
instance validates the record's tag (so a missing tag fails locally, at the
same point as without Spark), then :meth:`SparkSplits.add` buffers it with
a global sequence number.  The reference engine calls :meth:`SparkSplits.flush`:

1. when the buffer holds ``spark_batch`` records (default 4096);
2. at the end of the input, repeatedly until nothing is buffered (outputs
   may come back into a Spark split through a feedback loop or a star);
3. before a **deterministic combinator** (``||``, ``**``, ``!!``) that
   contains a Spark split accepts a new input record from outside
   (:attr:`SparkSplits.guarded` lists them): all outputs caused by its
   previous input must leave it first (language.md §7).

The FRONT engine needs no rule 3: its deterministic collectors order
records by their groups however late a batch runs.  Instead of rule 2 it
runs a batch that is not full whenever nothing else is in flight and no
input can come soon (docs/spark.md).

Between these points records accumulate across inputs.  That is allowed
because everything else is non-deterministic: a buffered record's outputs
may come after outputs of later inputs that did not pass through the split,
but two records on the same path keep their order (the split emits outputs
per input in sequence order, and the engine processes them in that order).
A Spark split that is itself ``!!`` needs no extra flush for the same
reason: its outputs come back per input, in input order.  Nested
deterministic combinators inside the operand run on the executor, exactly
ordered by the reference engine there.
"""

from __future__ import annotations

import time
from typing import Callable

from snet.backends import RunOptions
from snet.errors import SNetUsageError
from snet.spg.nodes import NetNode, Node, ParallelNode, PropertyGraph, SplitNode, StarNode
from snet.stats import SparkStats, SplitStats

Record = dict


def _outermost(root: Node, wanted: Callable[[Node], bool]) -> list[SplitNode]:
    """The splits under ``root`` that ``wanted`` accepts and that no accepted split encloses."""
    found = []
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, SplitNode) and wanted(node):
            found.append(node)
            continue
        stack.extend(reversed(node.children()))
    return found


def split_positions(graph: PropertyGraph) -> list[str]:
    return sorted({n.span.location for n in graph.nodes if isinstance(n, SplitNode) and n.span is not None})


def select_splits(graph: PropertyGraph, rule: str | None) -> frozenset[int]:
    """The ids of the split nodes that run on Spark under ``rule`` (see the module docstring)."""
    rule = (rule or "auto").strip()
    if rule == "auto":
        return frozenset(n.id for n in _outermost(graph.root, lambda n: n.operand.has_boxes))
    if rule == "all":
        return frozenset(n.id for n in _outermost(graph.root, lambda n: True))
    chosen: set[int] = set()
    for token in (t.strip() for t in rule.split(",")):
        if not token:
            continue
        hits = _match(graph, token)
        if not hits:
            where = ", ".join(split_positions(graph)) or "none"
            raise SNetUsageError(f"--spark-splits: '{token}' names no split or net (splits at: {where})")
        chosen.update(hits)
    return frozenset(n.id for n in _outermost(graph.root, lambda n: n.id in chosen))


def _match(graph: PropertyGraph, token: str) -> set[int]:
    if ":" in token:
        hits = set()
        for node in graph.nodes:
            if isinstance(node, SplitNode) and node.span is not None:
                location = node.span.location
                short = f"{node.span.line}:{node.span.column}"
                if token in (location, short) or location.endswith("/" + token):
                    hits.add(node.id)
        return hits
    hits = set()
    for node in graph.nodes:
        if isinstance(node, NetNode) and node.name == token:
            hits.update(n.id for n in _outermost(node, lambda n: True))
    return hits


def guarded_combinators(graph: PropertyGraph, selected: frozenset[int]) -> frozenset[int]:
    """Deterministic combinators that contain a selected split (they flush before each new input)."""
    contains: dict[int, bool] = {}
    order = list(graph.walk())
    for node in reversed(order):  # children before parents
        contains[node.id] = node.id in selected or any(contains[c.id] for c in node.children())
    guarded = set()
    for node in order:
        if node.id in selected or not node.deterministic:
            continue
        if isinstance(node, (ParallelNode, StarNode, SplitNode)) and contains[node.id]:
            guarded.add(node.id)
    return frozenset(guarded)


class SparkSplits:
    """The Spark splits of one run: selection, buffering, runners, statistics.

    Engine-neutral: an engine creates one per run, asks :meth:`new_instance`
    for each split instance it builds from a node in :attr:`selected`,
    :meth:`add` s records, and calls :meth:`flush` (or :meth:`take` and
    :meth:`run`) by the rules of the module docstring; results name the
    instance so the engine can emit them.
    """

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable], options: RunOptions):
        self.graph = graph
        self.boxes = boxes
        self.master = options.spark_master
        self.conf = dict(options.spark_conf or {})
        from snet.spark.runner import DEFAULT_BATCH
        self.batch_size = options.spark_batch or DEFAULT_BATCH
        self.selected = select_splits(graph, options.spark_splits)
        self.guarded = guarded_combinators(graph, self.selected)
        self.runners: dict[int, object] = {}
        self.instance_node: list[int] = []
        self.buffers: dict[int, list[tuple[int, int, Record]]] = {}  # node id -> [(instance, seq, record)]
        self.pending = 0
        self.seq = 0
        self.flushes = 0
        self.flush_seconds = 0.0
        if self.selected:
            # Start the session now: a missing pyspark or Java is a start-up error,
            # and the 5-8 s start is not charged to the first batch.
            from snet.spark.session import get_session
            get_session(self.master, {k: v for k, v in self.conf.items() if not k.startswith("snet.")})

    def new_instance(self, node_id: int) -> int:
        self.instance_node.append(node_id)
        return len(self.instance_node) - 1

    def add(self, instance: int, record: Record) -> bool:
        """Buffer a record that entered a Spark split instance; True when a batch is full."""
        node_id = self.instance_node[instance]
        self.buffers.setdefault(node_id, []).append((instance, self.seq, record))
        self.seq += 1
        self.pending += 1
        return self.pending >= self.batch_size

    def _runner(self, node_id: int):
        runner = self.runners.get(node_id)
        if runner is None:
            from snet.spark.runner import SparkSplitRunner
            runner = SparkSplitRunner(self.graph, node_id, self.boxes, self.master, self.conf, self.batch_size)
            self.runners[node_id] = runner
        return runner

    def full(self) -> bool:
        return self.pending >= self.batch_size

    def take(self) -> dict | None:
        """Take the buffered records out of the buffer (``None`` when it is empty).

        An engine that adds records from several threads calls this under
        its own lock and :meth:`run` outside it, so records keep arriving
        while a batch runs.
        """
        if not self.pending:
            return None
        buffers, self.buffers, self.pending = self.buffers, {}, 0
        return buffers

    def flush(self) -> list[tuple[int, int, list[Record]]]:
        """Run every buffered record; ``[(instance, seq, outputs)]`` in seq order."""
        return self.run(self.take())

    def run(self, buffers: dict | None) -> list[tuple[int, int, list[Record]]]:
        """Run records taken by :meth:`take`; ``[(instance, seq, outputs)]`` in seq order.

        One batch at a time: a replica's state moves from one batch to the
        next.  A run-time error on an executor is raised with ``partial``
        holding the results of the inputs before it (see the runner).
        """
        if not buffers:
            return []
        started = time.perf_counter()
        results: list[tuple[int, int, list[Record]]] = []
        try:
            for node_id in sorted(buffers):
                try:
                    results.extend(self._runner(node_id).process_many(buffers[node_id]))
                except Exception as e:
                    if hasattr(e, "partial"):  # an executor's error: keep what came before it
                        before = results + list(e.partial)
                        e.partial = sorted((r for r in before if r[1] < e.seq), key=lambda r: r[1])
                    raise
        finally:
            self.flushes += 1
            self.flush_seconds += time.perf_counter() - started
        results.sort(key=lambda r: r[1])
        return results

    def warnings(self) -> list[str]:
        return [w for node_id in sorted(self.runners) for w in self.runners[node_id].warnings()]

    def stats(self) -> SparkStats:
        return SparkStats(
            master=self.master,
            batch_size=self.batch_size,
            selected=tuple(sorted(self.graph.nodes[i].span.location if self.graph.nodes[i].span else str(i)
                                  for i in self.selected)),
            flushes=self.flushes,
            seconds=self.flush_seconds,
            splits={r.where: SplitStats.from_runner(r.stats()) for r in self.runners.values()},
        )

    def cancel(self) -> None:
        """Stop the Spark jobs of this run that are running now (from any thread)."""
        for runner in list(self.runners.values()):
            runner._cancel()

    def close(self) -> None:
        for runner in self.runners.values():
            runner.close()
