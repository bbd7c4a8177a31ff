"""Replicas of a split's operand on an executor, and their state as bytes.

This module runs on Spark executors (it imports nothing from pyspark at
module level, so the tests also run it in-process).  A :class:`ReplicaHost`
holds, per run, a :class:`~snet.reference.ReferenceEngine` for the whole
program, lowered to a plan on the executor: its operators (compiled filters, bound boxes, routers) are static and
built once per Python worker; replicas of the split's operand are instance
trees built by that engine, exactly as the reference engine builds them
locally, so the executor runs the same machinery as a local run.

State across batches
====================

A replica that holds state (``node.stateful``: a synchro-cell somewhere in
the operand, also inside stars, feedback loops or nested splits) is carried
between batches as bytes.  :func:`dump_replica` pickles the replica's
instance tree with a ``persistent_id`` hook that replaces every *static*
object by a small id: plan nodes (``("n", id)``), operators
(``("o", node_id, field)``) and the engine's sink (``("s",)``).  What travels is
therefore only the dynamic part: synchro-cell slots, the instance trees of
star replicas and nested split replicas, and the wiring between them.
:func:`load_replica` re-attaches the static objects of the executor it runs
on.  The driver keeps the latest bytes per (split instance, tag value) and
sends them with the next records of that value; a task never keeps a
replica between tasks.  So a retried task starts again from the same input
state and its outputs replace the failed attempt's: nothing is duplicated or
lost, whatever the batch boundaries.

Operands without synchro-cells and without initialisers ship no state: one
instance tree serves every record, since boxes are stateless and filters
and routing are pure (:func:`keeps_state`).  An operand with initialisers
keeps state even without cells: which of its nested replicas (star
replicas, nested split replicas) exist decides where initialisers still
fire, so each replica needs its own tree.

Wire format
===========

A task receives :class:`TaskInput` (pickled) and returns :class:`TaskOutput`
per group.  A *group* is a list of items ``(key, record, fire)`` processed in
order by one replica: ``key`` is an opaque sort key of the driver (the
sequence number and tag value), ``fire`` asks for a new replica's
initialisers before the record.  A run-time error (a box that raised, a
filter reading an absent tag) stops the group; it travels back as data
(:class:`ErrorReport`) so that the driver raises the same
:class:`~snet.errors.SNetRuntimeError` a local run raises, with the box
name, record labels and traceback, rather than Spark's wrapped text.
"""

from __future__ import annotations

import io
import pickle
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from snet.core.semantics import SyncCell, unfinished_warning
from snet.errorpolicy import ErrorPolicy, error_record
from snet.errors import SNetRuntimeError
from snet.plan import PlanNode, operators
from snet.spg.lower import lower
from snet.spg.nodes import Node, PropertyGraph

Record = dict
Item = tuple  # (key, record, fire)

_PROTOCOL = 5


# -- what travels ------------------------------------------------------------

@dataclass(slots=True)
class Group:
    """Records for one replica (or, for a stateless operand, any replica), in order.

    ``state`` is the replica's bytes from the previous batch, None for a
    replica that does not exist yet (stateful operands) or for stateless
    operands.
    """

    instance: int
    value: int | None
    state: bytes | None
    items: list[Item]


@dataclass(slots=True)
class ErrorReport:
    """A run-time error on an executor, rebuilt as the same exception on the driver."""

    key: Any
    kind: str  # the class name, a subclass of SNetRuntimeError in snet.errors
    message: str
    span: Any
    detail: str
    crash: bool = False  # a Python worker died on the record (snet.spark.crash), not an exception

    @classmethod
    def of(cls, key: Any, error: SNetRuntimeError) -> "ErrorReport":
        return cls(key, type(error).__name__, error.message, error.span, error.detail)

    def rebuild(self) -> SNetRuntimeError:
        import snet.errors as errors
        kind = getattr(errors, self.kind, None)
        if not (isinstance(kind, type) and issubclass(kind, SNetRuntimeError)):
            kind = SNetRuntimeError
        return kind(self.message, self.span, self.detail)


@dataclass(slots=True)
class GroupResult:
    instance: int
    value: int | None
    outputs: list[tuple[Any, list[Record]]]  # (key, outputs of that item), in item order
    state: bytes | None  # the replica after the group (stateful operands only)
    warnings: list[str]  # unfinished-cell warnings if the run ended now
    error: ErrorReport | None = None
    # (input seq, error record, ErrorReport) of the records skipped (on_error "skip")
    failures: list = field(default_factory=list)


@dataclass(slots=True)
class TaskInput:
    run_id: str
    groups: list[Group]


@dataclass(slots=True)
class TaskOutput:
    results: list[GroupResult]
    box_calls: dict[str, list] = field(default_factory=dict)  # name -> [calls, seconds]
    seconds: float = 0.0


def dumps(obj: Any) -> bytes:
    """Pickle data; values that plain pickle refuses (lambdas in fields) go by cloudpickle."""
    try:
        return pickle.dumps(obj, protocol=_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return _cloudpickle().dumps(obj, protocol=_PROTOCOL)


def loads(data: bytes) -> Any:
    return pickle.loads(data)


def _cloudpickle():
    try:
        from pyspark import cloudpickle  # the copy every Spark worker has
    except ImportError:  # pragma: no cover - tests without pyspark
        import cloudpickle
    return cloudpickle


# -- replica state -----------------------------------------------------------

class _StatePickler(pickle.Pickler):
    """Pickles an instance tree, leaving static objects behind as ids."""

    def __init__(self, file, host: "ReplicaHost"):
        super().__init__(file, protocol=_PROTOCOL)
        self.host = host
        self.cells: list[SyncCell] = []

    def persistent_id(self, obj: Any):
        if isinstance(obj, PlanNode):
            return ("n", obj.id)
        where = self.host.op_ids.get(id(obj))
        if where is not None:
            return ("o",) + where
        if obj is self.host.engine.sink:
            return ("s",)
        if type(obj) is SyncCell:
            self.cells.append(obj)
        return None


class _StateUnpickler(pickle.Unpickler):
    def __init__(self, file, host: "ReplicaHost"):
        super().__init__(file)
        self.host = host

    def persistent_load(self, pid):
        kind = pid[0]
        if kind == "n":
            return self.host.plan.nodes[pid[1]]
        if kind == "o":
            return getattr(self.host.plan.nodes[pid[1]], pid[2])
        if kind == "s":
            return self.host.engine.sink
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")


def dump_replica(host: "ReplicaHost", target: tuple) -> tuple[bytes, list[SyncCell]]:
    """The replica's dynamic state as bytes, and the synchro-cells found in it."""
    buffer = io.BytesIO()
    pickler = _StatePickler(buffer, host)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))  # long serial chains nest deeply
    try:
        try:
            pickler.dump(target)
        except (pickle.PicklingError, TypeError, AttributeError):
            # A stored record holds a value plain pickle refuses: cloudpickle it.
            buffer = io.BytesIO()
            pickler = _cloud_state_pickler(buffer, host)
            pickler.dump(target)
    finally:
        sys.setrecursionlimit(limit)
    return buffer.getvalue(), pickler.cells


def _cloud_state_pickler(buffer, host):
    cloudpickle = _cloudpickle()

    class CloudStatePickler(cloudpickle.CloudPickler):
        def __init__(self, file):
            super().__init__(file, protocol=_PROTOCOL)
            self.cells = []

        persistent_id = _StatePickler.persistent_id

    pickler = CloudStatePickler(buffer)
    pickler.host = host
    return pickler


def load_replica(host: "ReplicaHost", data: bytes) -> tuple:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        return _StateUnpickler(io.BytesIO(data), host).load()
    finally:
        sys.setrecursionlimit(limit)


def pending_warnings(cells: list[SyncCell]) -> list[str]:
    """The termination warnings these cells would give if the run ended now."""
    return [unfinished_warning(c.shape.span, c.filled(), c.shape.count)
            for c in cells if not c.fired and c.filled() > 0]


def keeps_state(operand: Node) -> bool:
    """True if replicas of ``operand`` differ from one another (see the module docstring)."""
    return bool(operand.stateful or operand.has_initialisers)


# -- the host ----------------------------------------------------------------

class _Collecting(ErrorPolicy):
    """The error policy of replicas on an executor: collects each skipped failure for the driver."""

    def __init__(self, sink: list):
        super().__init__(quiet=True)
        self.sink = sink

    def failed(self, error: SNetRuntimeError, record: Record, box: str | None) -> None:
        self.sink.append((error_record(error, record, box), ErrorReport.of(None, error)))



class ReplicaHost:
    """Everything an executor needs to run replicas of one split's operand.

    Built once per run per Python worker (see :func:`host_for`); holds no
    replica between tasks, only the static machinery.
    """

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable], split_node_id: int,
                 skip_errors: bool = False):
        from snet.reference import ReferenceEngine

        # (error record, ErrorReport) of the records skipped (on_error "skip"), handed back with each group
        self.failures: list[tuple] = []
        self.skip_errors = skip_errors
        policy = _Collecting(self.failures) if skip_errors else None
        self.plan = lower(graph, boxes, on_error=policy)
        self.split = self.plan.nodes[split_node_id]
        self.operand = self.split.children[0]
        self.stateful = keeps_state(graph.nodes[split_node_id].operand)
        self.engine = ReferenceEngine(self.plan)
        # Static objects a replica refers to, pickled as (node id, field name).
        self.op_ids = {id(value): (node.id, name) for node in self.plan.nodes
                       for name, value in operators(node).items() if not isinstance(value, (type(None), str, int))}
        self._shared: tuple | None = None  # the one instance tree of a stateless operand
        # observer(event, key[, outputs, failures]) before and after each item: the crash diagnosis of
        # snet.spark.crash
        self.observer: Callable | None = None

    # building

    def _build(self) -> tuple:
        engine = self.engine
        target = engine.build(self.operand, (engine.sink, 0))
        engine.cells.clear()  # the cells are found again when the state is dumped
        return target

    def _shared_target(self) -> tuple:
        if self._shared is None:
            self._shared = self._build()
            self.engine.pending_fire.clear()  # none: the operand has no initialisers
        return self._shared

    # running

    def _feed(self, target: tuple, record: Record, fire: bool) -> list[Record]:
        engine = self.engine
        engine.stack.append((target[0], target[1], record))
        if fire:
            engine.fire_pending()  # pushed after the record: they run first (§6.4)
        else:
            engine.pending_fire.clear()
        return list(engine.drain())

    def run_group(self, group: Group) -> GroupResult:
        engine = self.engine
        outputs: list[tuple[Any, list[Record]]] = []
        result = GroupResult(group.instance, group.value, outputs, None, [])
        target = None
        if self.stateful:
            target = load_replica(self, group.state) if group.state is not None else self._build()
        key = None
        try:
            if not self.stateful:
                target = self._shared_target()
            observer = self.observer
            for key, record, fire in group.items:
                skipped = len(self.failures)
                if observer is not None:
                    observer("item", key)
                outputs.append((key, self._feed(target, record, fire)))
                for i in range(skipped, len(self.failures)):  # skipped records of this input: its seq
                    self.failures[i] = (key[0],) + self.failures[i]
                if observer is not None:
                    observer("out", key, outputs[-1][1], self.failures[skipped:])
        except SNetRuntimeError as e:
            engine.stack.clear()
            engine.pending_fire.clear()
            engine.sink.outbox.clear()
            result.error = ErrorReport.of(key, e)
            return result
        finally:
            engine.cells.clear()  # lazily built star replicas register cells; found again below
            result.failures = self.failures[:]
            self.failures.clear()
        if self.stateful:
            result.state, cells = dump_replica(self, target)
            result.warnings = pending_warnings(cells)
        return result

    def run_task(self, task: TaskInput) -> TaskOutput:
        started = time.perf_counter()
        self.engine.box_calls = {}
        results = [self.run_group(g) for g in task.groups]
        return TaskOutput(results, self.engine.box_calls, time.perf_counter() - started)


# -- executor entry points -----------------------------------------------------

_HOSTS: dict[str, ReplicaHost] = {}
_KEEP_HOSTS = 8


def host_for(run_id: str, context: Callable[[], bytes]) -> ReplicaHost:
    """The cached host of a run in this Python worker; ``context()`` gives the run's bytes on a miss."""
    host = _HOSTS.get(run_id)
    if host is None:
        from snet.spark.shipping import RunContext
        ctx: RunContext = pickle.loads(context())
        host = ReplicaHost(ctx.graph, ctx.bind(), ctx.split_node_id, ctx.skip_errors)
        while len(_HOSTS) >= _KEEP_HOSTS:
            _HOSTS.pop(next(iter(_HOSTS)))
        _HOSTS[run_id] = host
    return host


def run_payload(run_id: str, context: Callable[[], bytes], payload: bytes) -> bytes:
    """One task: a pickled :class:`TaskInput` in, a pickled :class:`TaskOutput` out."""
    task: TaskInput = loads(payload)
    host = host_for(run_id, context)
    return dumps(host.run_task(task))


def rdd_partition(run_id: str, broadcast, payloads):
    """``mapPartitions`` function of the classic path; the run's context is a broadcast."""
    for payload in payloads:
        yield run_payload(run_id, lambda: broadcast.value, payload)


def arrow_batches(run_id: str, context: bytes, batches):
    """``mapInArrow`` function of the DataFrame path (Spark Connect); the context is in the closure."""
    import pyarrow as pa

    for batch in batches:
        column = batch.column(batch.schema.get_field_index("payload")).to_pylist()
        out = [run_payload(run_id, lambda: context, p) for p in column]
        yield pa.RecordBatch.from_arrays([pa.array(out, type=pa.binary())], names=["payload"])
