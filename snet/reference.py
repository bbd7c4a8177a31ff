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

import inspect
import sys
import time
from bisect import bisect_left
from time import perf_counter
from collections import deque
from typing import TYPE_CHECKING, Any, Generator, Iterable, Iterator

from snet.execution import Engine, Execution, Input
from snet.errors import SNetRuntimeError
from snet.core.limits import MEMORY_CHECK_S, Limits, diverging, resident_bytes, unfolds_for_ever
from snet.core.cells import SyncCell, SyncStarIndex, patterns_matched
from snet.core.semantics import cannot_terminate, log_parked, unfinished_warning
from snet.plan import (BoxPlan, ExecutorSplitPlan, FeedbackPlan, FilterPlan, IdentityPlan, InitBoxPlan, NetPlan,
                       ParallelPlan, Plan, PlanNode, SerialPlan, SplitPlan, StarPlan, SyncPlan, SyncStarPlan)
from snet.requests import NO_INPUT_YET, Request, current_request, set_current_request
from snet.stats import LATENCY_BOUNDS, LATENCY_BUCKETS, BoxStats, ReferenceStats, RunStats, executor_part

if TYPE_CHECKING:
    from snet.splitexec import SplitExecutorProtocol
    from snet.core.guard import GuardCounters
    from snet.errorpolicy import ErrorPolicy
    from snet.options import RunOptions

Record = dict[str, Any]
Target = tuple["_Receiver", int]  # (instance, port)
_FIRST_BOUND = LATENCY_BOUNDS[0]
BOUND_CHECK_STEPS = 1024  # steps between two looks at the run's bounds (and besides when the stack passes max_held)


class _Receiver:
    """What a stack item's first element is: something that takes a record on a port."""

    __slots__ = ()

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:  # pragma: no cover
        raise NotImplementedError


class _Instance(_Receiver):
    """Base of the instances that do something per record: built from ``node``, writing to ``out``."""

    __slots__ = ("node", "out")

    def __init__(self, node: PlanNode, out: Target):
        self.node = node
        self.out = out


class _Box(_Instance):
    __slots__ = ("call", "name")

    def __init__(self, node: BoxPlan | InitBoxPlan, out: Target):
        super().__init__(node, out)
        self.call = node.call
        self.name = node.name

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        started = perf_counter()
        outputs = self.call(record)
        engine.count_box(self.name, perf_counter() - started)
        engine.emit_all(self.out, outputs)

    def fire(self, engine: ReferenceEngine) -> None:
        """Run the initialiser (language.md §6.4)."""
        started = perf_counter()
        outputs = self.call.fire()
        engine.count_box(self.name, perf_counter() - started)
        engine.emit_all(self.out, outputs)


class _InitialiserPassage(_Instance):
    """An initialiser box as a stage: records that reach it pass unchanged."""

    __slots__ = ()

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        engine.emit(self.out, record)


class _Filter(_Instance):
    __slots__ = ("apply",)

    def __init__(self, node: FilterPlan, out: Target):
        super().__init__(node, out)
        self.apply = node.apply

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        engine.emit_all(self.out, self.apply(record))


class _Sync(_Instance):
    __slots__ = ("cell",)

    def __init__(self, node: SyncPlan, out: Target, cell: SyncCell):
        super().__init__(node, out)
        self.cell = cell

    def receive(self, engine, port, record):
        result = self.cell.accept(record)
        if result is not None:
            engine.emit(self.out, result)


class _Parallel(_Instance):
    """Routes each record to the best-matching branch; branches write to ``out`` directly."""

    __slots__ = ("router", "branches")

    def __init__(self, node: ParallelPlan, out: Target):
        super().__init__(node, out)
        self.router = node.router
        self.branches: list[Target] = []

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        engine.emit(self.branches[self.router.route(record)], record)


class _Star(_Instance):
    """Port *k* is the exit test before replica *k* (0-based); replica *k* writes to port *k+1*.

    A star whose operand holds no state (``node.loops``) has one operand
    instance, built once, that writes back to port 1: every replica would
    be the same as a fresh one.
    """

    __slots__ = ("matcher", "replicas", "loops", "path")

    def __init__(self, node: StarPlan, out: Target, path: tuple = ()):
        super().__init__(node, out)
        self.matcher = node.exits
        self.replicas: list[Target] = []
        self.loops = node.loops
        self.path = path  # the instance it is in (snet.checkpoint.state)

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        if self.matcher.first(record) >= 0:
            engine.emit(self.out, record)
            return
        if self.loops:
            port = 0
        if port == len(self.replicas):
            # Create replica `port`; its initialisers fire before the record enters.
            engine.emit_to_new_replica(self, port, record)
            return
        engine.emit(self.replicas[port], record)

    def create(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        engine.unfolded(self.node, record)
        target = engine.build(self.node.children[0], (self, port + 1), self.path + ((self.node.id, port),))
        self.replicas.append(target)
        engine.emit(target, record)
        engine.fire_pending()


class _SyncStar(_Instance):
    """``[| ... |] * P``: the replicas' cells in one instance, kept in a :class:`~snet.core.cells.SyncStarIndex`.

    The index says which cell a record goes to (no walk along the
    replicas); a merged record goes on from the replica after its cell.
    This loop only adds what the engine does around an offer: replicas
    counted as held state, records that can never leave parked.
    """

    __slots__ = ("matcher", "shape", "cell_node", "index")

    def __init__(self, node: SyncStarPlan, out: Target, cell_node: PlanNode):
        super().__init__(node, out)
        self.matcher = node.exits
        self.shape = node.shape
        self.cell_node = cell_node
        self.index = SyncStarIndex(node.shape)

    def receive(self, engine, port, record):
        after = -1  # the replica the record has passed
        slots = self.shape.matcher
        while True:
            if self.matcher.first(record) >= 0:
                engine.emit(self.out, record)
                return
            hits = patterns_matched(record, slots.labels, slots.raw_all)
            if hits is not None and not hits:  # it would pass every later replica unchanged
                engine.park(self.node, record)
                return
            cell = self.index.find(hits, after)
            fresh = cell is None
            if fresh:
                cell = self._open(engine)
                engine.unfolded(self.node, record)
            result = self.index.offer(cell, record, hits)
            if result is None:  # stored
                return
            if cell.fired:
                if fresh:  # it filled every pattern alone: it comes out unchanged, before every replica
                    raise unfolds_for_ever(self.node.span, record)
                engine.held -= 1
            elif fresh:  # a fresh cell let it pass unchanged: so will every later one
                engine.park(self.node, result)
                return
            after = cell.replica
            record = result

    def _open(self, engine):
        cell = self.index.open()
        engine.instances += 1
        engine.held += 1
        engine.cells.append((cell, self.cell_node))
        return cell


class _Split(_Instance):
    __slots__ = ("keys", "replicas", "path")

    def __init__(self, node: SplitPlan, out: Target, path: tuple = ()):
        super().__init__(node, out)
        self.keys = node.keys
        self.replicas: dict[int, Target] = {}
        self.path = path

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        values = self.keys.values(record)
        if len(values) == 1:
            self._enter(engine, values[0], record)
        elif len(values) > 1:
            engine.push_range(self, record, iter(values))

    def _enter(self, engine: ReferenceEngine, value: int, record: Record) -> None:
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

    __slots__ = ("keys", "instance", "executor")

    def __init__(self, node: ExecutorSplitPlan, out: Target, executor: SplitExecutorProtocol, path: tuple):
        super().__init__(node, out)
        self.keys = node.keys
        self.executor = executor
        self.instance = executor.new_instance(node.id, path)

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        if len(self.keys.values(record)):  # a missing tag fails here, as in place
            executor = self.executor
            executor.submit(self.instance, record)
            if executor.full():
                engine.flush_executor()


class _FlushGate(_Instance):
    """In front of a deterministic combinator that holds an executor split.

    Before a new input enters, every buffered record is run (and its
    outputs moved on) so that outputs caused by earlier inputs leave the
    combinator first; the input is then looked at again.
    """

    __slots__ = ("executor",)

    def __init__(self, node: PlanNode, out: Target, executor: SplitExecutorProtocol):
        super().__init__(node, out)
        self.executor = executor

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        if self.executor.pending:
            engine.stack.append((self, port, record))
            engine.flush_executor()
        else:
            engine.emit(self.out, record)


class _Raise(_Receiver):
    """A stack item that raises an error once the outputs above it have moved on."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        raise self.error


class _Feedback(_Instance):
    """Port 0: from outside, into the operand; port 1: from the operand, tested against the back patterns."""

    __slots__ = ("matcher", "operand")

    def __init__(self, node: FeedbackPlan, out: Target):
        super().__init__(node, out)
        self.matcher = node.back
        self.operand: Target = out  # set by the engine once the operand is built (it writes back here)

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        if port == 0 or self.matcher.first(record) >= 0:
            engine.emit(self.operand, record)
        else:
            engine.emit(self.out, record)


class _Sink(_Receiver):
    __slots__ = ("outbox",)

    def __init__(self) -> None:
        self.outbox: deque[Record] = deque()

    def receive(self, engine: ReferenceEngine, port: int, record: Record) -> None:
        self.outbox.append(record)


_CREATE = object()  # marks a stack item that creates a star replica
_RANGE = object()  # marks a stack item that continues a range split
_FIRE = object()  # marks a stack item that fires an initialiser


class ReferenceEngine:
    """Builds the instance tree and runs records through it depth-first."""

    def __init__(self, plan: Plan, limits: Limits = Limits(), *, resident_replicas: bool = False):
        self.plan = plan
        # replica()/feed() of replicas that stay in this engine (a split process's), not ones whose state
        # travels with each batch (a remote executor's): their cells stay in `cells`, for termination_warnings()
        self.resident_replicas = resident_replicas
        # Bounds on a run that keeps growing (snet.core.limits): star replicas and sync-star cells
        # held (`held`) plus records on the stack, and the growth of the resident memory.
        self.limits = limits
        self.held = 0
        self.unfolding: tuple[PlanNode, Record] | None = None  # the last replica opened, and for what
        self.memory_base = resident_bytes() if limits.memory_limit else 0
        self.memory_next = 0.0
        self.executor = plan.executor
        self.executor_splits: list[_ExecutorSplit] = []
        # (receiver, port, record), or (marker, what, record) for the markers below (_FIRE, _CREATE, _RANGE)
        self.stack: list[tuple[Any, Any, Any]] = []
        self.cells: list[tuple[SyncCell, PlanNode]] = []
        self.pending_fire: list[_Box] = []
        self.sink = _Sink()
        self.box_calls: dict[str, list[Any]] = {}  # name -> [calls, seconds, histogram counts]
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
        # Dispatch on the template's class (subclasses before their bases), so that each case reads
        # only the fields its kind has.  ``path`` names the replica being built (star replica numbers,
        # split tag values): a checkpoint finds the cells it saved by it.
        match node:
            case NetPlan():
                return self.build(node.children[0], out, path)
            case IdentityPlan():
                return out
            case SerialPlan():
                target = out
                for stage in reversed(node.children):
                    target = self.build(stage, target, path)
                return target
        self.instances += 1
        match node:
            case BoxPlan():
                return (_Box(node, out), 0)
            case InitBoxPlan():
                if self.checkpoints is None or self.checkpoints.fires(path):
                    self.pending_fire.append(_Box(node, out))
                return (_InitialiserPassage(node, out), 0)
            case FilterPlan():
                return (_Filter(node, out), 0)
            case SyncPlan():
                cell = node.shape.new_cell()
                self.cells.append((cell, node))
                if self.checkpoints is not None:
                    self.checkpoints.cell(path, node, cell)
                return (_Sync(node, out, cell), 0)
            case ParallelPlan():
                par = _Parallel(node, out)
                par.branches = [self.build(b, out, path) for b in node.children]
                return self._gated(node, (par, 0))
            case SyncStarPlan():
                zipper = _SyncStar(node, out, self.plan.nodes[node.cell])
                if self.checkpoints is not None:
                    self.checkpoints.sync_star(path, node, zipper)
                return self._gated(node, (zipper, 0))
            case StarPlan():
                star = _Star(node, out, path)
                self.stars.append(star)
                return self._gated(node, (star, 0))
            case ExecutorSplitPlan():
                split = _ExecutorSplit(node, out, self._executor(), path)
                self.executor_splits.append(split)
                return (split, 0)
            case SplitPlan():
                return self._gated(node, (_Split(node, out, path), 0))
            case FeedbackPlan():
                fb = _Feedback(node, out)
                fb.operand = self.build(node.children[0], (fb, 1), path)
                return (fb, 0)
        raise TypeError(f"the reference engine has no instance for {node!r}")  # pragma: no cover

    def _executor(self) -> SplitExecutorProtocol:
        """The plan's split executor (a plan with executor splits has one)."""
        assert self.executor is not None, "a plan with executor splits carries its executor"
        return self.executor

    def _gated(self, node: PlanNode, target: Target) -> Target:
        if node.deterministic and node.holds_executor_split:
            return (_FlushGate(node, target, self._executor()), 0)
        return target

    def flush_executor(self) -> None:
        """Run the executor's batch; push the outputs, first input on top, then its error if any."""
        result = self._executor().flush()
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

    def emit(self, target: Target, record: Record) -> None:
        self.stack.append((target[0], target[1], record))

    def emit_to_new_replica(self, star: _Star, port: int, record: Record) -> None:
        """Push ``record`` for replica ``port`` of ``star``, which is created when the item is popped."""
        self.stack.append((_CREATE, (star, port), record))

    def emit_all(self, target: Target, records: list[Record]) -> None:
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

    def _diverging(self, **figures: int) -> SNetRuntimeError:
        node, record = self.unfolding if self.unfolding is not None else (None, None)
        return diverging(node.span if node is not None else None, record, **figures)

    def count_box(self, name: str, seconds: float) -> None:
        """One call of box ``name``: its calls, seconds and histogram (snet.stats.LATENCY_BOUNDS)."""
        entry = self.box_calls.get(name)
        if entry is None:
            entry = self.box_calls[name] = [0, 0.0, [0] * LATENCY_BUCKETS]
        entry[0] += 1
        entry[1] += seconds
        # (snet.stats.latency_bucket without its call, and the first bucket's quick calls without bisecting)
        entry[2][0 if seconds <= _FIRST_BOUND else bisect_left(LATENCY_BOUNDS, seconds)] += 1

    def drain(self) -> Iterator[Record]:
        """Process the stack to empty, yielding outputs as they reach the sink."""
        stack = self.stack
        outbox = self.sink.outbox
        until_check = BOUND_CHECK_STEPS
        max_stack = self.limits.max_held if self.limits.max_held is not None else sys.maxsize
        while stack:
            if self.stopped:  # closed from another thread (a session's abort)
                return
            until_check -= 1
            if not until_check or len(stack) > max_stack:
                until_check = BOUND_CHECK_STEPS
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

    def run(self, records: Iterable[Input]) -> Generator[Record, None, None]:
        if self.checkpoints is not None:
            self.checkpoints.restore_parked()
        root = self.build(0, (self.sink, 0))
        self.fire_pending()
        yield from self.drain()
        inst, port = root
        for record in records:
            if self.stopped:
                return
            if record is NO_INPUT_YET:
                # Nothing yet: a session's caller is quiet, or a due snapshot waits for the split executor's
                # partial batch (snet.checkpoint.gate).  Run the batch, so that its outputs flow.
                if self.executor is not None and self.executor.pending:
                    self.flush_executor()
                    yield from self.drain()
                continue
            self.records_in += 1
            if isinstance(record, Request):
                yield from self.run_request(inst, port, record)
                continue
            self.stack.append((inst, port, record if type(record) is dict else dict(record)))
            yield from self.drain()
        if self.executor is not None:
            while self.executor.pending:
                self.flush_executor()
                yield from self.drain()
        if self.parked:
            node, record = self.parked[0]
            raise cannot_terminate(node.span, len(self.parked), record)
        stuck = self.executor.stuck() if self.executor is not None else None
        if stuck is not None:
            raise stuck

    def run_request(self, inst: _Receiver, port: int, request: Request) -> Iterator[Record]:
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

    # -- one replica at a time (the tasks of a split executor) ------------

    def replica(self, node_id: int, path: tuple = ()) -> Target:
        """A new instance of node ``node_id`` writing to the engine's output (:attr:`sink`), for :meth:`feed`;
        its initialisers wait for the first feed with ``fire``.  ``path``: the instance's checkpoint path
        (:mod:`snet.checkpoint.state`), when the engine takes part in checkpoints."""
        target = self.build(node_id, (self.sink, 0), path)
        if not self.resident_replicas:
            self.cells.clear()  # a replica's cells travel in its state, not in this engine's warnings
        return target

    def feed(self, target: Target, record: Record, fire: bool = False) -> list[Record]:
        """The outputs of ``record`` fed to ``target`` (a :meth:`replica`), depth first to the end; ``fire``
        runs the new replica's initialisers first, else they are dropped.  After a run-time error the engine
        holds nothing of that record."""
        self.stack.append((target[0], target[1], record))
        if fire:
            self.fire_pending()  # pushed after the record: they run first (§6.4)
        else:
            self.pending_fire.clear()
        try:
            return list(self.drain())
        except SNetRuntimeError:
            self.stack.clear()
            self.pending_fire.clear()
            self.sink.outbox.clear()
            raise
        finally:
            if not self.resident_replicas:
                self.cells.clear()  # star replicas built on the way: their cells travel in the replica's state

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

    def __init__(self, plan: Plan, records: Iterable[Input], limits: Limits = Limits(), *,
                 error_policy: ErrorPolicy | None = None, guards: GuardCounters | None = None):
        super().__init__(error_policy=error_policy, guards=guards)
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
        if inspect.getgeneratorstate(self._gen) == inspect.GEN_RUNNING:  # iterated in another thread: stops next step
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
                        held_in_cells=sum(cell.filled() for cell, _ in e.cells), resident_bytes=resident_bytes(),
                        **executor_part(executor))


def start(plan: Plan, records: Iterable[Input], options: RunOptions | None = None, *,
          error_policy: ErrorPolicy | None = None, guards: GuardCounters | None = None) -> ReferenceExecution:
    """Run ``plan`` on the reference engine; of the run's options only the bounds apply (the rest concern threads)."""
    limits = Limits()
    if options is not None:
        limits = Limits(max_held=options.max_held, memory_limit=options.memory_limit)
    execution = ReferenceExecution(plan, records, limits, error_policy=error_policy, guards=guards)
    checkpointing = getattr(records, "snet_checkpoint", None)  # an input gate (snet.checkpoint.gate)
    if checkpointing is not None:
        from snet.checkpoint.reference import ReferenceCheckpoints

        checkpointing.bind(ReferenceCheckpoints(execution.engine, checkpointing.restore))
    return execution


#: the reference engine, as :mod:`snet.backends` finds it (``snet.options.ENGINES``)
ENGINE = Engine(name="reference", start=start)

__all__ = ["ENGINE", "ReferenceEngine", "ReferenceExecution", "start"]
