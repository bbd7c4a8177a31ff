"""Replicas of a split's operand on an executor, and their state as bytes.

A :class:`ReplicaHost` holds, per run and Python worker, a reference engine
for the whole program, which builds and feeds the replicas; a replica with
state (``Node.holds_state``) travels between batches as bytes
(:func:`dump_replica`, :func:`load_replica`: static objects replaced by ids).
A task gets a :class:`TaskInput` of :class:`Group` s and returns a
:class:`TaskOutput`; a run-time error travels back as an :class:`~snet.splitexec.ErrorReport`.

An operand that is a chain of boxes and nothing else, without state, runs
its records through compiled walks instead of the engine
(:class:`snet.core.chains.CountedChain`): the same outputs and errors, and
the boxes' figures, at under half the engine's cost a record.
"""

from __future__ import annotations

import io
import pickle
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from snet.core.chains import CountedChain, box_chain, walk_maker
from snet.core.semantics import SyncCell, unfinished_warning
from snet.gcpause import gc_paused
from snet.recursion import deep_recursion
from snet.errors import SNetRuntimeError
from snet import isolation
from snet.plan import PlanNode, operators
from snet.spg.lower import lower
from snet.spark.tasks import PROTOCOL, RUNS, cloudpickle_module, dumps, loads
from snet.spg.nodes import PropertyGraph, SplitNode
from snet.splitexec import CollectingPolicy, ErrorReport

Record = dict
Item = tuple  # (key, record, fire)


@dataclass(frozen=True, slots=True)
class Out:
    """Told to a host's observer after each item: its outputs, and the records it skipped (on_error "skip")."""
    key: Any
    outputs: list
    failures: list


@dataclass(slots=True)
class Group:
    """Records for one replica (for a stateless operand, any replica), in order; ``state``: the replica's bytes
    from the previous batch (None for a new replica, or a stateless operand).  ``bare``: the records alone, keyed
    ``(place,)`` here (:func:`keyed`), their outputs handed back ``aligned``."""

    instance: int
    value: int | None
    state: bytes | None
    items: list  # Items, or records when bare
    bare: bool = False


@dataclass(slots=True)
class GroupResult:
    instance: int
    value: int | None
    outputs: list  # (key, outputs of that item), in item order; outputs alone when ``aligned``
    state: bytes | None  # the replica after the group (stateful operands only)
    warnings: list[str]  # unfinished-cell warnings if the run ended now
    error: ErrorReport | None = None
    # (input seq, error record, ErrorReport) of the records skipped (on_error "skip")
    failures: list = field(default_factory=list)
    parked: list = field(default_factory=list)  # (node id, span, record) kept for ever in a synchro-cell star
    aligned: bool = False  # a bare group's: ``outputs`` are each record's outputs, in order, without keys


@dataclass(slots=True)
class TaskInput:
    run_id: str
    groups: list[Group]


@dataclass(slots=True)
class TaskOutput:
    results: list[GroupResult]
    box_calls: dict[str, list] = field(default_factory=dict)  # name -> [calls, seconds, histogram counts]
    seconds: float = 0.0
    guards: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (retries, timeouts) in the task


class _StatePickler(pickle.Pickler):
    """Pickles an instance tree, leaving static objects behind as ids."""

    def __init__(self, file, host: "ReplicaHost"):
        super().__init__(file, protocol=PROTOCOL)
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
    with deep_recursion():  # long serial chains nest deeply
        try:
            pickler.dump(target)
        except (pickle.PicklingError, TypeError, AttributeError):
            # A stored record holds a value plain pickle refuses: cloudpickle it.
            buffer = io.BytesIO()
            pickler = _cloud_state_pickler(buffer, host)
            pickler.dump(target)
    return buffer.getvalue(), pickler.cells


def _cloud_state_pickler(buffer, host):
    cloudpickle = cloudpickle_module()

    class CloudStatePickler(cloudpickle.CloudPickler):
        def __init__(self, file):
            super().__init__(file, protocol=PROTOCOL)
            self.cells = []

        persistent_id = _StatePickler.persistent_id

    pickler = CloudStatePickler(buffer)
    pickler.host = host
    return pickler


def load_replica(host: "ReplicaHost", data: bytes) -> tuple:
    with deep_recursion():
        return _StateUnpickler(io.BytesIO(data), host).load()


def pending_warnings(cells: list[SyncCell]) -> list[str]:
    """The termination warnings these cells would give if the run ended now."""
    return [unfinished_warning(c.shape.span, c.filled(), c.shape.count)
            for c in cells if not c.fired and c.filled() > 0]


class ReplicaHost:
    """What an executor needs to run replicas of one split's operand: built once per run and Python worker
    (:func:`host_for`), it holds no replica between tasks, only the static machinery."""

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable], split_node_id: int,
                 skip_errors: bool = False, guards: dict | None = None):
        from snet.core.guard import apply_guards
        from snet.reference import ReferenceEngine

        boxes, self.guards = apply_guards(boxes, guards or {})  # (their counters, None when no box has one)
        policy = CollectingPolicy() if skip_errors else None
        # (error record, ErrorReport) of the records skipped (on_error "skip"), handed back with each group
        self.failures: list[tuple] = policy.caught if policy is not None else []
        self.skip_errors, self.graph, self.split_id = skip_errors, graph, split_node_id
        self.plan = lower(graph, boxes, on_error=policy)
        self.operand = self.plan.nodes[split_node_id].children[0]
        split = graph.nodes[split_node_id]
        assert isinstance(split, SplitNode), f"node {split_node_id} is a {split.kind}, not a split (the runner checks)"
        self.stateful = split.operand.holds_state
        self.engine = ReferenceEngine(self.plan)
        # the static objects a replica refers to, pickled as (node id, field name)
        self.op_ids = {id(value): (node.id, name) for node in self.plan.nodes
                       for name, value in operators(node).items() if not isinstance(value, (type(None), str, int))}
        self._shared: tuple | None = None  # the one instance tree of a stateless operand
        # told an isolation.Item before each item and an Out after it (the crash diagnosis)
        self.observer: Callable[[object], None] | None = None
        # a stateless operand that is a chain of boxes and nothing else runs as such
        callers = None if self.stateful or skip_errors else box_chain(self.plan, self.operand)
        self.chain = CountedChain(callers, walk_maker()) if callers is not None else None

    def run_group(self, group: Group) -> GroupResult:
        if group.bare:  # the outputs go back without the keys
            if self.chain is not None and self.observer is None:  # through the chain's walks
                result = GroupResult(group.instance, group.value, [], None, [], aligned=True)
                try:
                    self.chain.walk(group.items, result.outputs, self.engine.box_calls)
                except SNetRuntimeError as e:
                    result.error = ErrorReport.of(e, (self.chain.place,))
                return result
            result = self.run_group(keyed(group))
            result.outputs, result.aligned = [outputs for _place, outputs in result.outputs], True
            return result
        engine = self.engine
        outputs: list[tuple[Any, list[Record]]] = []
        result = GroupResult(group.instance, group.value, outputs, None, [])
        if not self.stateful:
            if self._shared is None:
                self._shared = engine.replica(self.operand)
            target = self._shared
        elif group.state is not None:
            target = load_replica(self, group.state)
        else:
            target = engine.replica(self.operand)
        key = None
        observer = self.observer
        try:
            for key, record, fire in group.items:
                skipped = len(self.failures)
                if observer is not None:
                    observer(isolation.Item(key))
                outputs.append((key, engine.feed(target, record, fire)))
                for i in range(skipped, len(self.failures)):  # skipped records of this input: its seq
                    self.failures[i] = (key[0],) + self.failures[i]
                if observer is not None:
                    observer(Out(key, outputs[-1][1], self.failures[skipped:]))
        except SNetRuntimeError as e:
            result.error = ErrorReport.of(e, key)
            return result
        finally:
            result.failures, result.parked = self.failures[:], [(n.id, n.span, r) for n, r in engine.parked]
            self.failures.clear()
            engine.parked.clear()
        if self.stateful:
            result.state, cells = dump_replica(self, target)
            result.warnings = pending_warnings(cells)
        return result

    def run_task(self, task: TaskInput) -> TaskOutput:
        started = time.perf_counter()
        self.engine.box_calls = {}
        results = [self.run_group(g) for g in task.groups]
        return TaskOutput(results, self.engine.box_calls, time.perf_counter() - started,
                          self.guards.take() if self.guards is not None else {})


def keyed(group: Group) -> Group:
    """A bare group's records keyed by their places in it, ``(place,)``."""
    return Group(group.instance, group.value, None, [((p,), record, False) for p, record in enumerate(group.items)])


def host_for(run_id: str, context: Callable[[], bytes], announcing: bool = False) -> ReplicaHost:
    """The cached host of a run in this Python worker; ``context()`` gives the run's bytes on a miss;
    ``announcing``: its boxes announce their calls (:func:`snet.isolation.announcing_table`), cached apart."""
    def build() -> ReplicaHost:
        ctx = pickle.loads(context())
        table = isolation.announcing_table(ctx.graph, ctx.bind()) if announcing else ctx.bind()
        return ReplicaHost(ctx.graph, table, ctx.split_node_id, ctx.skip_errors, ctx.guards)

    return RUNS.get("diagnosis" if announcing else "host", run_id, build)


def run_payload(run_id: str, context: Callable[[], bytes], payload: bytes) -> bytes:
    """One task: a pickled :class:`TaskInput` in, a pickled :class:`TaskOutput` out (the cyclic collector paused
    meanwhile, as the driver pauses it while the batch is out: snet.gcpause)."""
    host = host_for(run_id, context)
    with gc_paused():
        return dumps(host.run_task(loads(payload)))

