"""The reference engine: a single-threaded interpreter of the plan.

This is the executable specification of the language's run-time behaviour
and the oracle every faster engine is tested against, so it is written to
be obviously correct rather than fast.  What each construct *means* comes
from :mod:`snet.core.semantics`; this module only decides the order in which
records move.

How it runs
===========

The network is a tree of *instances* built from the plan (:mod:`snet.plan`).  Serial
composition, named nets, placement and ``[]`` are pure wiring: building them
just connects their neighbours, so they cost nothing per record.  The other
constructs are small objects with one method, ``receive(port, record)``.

Records move through one explicit LIFO work stack of ``(instance, port,
record)`` items.  The engine reads the next input record only when the stack
is empty, and an instance pushes its outputs in reverse so that the first
output is processed next.  That is a depth-first traversal of the causal
tree of each input record, which gives, with no bookkeeping at all:

* every output caused by input *i* leaves before any output caused by input
  *i+1* (so ``||``, ``**`` and ``!!`` are exactly ordered, also through
  nested non-deterministic parts, language.md §7);
* FIFO streams and per-path FIFO (the first output of a box is finished
  before its second is looked at);
* no recursion, so a star with thousands of replicas or a long feedback loop
  needs no deep Python stack.

Termination (§9) is simply "input exhausted and stack empty": every record
has then left, been consumed, or been stored in a cell.

Instances are created lazily where the language says so (star and split
replicas, §6.2) and eagerly otherwise.  Initialisers (§6.4) fire when their
instance is created, through the same stack and before the record that
caused the creation, so their outputs precede it.

Executor splits
===============

A split that the plan hands to a split executor (:mod:`snet.splitexec`)
is built as an :class:`_ExecutorSplit`: a record entering it has its tag
checked here, then waits in the executor's batch instead of being processed
depth-first.  A flush runs the batch and pushes the outputs on the stack per
input, in input order, so from there on they move exactly as a local
split's outputs would.  The engine flushes when the batch is full, at the
end of the input (repeatedly, while outputs re-enter executor splits), and
before a deterministic combinator that holds an executor split accepts a
new input (a :class:`_FlushGate` in front of it), which keeps ``||``,
``**`` and ``!!`` exactly ordered: everything else is non-deterministic, so
records that wait in a batch across inputs reorder nothing the language
fixes.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from typing import Any, Iterable, Iterator

from snet.execution import Execution
from snet.errors import SNetRuntimeError
from snet.core.limits import MEMORY_CHECK_S, Limits, diverging, resident_bytes, unfolds_for_ever
from snet.core.semantics import SyncCell, cannot_terminate, log_parked, unfinished_warning
from snet.plan import Kind, Plan, PlanNode
from snet.requests import NO_INPUT_YET, Request, current_request, set_current_request
from snet.stats import BoxStats, ReferenceStats, RunStats, executor_part

Record = dict
Target = tuple  # (instance, port)
BOUND_CHECK_STEPS = 1024  # steps between two looks at the run's bounds (and besides when the stack passes max_held)


class _Instance:
    """Base of the instances that do something per record."""

    __slots__ = ("node", "out")

    def __init__(self, node: PlanNode, out: Target):
        self.node = node
        self.out = out

    def receive(self, engine: "ReferenceEngine", port: int, record: Record) -> None:  # pragma: no cover
        raise NotImplementedError


class _Box(_Instance):
    __slots__ = ("call",)

    def __init__(self, node: PlanNode, out: Target):
        super().__init__(node, out)
        self.call = node.call

    def receive(self, engine, port, record):
        started = time.perf_counter()
        outputs = self.call(record)
        engine.count_box(self.node.name, time.perf_counter() - started)
        engine.emit_all(self.out, outputs)

    def fire(self, engine):
        """Run the initialiser (language.md §6.4)."""
        started = time.perf_counter()
        outputs = self.call.fire()
        engine.count_box(self.node.name, time.perf_counter() - started)
        engine.emit_all(self.out, outputs)


class _InitialiserPassage(_Instance):
    """An initialiser box as a stage: records that reach it pass unchanged."""

    __slots__ = ()

    def receive(self, engine, port, record):
        engine.emit(self.out, record)


class _Filter(_Instance):
    __slots__ = ("apply",)

    def __init__(self, node: PlanNode, out: Target):
        super().__init__(node, out)
        self.apply = node.apply

    def receive(self, engine, port, record):
        engine.emit_all(self.out, self.apply(record))


class _Sync(_Instance):
    __slots__ = ("cell",)

    def __init__(self, node: PlanNode, out: Target, cell: SyncCell):
        super().__init__(node, out)
        self.cell = cell

    def receive(self, engine, port, record):
        result = self.cell.accept(record)
        if result is not None:
            engine.emit(self.out, result)


class _Parallel(_Instance):
    """Routes each record to the best-matching branch; branches write to ``out`` directly."""

    __slots__ = ("router", "branches")

    def __init__(self, node: PlanNode, out: Target):
        super().__init__(node, out)
        self.router = node.router
        self.branches: list[Target] = []

    def receive(self, engine, port, record):
        engine.emit(self.branches[self.router.route(record)], record)


class _Star(_Instance):
    """Port *k* is the exit test before replica *k* (0-based); replica *k* writes to port *k+1*.

    A star whose operand holds no state (``node.loops``) has one operand
    instance, built once, that writes back to port 1: every replica would
    be the same as a fresh one.
    """

    __slots__ = ("matcher", "replicas", "loops", "path")

    def __init__(self, node: PlanNode, out: Target, path: tuple = ()):
        super().__init__(node, out)
        self.matcher = node.exits
        self.replicas: list[Target] = []
        self.loops = node.loops
        self.path = path  # the instance it is in (snet.checkpoint.state)

    def receive(self, engine, port, record):
        if self.matcher.first(record) >= 0:
            engine.emit(self.out, record)
            return
        if self.loops:
            port = 0
        if port == len(self.replicas):
            # Create replica `port`; its initialisers fire before the record enters.
            engine.emit(None, record, lazy=(self, port))
            return
        engine.emit(self.replicas[port], record)

    def create(self, engine, port, record):
        engine.unfolded(self.node, record)
        target = engine.build(self.node.children[0], (self, port + 1), self.path + ((self.node.id, port),))
        self.replicas.append(target)
        engine.emit(target, record)
        engine.fire_pending()


class _SyncStar(_Instance):
    """``[| ... |] * P``: the replicas' cells in one instance, indexed so pairing costs no walk.

    Replica *k*'s operand is one synchro-cell, so a record's way along the
    replicas is fixed by the cells alone: a fired cell passes it unchanged
    and the exit test of an unchanged record gives the same answer before
    every replica.  So the record goes straight to the first unfired cell
    after its position with an empty slot among the patterns it matches
    (``waiting[i]``: the unfired cells whose slot *i* is empty, in replica
    order), or to a new replica's cell at the end.  A merged record goes on
    from the replica after its cell.  When a guard cannot be evaluated on
    the record (it lacks a tag), the plain walk along the unfired cells
    finds the same cell the definition does and fails there.
    """

    __slots__ = ("matcher", "shape", "cell_node", "cells", "waiting", "replicas")

    def __init__(self, node: PlanNode, out: Target, cell_node: PlanNode):
        super().__init__(node, out)
        self.matcher = node.exits
        self.shape = node.shape
        self.cell_node = cell_node
        self.cells: dict[int, tuple[int, SyncCell]] = {}  # replica -> the unfired cells, in replica order
        self.waiting = [deque() for _ in range(node.shape.count)]
        self.replicas = 0

    def receive(self, engine, port, record):
        after = -1  # the replica the record has passed
        everything = range(self.shape.count)
        while True:
            if self.matcher.first(record) >= 0:
                engine.emit(self.out, record)
                return
            try:
                hits = self.shape.matcher.matching(record, everything)
            except SNetRuntimeError:
                hits = None
            if hits is not None and not hits:  # it would pass every later replica unchanged
                engine.park(self.node, record)
                return
            entry = self._walk(record, after) if hits is None else self._indexed(hits, after)
            fresh = entry is None
            if fresh:
                entry = self._new_cell(engine)
                engine.unfolded(self.node, record)
            k, cell = entry
            before = tuple(cell.empty)
            result = cell.accept(record)
            for i in before:
                if cell.fired or i not in cell.empty:
                    self.waiting[i].remove(entry)
            if result is None:  # stored
                return
            if cell.fired:
                if fresh:  # it filled every pattern alone: it comes out unchanged, before every replica
                    raise unfolds_for_ever(self.node.span, record)
                del self.cells[k]
                engine.held -= 1
            elif hits is None and k == self.replicas - 1:  # a fresh cell let it pass: so would every later one
                engine.park(self.node, result)
                return
            after = k
            record = result

    def _indexed(self, hits, after):
        best = None
        for i in hits:
            for entry in self.waiting[i]:
                if entry[0] > after:
                    if best is None or entry[0] < best[0]:
                        best = entry
                    break
        return best

    def _walk(self, record, after):
        """The first unfired cell after ``after`` (its guards then decide, as in the definition)."""
        for k in self.cells:
            if k > after:
                return self.cells[k]
        return None

    def _new_cell(self, engine):
        entry = (self.replicas, self.shape.new_cell())
        self.replicas += 1
        engine.instances += 1
        engine.held += 1
        engine.cells.append((entry[1], self.cell_node))
        self.cells[entry[0]] = entry
        for q in self.waiting:
            q.append(entry)
        return entry


class _Split(_Instance):
    __slots__ = ("keys", "replicas", "path")

    def __init__(self, node: PlanNode, out: Target, path: tuple = ()):
        super().__init__(node, out)
        self.keys = node.keys
        self.replicas: dict[int, Target] = {}
        self.path = path

    def receive(self, engine, port, record):
        values = self.keys.values(record)
        if len(values) == 1:
            self._enter(engine, values[0], record)
        elif len(values) > 1:
            engine.push_range(self, record, iter(values))

    def _enter(self, engine, value, record):
        target = self.replicas.get(value)
        if target is None:
            target = engine.build(self.node.children[0], self.out, self.path + ((self.node.id, value),))
            self.replicas[value] = target
            engine.emit(target, record)
            engine.fire_pending()
        else:
            engine.emit(target, record)


class _ExecutorSplit(_Instance):
    """A split whose replicas run in the split executor: records wait in its batch."""

    __slots__ = ("keys", "instance")

    def __init__(self, node: PlanNode, out: Target, instance: int):
        super().__init__(node, out)
        self.keys = node.keys
        self.instance = instance

    def receive(self, engine, port, record):
        if len(self.keys.values(record)):  # a missing tag fails here, as in place
            executor = engine.executor
            executor.submit(self.instance, record)
            if executor.full():
                engine.flush_executor()


class _FlushGate(_Instance):
    """In front of a deterministic combinator that holds an executor split.

    Before a new input enters, every buffered record is run (and its
    outputs moved on) so that outputs caused by earlier inputs leave the
    combinator first; the input is then looked at again.
    """

    __slots__ = ()

    def receive(self, engine, port, record):
        if engine.executor.pending:
            engine.stack.append((self, port, record))
            engine.flush_executor()
        else:
            engine.emit(self.out, record)


class _Raise(_Instance):
    """A stack item that raises an error once the outputs above it have moved on."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.node = None
        self.out = None
        self.error = error

    def receive(self, engine, port, record):
        raise self.error


class _Feedback(_Instance):
    """Port 0: from outside, into the operand; port 1: from the operand, tested against the back patterns."""

    __slots__ = ("matcher", "operand")

    def __init__(self, node: PlanNode, out: Target):
        super().__init__(node, out)
        self.matcher = node.back
        self.operand: Target | None = None

    def receive(self, engine, port, record):
        if port == 0 or self.matcher.first(record) >= 0:
            engine.emit(self.operand, record)
        else:
            engine.emit(self.out, record)


class _Sink(_Instance):
    __slots__ = ("outbox",)

    def __init__(self):
        self.node = None
        self.out = None
        self.outbox: deque = deque()

    def receive(self, engine, port, record):
        self.outbox.append(record)


_CREATE = object()  # marks a stack item that creates a star replica
_RANGE = object()  # marks a stack item that continues a range split
_FIRE = object()  # marks a stack item that fires an initialiser


class ReferenceEngine:
    """Builds the instance tree and runs records through it depth-first."""

    def __init__(self, plan: Plan, limits: Limits = Limits()):
        self.plan = plan
        # Bounds on a run that keeps growing (snet.core.limits): star replicas and sync-star cells
        # held (`held`) plus records on the stack, and the growth of the resident memory.
        self.limits = limits
        self.held = 0
        self.unfolding: tuple[PlanNode, Record] | None = None  # the last replica opened, and for what
        self.memory_base = resident_bytes() if limits.memory_limit else 0
        self.memory_next = 0.0
        self.executor = plan.executor  # a snet.splitexec.SplitExecutor, or None
        self.executor_splits: list[_ExecutorSplit] = []
        self.stack: list = []
        self.cells: list[tuple[SyncCell, PlanNode]] = []
        self.pending_fire: list[_Box] = []
        self.sink = _Sink()
        self.box_calls: dict[str, list] = {}
        self.records_in = 0
        self.records_out = 0
        self.instances = 0
        self.parked: list[tuple[PlanNode, Record]] = []  # records that stay in a sync-star for ever
        self.stopped = False
        self.stars: list[_Star] = []  # every star instance, so that `dismantle` can cut their cycles
        self.checkpoints = None  # a snet.checkpoint.reference.ReferenceCheckpoints when the run takes them

    # -- building ---------------------------------------------------------

    def build(self, node_id: int, out: Target, path: tuple = ()) -> Target:
        """Instantiate node ``node_id`` writing to ``out``; returns the target that feeds it.

        Initialisers found on the way are queued in ``pending_fire``;
        callers fire them with :meth:`fire_pending` after pushing the record
        that caused the creation (so they run first).  ``path``: the
        replica the instance is part of (:mod:`snet.checkpoint.state`).
        """
        node = self.plan.nodes[node_id]
        kind = node.kind
        if kind == Kind.NET:
            return self.build(node.children[0], out, path)
        if kind == Kind.IDENTITY:
            return out
        if kind == Kind.SERIAL:
            target = out
            for stage in reversed(node.children):
                target = self.build(stage, target, path)
            return target
        self.instances += 1
        if kind == Kind.BOX:
            return (_Box(node, out), 0)
        if kind == Kind.INIT_BOX:
            if self.checkpoints is None or self.checkpoints.fires(path):
                self.pending_fire.append(_Box(node, out))
            return (_InitialiserPassage(node, out), 0)
        if kind == Kind.FILTER:
            return (_Filter(node, out), 0)
        if kind == Kind.SYNC:
            cell = node.shape.new_cell()
            self.cells.append((cell, node))
            if self.checkpoints is not None:
                self.checkpoints.cell(path, node, cell)
            return (_Sync(node, out, cell), 0)
        if kind == Kind.PARALLEL:
            par = _Parallel(node, out)
            par.branches = [self.build(b, out, path) for b in node.children]
            return self._gated(node, (par, 0))
        if kind == Kind.STAR:
            star = _Star(node, out, path)
            self.stars.append(star)
            return self._gated(node, (star, 0))
        if kind == Kind.SYNC_STAR:
            zipper = _SyncStar(node, out, self.plan.nodes[node.cell])
            if self.checkpoints is not None:
                self.checkpoints.sync_star(path, node, zipper)
            return self._gated(node, (zipper, 0))
        if kind == Kind.SPLIT:
            return self._gated(node, (_Split(node, out, path), 0))
        if kind == Kind.EXECUTOR_SPLIT:
            split = _ExecutorSplit(node, out, self.executor.new_instance(node.id))
            self.executor_splits.append(split)
            return (split, 0)
        if kind == Kind.FEEDBACK:
            fb = _Feedback(node, out)
            fb.operand = self.build(node.children[0], (fb, 1), path)
            return (fb, 0)
        raise TypeError(f"the reference engine has no instance for {kind!r}")  # pragma: no cover

    def _gated(self, node: PlanNode, target: Target) -> Target:
        if node.deterministic and node.holds_executor_split:
            return (_FlushGate(node, target), 0)
        return target

    def flush_executor(self) -> None:
        """Run the executor's batch; push the outputs, first input on top, then its error if any."""
        result = self.executor.flush()
        request = current_request()  # a tracked input is flushed on its own (run_request): they are its
        if request is not None:
            for _seq, error in result.failures:
                request.failed(error)
        if result.error is not None:
            # Outputs of the inputs before the failing one move on first, then the error.
            self.stack.append((_Raise(result.error), 0, None))
        splits = self.executor_splits
        for done in reversed(result.outputs):
            self.emit_all(splits[done.instance].out, done.outputs)

    def fire_pending(self) -> None:
        """Queue the initialisers of the instances just built, to run before anything else.

        Downstream instances are built first (serial stages are built from
        the last).  The stack is LIFO, so pushing in reverse build order
        fires them in build order, downstream first: an initialiser's
        outputs then pass through downstream initialiser stages only after
        those have fired, as §6.4 requires.
        """
        for box in reversed(self.pending_fire):
            self.stack.append((_FIRE, box, None))
        self.pending_fire.clear()

    # -- moving records ---------------------------------------------------

    def emit(self, target: Target | None, record: Record, lazy: tuple | None = None) -> None:
        if lazy is not None:
            self.stack.append((_CREATE, lazy, record))
        else:
            self.stack.append((target[0], target[1], record))

    def emit_all(self, target: Target, records: list) -> None:
        inst, port = target
        for record in reversed(records):
            self.stack.append((inst, port, record))

    def push_range(self, split: _Split, record: Record, values: Iterator[int]) -> None:
        self.stack.append((_RANGE, (split, values), record))

    def park(self, node: PlanNode, record: Record) -> None:
        """Keep a record that can never leave ``node`` (see snet.core.semantics)."""
        if not self.parked:
            log_parked(node.span, record)
        self.parked.append((node, record))

    def unfolded(self, node: PlanNode, record: Record) -> None:
        """A star opened a replica for ``record``: it counts as held state."""
        self.held += 1
        self.unfolding = (node, record)

    def check_bounds(self) -> None:
        """Raise the divergence error past ``max_held``, or (looked at every 0.1 s) the memory limit."""
        limits = self.limits
        held = self.held + len(self.stack) + len(self.parked)
        if limits.max_held is not None and held > limits.max_held:
            raise self._diverging(held=held, limit=limits.max_held)
        if limits.memory_limit is not None:
            now = time.monotonic()
            if now >= self.memory_next:
                self.memory_next = now + MEMORY_CHECK_S
                grown = resident_bytes() - self.memory_base
                if grown > limits.memory_limit:
                    raise self._diverging(grown=grown, memory_limit=limits.memory_limit)

    def _diverging(self, **figures) -> SNetRuntimeError:
        node, record = self.unfolding if self.unfolding is not None else (None, None)
        return diverging(node.span if node is not None else None, record, **figures)

    def count_box(self, name: str, seconds: float) -> None:
        entry = self.box_calls.get(name)
        if entry is None:
            self.box_calls[name] = [1, seconds]
        else:
            entry[0] += 1
            entry[1] += seconds

    def drain(self) -> Iterator[Record]:
        """Process the stack to empty, yielding outputs as they reach the sink."""
        stack = self.stack
        outbox = self.sink.outbox
        steps = 0
        max_stack = self.limits.max_held if self.limits.max_held is not None else sys.maxsize
        while stack:
            if self.stopped:  # closed from another thread (a session's abort)
                return
            steps += 1
            if steps % BOUND_CHECK_STEPS == 0 or len(stack) > max_stack:
                self.check_bounds()
            inst, port, record = stack.pop()
            if inst is _FIRE:
                port.fire(self)
            elif inst is _CREATE:
                star, k = port
                star.create(self, k, record)
            elif inst is _RANGE:
                split, values = port
                value = next(values, None)
                if value is not None:
                    stack.append((_RANGE, port, record))  # the next copy, after this one is done
                    split._enter(self, value, record)
            else:
                inst.receive(self, port, record)
            while outbox:
                self.records_out += 1
                yield outbox.popleft()

    def run(self, records: Iterable[Record]) -> Iterator[Record]:
        if self.checkpoints is not None:
            self.checkpoints.restore_parked()
        root = self.build(0, (self.sink, 0))
        self.fire_pending()
        yield from self.drain()
        inst, port = root
        for record in records:
            if self.stopped:
                return
            if record is NO_INPUT_YET:  # a session waiting for its caller: nothing to do until it feeds
                continue
            self.records_in += 1
            if type(record) is Request:
                yield from self.run_request(inst, port, record)
                continue
            if type(record) is not dict:
                record = dict(record)
            self.stack.append((inst, port, record))
            yield from self.drain()
        if self.executor is not None:
            while self.executor.pending:
                self.flush_executor()
                yield from self.drain()
        if self.parked:
            node, record = self.parked[0]
            raise cannot_terminate(node.span, len(self.parked), record)

    def run_request(self, inst: Any, port: int, request: Request) -> Iterator[Record]:
        """One tracked input (snet.requests): everything drained now comes from it.

        Records it leaves in split executor batches are run at once, so that
        the request is done when this returns, unless one of its records
        stays in a synchro-cell star for ever (parked): then it is never done,
        and fails with the run's error at the end.
        """
        set_current_request(request)
        parked = len(self.parked)
        try:
            self.stack.append((inst, port, request.record))
            collected = request.outputs
            while True:
                for out in self.drain():
                    if collected is None:
                        yield out
                    else:
                        collected.append(out)
                if self.executor is None or not self.executor.pending:
                    break
                self.flush_executor()
        finally:
            set_current_request(None)
        if self.stopped:  # aborted midway: not done, it fails with the session's error (never a partial result)
            return
        if len(self.parked) == parked:  # else a record of it stays in the network for ever: never done
            request.finish()

    def dismantle(self) -> None:
        """Cut the reference cycles of a stopped run's star replicas (each replica leads back to its star).

        Reference counting then frees them at once; left to the cycle
        collector, the replicas of a star that unfolded to its bound took
        seconds to free, at the end of a run stopped by Ctrl-C.
        """
        for star in self.stars:
            star.replicas.clear()
        self.stars.clear()

    def termination_warnings(self) -> list[str]:
        warnings = [unfinished_warning(node.span, cell.filled(), cell.shape.count)
                    for cell, node in self.cells if not cell.fired and cell.filled() > 0]
        if self.checkpoints is not None:  # saved cells of a resumed run that no record reached
            warnings.extend(self.checkpoints.unfinished_warnings())
        if self.executor is not None:
            warnings.extend(self.executor.warnings())
        return warnings


class ReferenceExecution(Execution):
    """An execution of the reference engine: a plain generator underneath."""

    def __init__(self, plan: Plan, records: Iterable[Record], limits: Limits = Limits()):
        super().__init__()
        self.engine = ReferenceEngine(plan, limits)
        self._gen = self.engine.run(records)
        self._started = time.perf_counter()
        self._finished: float | None = None

    def __next__(self) -> Record:
        try:
            return next(self._gen)
        except StopIteration:
            if self._finished is None:
                self._finished = time.perf_counter()
                self.warnings.extend(self.engine.termination_warnings())
            self.release()
            raise

    def ready(self) -> bool:
        return bool(self.engine.sink.outbox)

    def close(self) -> None:
        if self._gen.gi_running:  # iterated in another thread: it stops at its next step
            self.engine.stopped = True
            self.release()
            return
        self._gen.close()
        if self.engine.executor is not None:
            self.engine.executor.close()
        self.engine.dismantle()
        self.release()

    def stats(self) -> RunStats:
        e = self.engine
        end = self._finished if self._finished is not None else time.perf_counter()
        executor = e.executor.stats() if e.executor is not None else None
        return RunStats(engine="reference", workers=1, seconds=end - self._started, records_in=e.records_in,
                        records_out=e.records_out, boxes=BoxStats.table(e.box_calls),
                        reference=ReferenceStats(instances=e.instances),
                        held_in_cells=sum(cell.filled() for cell, _ in e.cells), **executor_part(executor))


def start(plan: Plan, records: Iterable[Record], options: object = None) -> ReferenceExecution:
    """Run ``plan`` on the reference engine; of the run's options only the bounds apply (the rest concern threads)."""
    limits = Limits()
    if options is not None:
        limits = Limits(max_held=options.max_held, memory_limit=options.memory_limit)
    execution = ReferenceExecution(plan, records, limits)
    checkpointing = getattr(records, "snet_checkpoint", None)  # an input gate (snet.checkpoint.gate)
    if checkpointing is not None:
        from snet.checkpoint.reference import ReferenceCheckpoints

        ReferenceCheckpoints(execution.engine, checkpointing)
    return execution


__all__ = ["ReferenceEngine", "ReferenceExecution", "start"]
