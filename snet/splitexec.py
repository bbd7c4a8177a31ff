"""Split executors: where the replicas of selected ``!<tag>`` splits run.

An engine runs most of a network itself.  The replicas of some splits may
run elsewhere: on Spark executors (:mod:`snet.spark`), say.  Engines do not
know where; they talk to a :class:`SplitExecutor` through this small
protocol:

1. ``new_instance(node_id, path) -> instance``: the engine built an
   instance of an executor split (an :class:`~snet.plan.ExecutorSplitPlan`
   node; a split inside a star has one per star replica); ``path`` names
   the replica the instance is in, as checkpoints name it
   (:mod:`snet.checkpoint.state`: ``()`` at the top, ``((star, k),)`` in
   replica ``k`` of a star, and so on), so that its replicas' state is
   saved and resumed at the paths a run without the executor gives it;
2. ``submit(instance, record) -> seq``: a record entered that instance (the
   engine has checked its tag already); it waits in the executor's batch
   under a global sequence number;
3. ``full()`` / ``pending``: the batch is full / how many records wait;
4. ``take() -> Taken | None`` then ``run(taken) -> BatchResult`` (or
   ``flush()`` for both): the records run, and every input's outputs come
   back as :class:`SplitOutputs`, in sequence order.  An engine that submits
   from several threads calls ``take`` under its own lock and ``run``
   outside it, so records keep arriving while a batch runs.  FRONT fills
   the batch itself, in C, instead of steps 2–4 (``submit``, ``full``,
   ``take`` are the reference engine's): it tells the executor the run's
   first record (``first_record``, which may size the first batch), numbers
   the records from 0, keeps the :data:`Taken` columns and hands them to
   ``run``, full at ``batch_size`` records (read again after each batch);
5. a run-time error inside the executor does not raise: the
   :class:`BatchResult` carries it, with the outputs of the inputs before
   the failing one, so the engine writes those first and then fails;
6. ``stuck()``: once the input has ended and every record has left the
   engine, the error that ends the run because records stay in a
   synchro-cell star of the executor's replicas for ever (None: none do),
   as the engine ends a run that keeps records in one of its own;
7. ``warnings()``, ``stats()``, ``cancel()`` (from any thread, to stop a
   running batch) and ``close()``.

:class:`SplitExecutorProtocol` declares exactly that, for the type
checker and for an executor written from scratch; :class:`SplitExecutor`
implements the batching half of it once, for executors that only say how a
split node runs (:meth:`SplitExecutor.make_runner`).

When a batch runs is the engine's business (the reference engine: when it
is full, at the end of the input and before a deterministic combinator that
holds an executor split takes a new input; FRONT: when it is full or the
rest of the network is quiet, see ``linger``).  Ordering needs nothing
more: outputs come back per input in input order, so per-tag order and
``!!`` order hold, and the engine's own deterministic collectors order
everything around the split.

Which splits run in the executor is chosen before the program is lowered
(:func:`select_splits`); :func:`snet.backends.start` builds the executor a
run's options ask for, or none: executors register here
(:func:`register_executor`), each under the run option that asks for it
(``spark_master``: :class:`snet.spark.splits.SparkSplits`;
``split_processes``: :class:`snet.splitproc.ProcessSplits`), and are
imported only when a run asks for them (:func:`executor_for`).

The graph travels, not the plan
===============================

An executor is built from the *property graph* and the bound box
functions, and the other side lowers its own plan of the split's operand
(:func:`snet.spg.lower.lower`).  The graph is plain frozen data, so it
pickles, with the box functions, to another process or machine; a plan
does not: its operators are compiled where they run (filters and guards
are generated functions, box callers keep per-shape caches and may hold a
lock, the error policy is the driver's).  Lowering is deterministic, so a
node id names the same node on both sides, and cheap next to shipping
records.  What crosses is then the graph once per worker, and per batch
only records, node ids and replica state.
"""

from __future__ import annotations

import importlib
import pickle
import time
from itertools import repeat
from typing import Any, Callable, Iterable, NamedTuple, Protocol, Sequence

import attrs

from snet.batchsize import SplitBatchSizer
from snet.checkpoint.state import replica_value
from snet.errorpolicy import ErrorPolicy, error_record
from snet.errors import SNetError, SNetRuntimeError, SNetUsageError
from snet.gcpause import gc_paused
from snet.spg.nodes import NetNode, Node, PropertyGraph, SplitNode

Record = dict[str, Any]
Path = tuple[tuple[int, Any], ...]  # the replica an instance is in, as checkpoints name it (snet.checkpoint.state)


class SplitOutputs(NamedTuple):
    """The outputs that one input record of one split instance caused, in order (a tuple: one made per input
    record of every batch)."""

    instance: int
    seq: int
    outputs: list[Record]


@attrs.frozen
class BatchResult:
    """What a batch gave: outputs per input in sequence order, and the first error.

    With ``error`` set, ``outputs`` holds only the inputs before the failing
    one (``error_seq``); the rest of the batch is lost with the run.
    """

    outputs: tuple[SplitOutputs, ...] = ()
    error: SNetRuntimeError | None = None
    error_seq: int = -1
    failures: tuple[tuple[int, BaseException], ...] = ()  # (seq, error) of records skipped (on_error "skip")


class SplitFailure(Exception):
    """Raised by a split runner: ``error`` at input ``seq``, ``done`` the outputs of the inputs before it."""

    def __init__(self, error: SNetRuntimeError, seq: int, done: Iterable[SplitOutputs]):
        super().__init__(str(error))
        self.error = error
        self.seq = seq
        self.done = list(done)


@attrs.frozen
class ErrorReport:
    """A run-time error where a split's replicas run (a split process, a Spark task), rebuilt as the same
    exception where the run is; ``key``: the item it failed on, ``crash``: a process died there (no exception)."""

    kind: str  # the class name, a subclass of SNetRuntimeError in snet.errors
    message: str
    span: Any
    detail: str
    key: Any = None
    crash: bool = False

    @classmethod
    def of(cls, error: SNetRuntimeError, key: Any = None) -> ErrorReport:
        return cls(type(error).__name__, error.message, error.span, error.detail, key)

    def rebuild(self) -> SNetRuntimeError:
        import snet.errors as errors

        kind = getattr(errors, self.kind, None)
        if not (isinstance(kind, type) and issubclass(kind, SNetRuntimeError)):
            kind = SNetRuntimeError
        built: SNetRuntimeError = kind(self.message, self.span, self.detail)
        return built


class CollectingPolicy(ErrorPolicy):
    """The error policy where a split's replicas run under ``on_error`` "skip": each skipped failure is kept in
    ``caught`` as ``(error record, ErrorReport)``, for the run's own policy where the run is."""

    def __init__(self) -> None:
        super().__init__(quiet=True)
        self.caught: list[tuple[Record, ErrorReport]] = []

    def failed(self, error: SNetRuntimeError, record: Record, box: str | None) -> None:
        self.caught.append((error_record(error, record, box), ErrorReport.of(error)))


Batch = dict[int, list[tuple[int, int, Record]]]  # node id -> [(instance, seq, record)]: what runners take
# node id -> ([instance], [seq], [record]): a batch as it fills, in order (no tuple made per record, so that
# filling it sets off no collection of the cyclic collector: see SplitExecutor.run)
Taken = dict[int, tuple[list[int], list[int], list[Record]]]


class ExecutorStats(Protocol):
    """What a split executor measured: a frozen snapshot whose ``name`` is the field of
    :class:`snet.stats.RunStats` it fills (:class:`snet.stats.SparkStats`: ``"spark"``)."""

    @property
    def name(self) -> str: ...


class SplitExecutorProtocol(Protocol):
    """What an engine calls on a split executor (the numbered steps of the module docstring).

    ``selected``: the split node ids whose replicas run there; ``linger``:
    seconds an engine may let a partial batch wait for input before it runs
    it anyway; ``pending``: records waiting in the batch.
    """

    @property
    def selected(self) -> frozenset[int]: ...

    @property
    def linger(self) -> float: ...

    @property
    def pending(self) -> int: ...

    def new_instance(self, node_id: int, path: Path = ()) -> int: ...

    def first_record(self, record: Record) -> None: ...

    def submit(self, instance: int, record: Record) -> int: ...

    def full(self) -> bool: ...

    def take(self) -> Taken | None: ...

    def run(self, taken: Taken | None) -> BatchResult: ...

    def flush(self) -> BatchResult: ...

    def warnings(self) -> list[str]: ...

    def stuck(self) -> SNetRuntimeError | None: ...

    def stats(self) -> ExecutorStats: ...

    def cancel(self) -> None: ...

    def close(self) -> None: ...


class SplitRunner:
    """Runs the replicas of one split node (all its instances); what an executor is made of.

    The runners of an executor that keeps each replica as bytes between
    batches (``saves_state = "bytes"``: Spark) hold them in ``states``, per
    ``(instance, tag value)``, with the termination warnings of each one's
    cells in ``pending_warnings``; checkpoints save and restore them there.
    """

    where: str
    states: dict[tuple[int, Any], bytes]
    pending_warnings: dict[tuple[int, Any], list[str]]
    # (node id, span, record) of each record its replicas keep for ever in a synchro-cell star (Spark's runner;
    # split processes keep theirs and say how many)
    parked: Sequence[tuple[int, Any, Record]] = ()

    def stuck(self) -> SNetRuntimeError | None:
        """The error that ends the run if records stay in the replicas for ever (asked once every record has
        left the engine), as the engine ends a run whose records stay in one of its own; None when none do."""
        if not self.parked:
            return None
        from snet.core.semantics import cannot_terminate

        _, span, record = self.parked[0]
        return cannot_terminate(span, len(self.parked), record)

    def process_many(self, items: list[tuple[int, int, Record]]) -> list[SplitOutputs]:  # pragma: no cover
        """Run ``[(instance, seq, record)]``; outputs sorted by seq.  Raises :class:`SplitFailure`."""
        raise NotImplementedError

    def process_columns(self, instances: list[int], seqs: list[int], records: list[Record]) -> list[SplitOutputs]:
        """:meth:`process_many` of a batch as it filled (:data:`Taken`: the records' instances, their sequence
        numbers, rising, and the records); a runner that can take the columns as they are overrides it."""
        return self.process_many(list(zip(instances, seqs, records)))

    def warnings(self) -> list[str]:
        return []

    def take_failures(self) -> list[tuple[int, dict[str, Any], BaseException]]:
        """``(seq, error record, error)`` of the records skipped since the last call (``on_error`` "skip")."""
        return []

    def stats(self) -> dict[str, Any]:
        return {}

    def bytes_moved(self) -> int:
        """The bytes of records sent to the replicas and of outputs read back so far (0: not counted)."""
        return 0

    def cancel(self) -> None:
        """Stop the work running now (called from another thread)."""

    def close(self) -> None:
        """Release what the runner holds."""


class SplitExecutor:
    """The batching half of every executor; subclasses say how a split node runs (:meth:`make_runner`).

    Attributes:
        selected: the split node ids whose replicas run here.
        batch_size: records per batch (chosen after every batch when
            :attr:`sizer` is set).
        sizer: the :class:`SplitBatchSizer` of a run that gives no batch size
            (:attr:`batch_option`), else None.
        linger: seconds an engine may let a partial batch wait for input
            before it runs it anyway (when nothing else is in flight).
        error_policy: the run's :class:`snet.errorpolicy.ErrorPolicy`, set by
            the caller that starts the run before the first batch; None stops
            at the first error.  Runners skip failing records when it is set
            and report them through :meth:`SplitRunner.take_failures`.
    """

    name = "executor"
    place = "in the split executor"  # where its splits run, for messages ("on Spark")
    linger = 0.05
    error_policy: ErrorPolicy | None = None
    batch_option = ""  # the RunOptions attribute that gives the batch size (unset: auto may choose it)
    batch_seconds = 0.25  # the wall time a batch aims at when the size is chosen (SplitBatchSizer)
    first_batch = 0  # ... and the size of the first batch then (0: the executor's default)
    sizer: SplitBatchSizer | None = None
    # whether the boxes of its splits are called with their timeouts and retries (snet.core.guard); if not, a
    # run that gives them says so in a warning
    applies_guards = False
    # the replicas of its splits go into checkpoints (take_checkpoints): "paths" (as the engines keep them)
    # or "bytes" (as the runners do); None: a split whose replicas keep state is refused
    saves_state: str | None = None
    checkpointed: frozenset[int]  # the splits whose replicas' state goes into checkpoints
    # ("bytes") per split, {instance path: {tag value: (bytes, warnings)}} until an instance there takes them
    resumed_bytes: dict[int, dict[Path, dict[Any, tuple[bytes, list[str]]]]]

    def __init__(self, selected: Iterable[int], batch_size: int):
        if batch_size < 1:
            raise SNetUsageError(f"a split executor's batch size must be at least 1, not {batch_size}")
        self.selected = frozenset(selected)
        self.batch_size = batch_size
        self.runners: dict[int, SplitRunner] = {}
        self.instance_node: list[int] = []
        self.instance_path: list[Path] = []  # the replica each instance is in (new_instance)
        self.buffers: Taken = {}
        self.pending = 0
        self.seq = 0
        self.flushes = 0
        self.flush_seconds = 0.0
        self.checkpointed = frozenset()
        self.resumed_bytes = {}
        self.final_part: dict[str, Any] | None = None  # ("bytes") the replicas' part as the run ended (close)
        self.probe_first = False  # the next record submitted sizes the first batch (SplitBatchSizer.first_record)

    def choose_batch_sizes(self, options: Any, auto: bool) -> None:
        """Size the batches while the run goes on (a :class:`SplitBatchSizer`; ``auto``: under ``--box-concurrency
        auto``), unless ``options`` give the size."""
        if self.batch_option and getattr(options, self.batch_option, None) is None:
            if auto:
                self.batch_size = self.first_batch or self.batch_size
            self.sizer = SplitBatchSizer(self.batch_seconds if auto else None, self.batch_size, self.place)
            self.probe_first = True

    def take_checkpoints(self, graph: PropertyGraph, checkpointing: Any) -> None:
        """The run takes checkpoints (a :class:`snet.checkpoint.gate.Checkpointing`): refuse it if the state of
        a split here would be outside its snapshots (:func:`state_outside_snapshots`).

        An executor that sets :attr:`saves_state` keeps the replicas of its
        splits in the snapshots: it takes their part of the state resumed
        from before the engine sees it, and adds theirs to each snapshot
        (:meth:`add_state`, asked at the quiescent point, no batch running).
        Here, the ``"bytes"`` form: each replica's bytes as the runner keeps
        them (:class:`SplitRunner`), under the state's key
        :data:`SAVED_REPLICAS`, per split, keyed by the path of the
        instance's replica (``new_instance``) and the tag value, so that a
        split inside a star finds each star replica's own again; such a
        snapshot is resumed by a run of the same executor only
        (:func:`check_resume`).
        """
        why = None if self.saves_state else state_outside_snapshots(graph, self.selected, self.place)
        if why is not None:
            raise SNetUsageError(why)
        self.checkpointed = frozenset(n for n in self.selected if keeps_state(graph.nodes[n]))
        if self.saves_state and self.checkpointed:
            checkpointing.executor = self
        if self.saves_state == "bytes" and checkpointing.restore is not None:
            self.resumed_bytes = dict(checkpointing.restore.pop(SAVED_REPLICAS, None) or {})

    def _resume_runner(self, node_id: int, runner: SplitRunner) -> None:
        """Give a new runner the replicas resumed from of every instance of its split built so far."""
        for instance, node in enumerate(self.instance_node):
            if node == node_id:
                self._resume_instance(runner, instance)

    def _resume_instance(self, runner: SplitRunner, instance: int) -> None:
        """Give ``runner`` the replicas of ``instance`` resumed from (the ``"bytes"`` form), if any."""
        saved = self.resumed_bytes.get(self.instance_node[instance], {}).pop(self.instance_path[instance], {})
        for value, (data, warnings) in saved.items():
            runner.states[(instance, value)] = data
            if warnings:
                runner.pending_warnings[(instance, value)] = list(warnings)

    def stuck(self) -> SNetRuntimeError | None:
        """Once the input has ended and every record has left the engine: the error that ends the run because
        records stay in a synchro-cell star of this executor's replicas for ever (None: none do), as the engine
        ends a run whose records stay in one of its own (:meth:`SplitRunner.stuck`)."""
        for node_id in sorted(self.runners):
            error = self.runners[node_id].stuck()
            if error is not None:
                return error
        return None

    def add_state(self, state: dict[str, Any]) -> None:
        """Add the replicas of the splits checkpointed here to a snapshot's ``state`` (the ``"bytes"`` form:
        ``{split: {instance path: {tag value: (bytes, warnings)}}}`` under :data:`SAVED_REPLICAS`)."""
        if self.final_part is None:
            saved: dict[int, dict[Path, dict[Any, tuple[bytes, list[str]]]]] = {}
            parked: list[tuple[int, Record]] = []  # (the engine's form: a resumed run keeps them in its engine)
            for node_id in sorted(self.checkpointed):
                # (those no instance has taken yet, then the runner's)
                replicas = {path: dict(values) for path, values in self.resumed_bytes.get(node_id, {}).items()}
                runner = self.runners.get(node_id)
                if runner is not None:
                    for (instance, value), data in runner.states.items():
                        warnings = list(runner.pending_warnings.get((instance, value), ()))
                        replicas.setdefault(self.instance_path[instance], {})[value] = (data, warnings)
                    parked.extend((node, record) for node, _, record in runner.parked)
                if replicas:
                    saved[node_id] = replicas
            part: dict[str, Any] = {SAVED_REPLICAS: saved, "parked": parked}
        else:
            part = self.final_part
        state[SAVED_REPLICAS] = part[SAVED_REPLICAS]
        state["parked"] = list(state.get("parked", [])) + part["parked"]

    def started(self) -> None:
        """Called once the executor is ready for its run, its batch size chosen (split processes say then, under
        ``-v``, which splits run in them)."""

    def make_runner(self, node_id: int) -> SplitRunner:  # pragma: no cover - abstract
        raise NotImplementedError

    def new_instance(self, node_id: int, path: Path = ()) -> int:
        if node_id not in self.selected:
            raise SNetUsageError(f"node {node_id} is not a split of this executor")
        self.instance_node.append(node_id)
        self.instance_path.append(tuple(path))
        instance = len(self.instance_node) - 1
        runner = self.runners.get(node_id)
        if runner is not None:  # (an instance built after the split's first batch: a new replica of a star)
            self._resume_instance(runner, instance)
        return instance

    def submit(self, instance: int, record: Record) -> int:
        """Add a record that entered ``instance`` to the batch; returns its sequence number."""
        if self.probe_first:
            self._probe(record)
        seq = self.seq
        node = self.instance_node[instance]
        buffer = self.buffers.get(node)
        if buffer is None:
            buffer = self.buffers[node] = ([], [], [])
        buffer[0].append(instance)
        buffer[1].append(seq)
        buffer[2].append(record)
        self.seq = seq + 1
        self.pending += 1
        return seq

    def first_record(self, record: Record) -> None:
        """Told the run's first record by an engine that fills the batches itself (FRONT, in C: the
        :data:`Taken` columns, handed to :meth:`run`) instead of :meth:`submit`; it may size the first batch."""
        if self.probe_first:
            self._probe(record)

    def _probe(self, record: Record) -> None:
        self.probe_first = False
        try:
            moved = 2 * len(pickle.dumps(record, 5))
        except Exception:  # (the runner says why when it sends the record)
            return
        if self.sizer is not None:
            self.batch_size = self.sizer.first_record(moved)

    def full(self) -> bool:
        return self.pending >= self.batch_size

    def take(self) -> Taken | None:
        """Take the waiting records out of the batch (``None`` when there are none)."""
        if not self.pending:
            return None
        buffers, self.buffers, self.pending = self.buffers, {}, 0
        return buffers

    def flush(self) -> BatchResult:
        return self.run(self.take())

    def run(self, taken: Taken | None) -> BatchResult:
        """Run a taken batch, one split node after another (a replica's state moves between batches).

        The cyclic collector is paused while the batch is out (snet.gcpause):
        a batch makes several containers a record (the items, the groups,
        the results as they are read back), which live until the batch
        returns and hold no cycle; each collection meanwhile walked them
        again, and the full ones the whole heap, about three quarters of a
        trivial box's cost per record on Spark (docs/performance.md).
        Reference counting frees the rest as ever; cycles made meanwhile
        (by boxes run in process, say) wait for the batch's end.  While the
        batch fills, nothing is made per record that the collector counts
        (:data:`Taken`): the runners take its columns (``process_columns``)
        and make what they send from them, here.
        """
        if not taken:
            return BatchResult()
        with gc_paused():
            return self._run(taken)

    def _run(self, batch: Taken) -> BatchResult:
        started, moved = time.perf_counter(), self._bytes_moved()
        done: list[SplitOutputs] = []
        failed: list[tuple[int, BaseException]] = []
        try:
            for node_id in sorted(batch):
                try:
                    done.extend(self._process(node_id, batch[node_id]))
                except SplitFailure as failure:
                    self._skipped(node_id, failed)
                    before = sorted((o for o in done + failure.done if o.seq < failure.seq), key=_seq)
                    return BatchResult(tuple(before), failure.error, failure.seq, tuple(failed))
                self._skipped(node_id, failed)
        finally:
            seconds = time.perf_counter() - started
            self.flushes += 1
            self.flush_seconds += seconds
            if self.sizer is not None:
                self.batch_size = self.sizer.next_size(sum(len(columns[0]) for columns in batch.values()), seconds,
                                                       self._bytes_moved() - moved)
        if len(batch) > 1:  # (one split node's outputs come sorted: fold_outputs)
            done.sort(key=_seq)
        return BatchResult(tuple(done), failures=tuple(failed))

    def _process(self, node_id: int, columns: tuple[list[int], list[int], list[Record]]) -> list[SplitOutputs]:
        """The outputs of one split node's part of a batch from its runner (made for its first batch).  An error
        of the runner's own, not the network's (a py4j call after Spark's JVM died, say), is the split's failure
        at the first record of that part, at the split's position, as the runners' own errors are."""
        try:
            runner = self.runners.get(node_id)
            if runner is None:
                runner = self.runners[node_id] = self.make_runner(node_id)
                self._resume_runner(node_id, runner)
            return runner.process_columns(*columns)
        except (SplitFailure, SNetError):
            raise
        except Exception as e:
            graph = getattr(self, "graph", None)  # (the executors': a position for the message)
            error = SNetRuntimeError(f"the split failed {self.place}: {type(e).__name__}: {e}",
                                     graph.nodes[node_id].span if graph is not None else None)
            error.__cause__ = e
            raise SplitFailure(error, columns[1][0], []) from e

    def _bytes_moved(self) -> int:
        return sum(runner.bytes_moved() for runner in self.runners.values())

    def _skipped(self, node_id: int, failed: list[tuple[int, BaseException]]) -> None:
        """Report the records the node's runner skipped to the run's error policy; note (seq, error) for the
        engines."""
        runner = self.runners.get(node_id)
        if self.error_policy is not None and runner is not None:
            for seq, record, error in runner.take_failures():
                self.error_policy.reported(record)
                failed.append((seq, error))

    def warnings(self) -> list[str]:
        return ([w for node_id in sorted(self.runners) for w in self.runners[node_id].warnings()]
                + [w for saved in self.resumed_bytes.values() for values in saved.values()
                   for _, ws in values.values() for w in ws])

    def stats(self) -> ExecutorStats:  # pragma: no cover - abstract
        """The figures so far (``batch_size``, ``flushes``, ``flush_seconds`` and each runner's ``stats()``)."""
        raise NotImplementedError

    def cancel(self) -> None:
        for runner in list(self.runners.values()):
            runner.cancel()

    def close(self) -> None:
        if self.saves_state == "bytes" and self.checkpointed and self.final_part is None:
            # the run's final snapshot is taken after the engine has ended, and the runners with it
            final: dict[str, Any] = {}
            self.add_state(final)
            self.final_part = final
        for runner in self.runners.values():
            runner.close()


def _seq(outputs: SplitOutputs) -> int:
    return outputs.seq


# -- choosing the splits ------------------------------------------------------------


def _outermost(root: Node, wanted: Callable[[SplitNode], bool]) -> list[SplitNode]:
    """The splits under ``root`` that ``wanted`` accepts and that no accepted split encloses."""
    found: list[SplitNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, SplitNode) and wanted(node):
            found.append(node)
            continue
        stack.extend(reversed(node.children()))
    return found


SAVED_REPLICAS = "split_replicas"  # a snapshot's key for replicas saved as bytes (SplitExecutor.add_state)


def keeps_state(split: Node) -> bool:
    """Whether ``split`` is a split whose replicas differ from one another (``Node.holds_state``)."""
    return isinstance(split, SplitNode) and split.operand.holds_state


def check_resume(graph: PropertyGraph, restore: dict[str, Any], executor: "SplitExecutor | None",
                 directory: str = "the checkpoint") -> None:
    """Refuse to resume from a snapshot whose split replicas this run would keep in another form: bytes
    (Spark's) where the engine or split processes run the split, or the engines' form where Spark does."""
    form = executor.saves_state if executor is not None else None
    ours = {n for n in executor.selected if keeps_state(graph.nodes[n])} if executor is not None else set()
    for node_id in sorted(restore.get(SAVED_REPLICAS) or {}):
        if form != "bytes" or node_id not in ours:
            raise SNetUsageError(f"{_at(graph, node_id)}{directory} holds this split's replicas as a run on Spark "
                                 f"keeps them: resume it with --spark, as the run that took it")
    if form == "bytes":
        paths = {tuple(e[0]) for key in ("cells", "sync_stars") for e in restore[key]} | \
            {tuple(p) for p in restore["fired"]}
        for node_id in sorted(ours):
            if any(replica_value(path, node_id) is not None for path in paths):
                raise SNetUsageError(f"{_at(graph, node_id)}{directory} holds this split's replicas as a run "
                                     f"without Spark keeps them: resume it without --spark, as the run that took it")


def _at(graph: PropertyGraph, node_id: int) -> str:
    span = graph.nodes[node_id].span
    return f"{span.location}: " if span is not None else ""


def state_outside_snapshots(graph: PropertyGraph, selected: Iterable[int], place: str) -> str | None:
    """Why a run that takes checkpoints cannot run the splits ``selected`` in a split executor that keeps no
    state in the snapshots (``saves_state`` None), or None.

    Replicas of a split with no synchro-cell and no initialiser are fresh
    for every record, so nothing of them needs saving.
    """
    for node_id in sorted(selected):
        node = graph.nodes[node_id]
        if keeps_state(node):
            where = f"{node.span.location}: " if node.span is not None else ""
            return (f"{where}--checkpoint cannot save the state of this split's replicas {place} (a synchro-cell "
                    f"or an initialiser keeps state per tag there, outside the snapshot); run it without "
                    f"--checkpoint, or without the split executor")
    return None


def split_positions(graph: PropertyGraph) -> list[str]:
    return sorted({n.span.location for n in graph.nodes if isinstance(n, SplitNode) and n.span is not None})


def select_splits(graph: PropertyGraph, rule: str | None, option: str = "--spark-splits") -> frozenset[int]:
    """The split node ids a rule selects.

    ``auto`` (the default): every outermost split whose operand contains a
    box (a split of filters and synchro-cells costs microseconds per record
    in place, less than shipping the record); ``all``: every outermost
    split; otherwise a comma list of split positions ``FILE:LINE:COL`` (or
    ``LINE:COL``) and net names (a net name selects the outermost splits
    inside that net).  Of the selected splits only the outermost are kept:
    a nested split runs inside the outer one's replicas.
    """
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
            raise SNetUsageError(f"{option}: '{token}' names no split or net (splits at: {where})")
        chosen.update(hits)
    return frozenset(n.id for n in _outermost(graph.root, lambda n: n.id in chosen))


def _match(graph: PropertyGraph, token: str) -> set[int]:
    if ":" in token:
        hits: set[int] = set()
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


def aligned_outputs(instances: list[int], seqs: list[int], outputs: list[list[Record]]) -> list[SplitOutputs]:
    """:class:`SplitOutputs` of columns of the same length, one per input, made in C by ``tuple.__new__`` (the
    class's own ``__new__`` is a Python function: twice the time, a batch of 50,000 trivial records)."""
    return list(map(tuple.__new__, repeat(SplitOutputs), zip(instances, seqs, outputs)))


def fold_outputs(keyed: list[tuple[tuple[int, int, Any], list[Record]]]) -> list[SplitOutputs]:
    """Outputs keyed ``(seq, instance, tag value)``, sorted, as :class:`SplitOutputs` per input.

    A record that a ``!!`` or a multi-valued tag sent to several replicas
    comes back once per copy: the copies' outputs are joined, in key order.
    """
    result: list[SplitOutputs] = []
    append = result.append
    last_seq = last_instance = None
    for (seq, instance, _value), outputs in keyed:
        if seq == last_seq and instance == last_instance:
            result[-1].outputs.extend(outputs)
        else:
            append(SplitOutputs(instance, seq, list(outputs)))
            last_seq, last_instance = seq, instance
    return result


# -- the registry -------------------------------------------------------------------


@attrs.frozen
class ExecutorEntry:
    """A split executor: ``target`` (``"module:Class"``) runs a run's splits when option ``option`` is set.

    The class is called as ``Class(graph, boxes, options)`` and has a
    ``selected`` set (empty: no split of the network runs in it).
    """

    name: str
    option: str  # a RunOptions attribute; a true value asks for this executor
    flag: str  # the command line's spelling of the option, for messages
    target: str


EXECUTORS: dict[str, ExecutorEntry] = {}


def register_executor(name: str, option: str, flag: str, target: str) -> None:
    """Make executor ``target`` the one a run gets when its option ``option`` is set."""
    EXECUTORS[name] = ExecutorEntry(name, option, flag, target)


register_executor("spark", "spark_master", "--spark", "snet.spark.splits:SparkSplits")
register_executor("processes", "split_processes", "--split-processes", "snet.splitproc:ProcessSplits")


def asked_executors(options: Any) -> list[ExecutorEntry]:
    """The executors ``options`` ask for (a run may ask for one at most: :class:`snet.options.RunOptions`)."""
    return [entry for entry in EXECUTORS.values() if getattr(options, entry.option, None)]


def executor_for(graph: PropertyGraph, boxes: dict[str, Callable[..., Any]], options: Any) -> SplitExecutor | None:
    """The split executor ``options`` ask for, or None to run every split in place.

    An executor that selects no split of ``graph`` is closed and not used.
    """
    asked = asked_executors(options)
    if not asked:
        return None
    if len(asked) > 1:
        raise SNetUsageError(f"{' and '.join(e.flag for e in asked)} cannot be combined: a split runs in one "
                             f"executor")
    module_name, _, cls_name = asked[0].target.partition(":")
    executor: SplitExecutor = getattr(importlib.import_module(module_name), cls_name)(graph, boxes, options)
    if not executor.selected:
        executor.close()
        return None
    return executor


__all__ = ["Batch", "Taken", "SplitExecutorProtocol", "ExecutorStats", "SplitBatchSizer", "SplitExecutor",
           "SplitRunner", "SplitOutputs", "BatchResult", "SplitFailure", "select_splits", "split_positions",
           "state_outside_snapshots", "check_resume", "keeps_state", "SAVED_REPLICAS", "ExecutorEntry", "EXECUTORS",
           "register_executor", "executor_for", "asked_executors", "aligned_outputs", "fold_outputs"]
