"""Split processes: the replicas of ``!<tag>`` splits in N local worker processes (``--split-processes N``).

On a CPython with the GIL, pure-Python boxes run one at a time whatever
the number of threads.  The replicas of an index split are independent of
one another (each sees only the records of its tag value), so a split is
a keyed partition: :class:`ProcessSplits`, a split executor
(:mod:`snet.splitexec`), runs the replicas of the selected splits in N
processes of their own, and the rest of the network runs in the engine as
before.  The splits are chosen as for Spark
(:func:`~snet.splitexec.select_splits`, ``auto``: every outermost split
whose operand holds a box).

Which process runs what
=======================

Tag value *v* belongs to process ``owner(v) = mix(v) mod N``, a fixed
integer hash (:func:`owner`), for the whole run and for every instance of
the split.  The process keeps the replica of (instance, *v*) alive between
batches (:mod:`snet.splitworker`): its synchro-cells stay where they are,
and only records travel, pickled, one message per process and batch each
way plus one per record back.  An operand whose replicas are all alike
(no synchro-cell, no initialiser) is not keyed: a batch is cut into
runs of consecutive records, about four per process, and each process is
given the next run as it answers the last, so skewed tags, a slower core
or a core shared with other work leave no process waiting on another.

Ordering is the protocol's (see :mod:`snet.splitexec`): a process feeds
its records in sequence order, so replica *v* sees its records in order,
and the outputs come back per input in sequence order, which gives per-tag
order and ``!!`` order.

Failures
========

* A run-time error in a process (a box that raised, a filter that found
  no tag) comes back as the same :class:`~snet.errors.SNetRuntimeError`,
  with the box's name, the record's labels and the traceback; the outputs
  of every input before it are written first, as for any engine.
* A process that dies (``os._exit`` in a box, a signal, a crash in C) is
  named with the box it was calling and the split's input record it was
  on; the outputs of the inputs before that record are written, and the
  run fails (exit status 1).  Under ``on_error`` "skip" the record fails
  alone when the operand holds no state: a new process takes the place of
  the dead one and runs the rest of its share.  Replicas with state are
  lost with the process that held them, so then the run stops all the same.
* Ctrl-C: the processes ignore SIGINT (the terminal sends it to all of
  them); the run's end terminates them, and each also watches the run's
  process and ends with it (:func:`snet.splitworker.end_with`), so none is
  left behind even when the run is killed outright.

Processes start with the run, from the ``forkserver`` context, the box
functions shipped as for box processes (:mod:`snet.core.processes`: by
module, by file or by value).
"""

from __future__ import annotations

import collections
import logging
import os
import pickle
import selectors
import struct
import sys
import threading
import time
from typing import Any, Callable, Sequence

from snet.checkpoint.state import add_state, empty_state, replica_value, take_replicas
from snet.core.compiled import SplitKeys
from snet.core.guard import Guard, guards_for
from snet.core.semantics import cannot_terminate
from snet.core.processes import main_hidden, process_context, read_answer, shipped_function
from snet.errorpolicy import error_record
from snet.errors import SNetBindingError, SNetBoxError, SNetRuntimeError, SNetUsageError
from snet.splitexec import SplitExecutor, SplitFailure, SplitOutputs, SplitRunner, fold_outputs, select_splits
from snet.stats import BoxStats, SplitProcessStats, add_box_calls, add_guard_counts, box_entries
from snet.splitworker import PROTOCOL
from snet.spg.nodes import BoxNode, PropertyGraph, SplitNode

Record = dict
DEFAULT_BATCH = 1024
RUNS_PER_PROCESS = 4  # runs of records per process and batch, for an operand without state
_MASK = (1 << 64) - 1


def owner(value: int, processes: int) -> int:
    """The process that owns tag value ``value``: a 64-bit mix of it (SplitMix64's), modulo ``processes``.

    Stable across runs and machines (not Python's salted ``hash``), and a mix
    rather than ``value % N``, so that values of one stride (all even, say)
    still spread over every process.
    """
    x = (value + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return (x ^ (x >> 31)) % processes


class ProcessSplits(SplitExecutor):
    """The split executor of ``--split-processes N`` / ``split_processes=N``."""

    name = "processes"
    place = "in split processes"
    batch_option = "process_batch"
    batch_seconds = 0.25  # a batch's fixed cost is a message each way per process (well under a millisecond)
    first_batch = 64  # small: a slow split says so soon (a Spark job's start would cost too much for it)
    saves_state = "paths"
    applies_guards = True  # each process calls the boxes through their timeouts and retries (snet.core.guard)

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable], options: Any):
        super().__init__(select_splits(graph, options.process_splits, "--process-splits"),
                         options.process_batch or DEFAULT_BATCH)
        self.graph = graph
        self.count = options.split_processes
        self.pool: Pool | None = None
        self.resumed: dict[int, dict] = {}  # their state resumed from, until their runner sends it out
        self.final_state: dict | None = None  # their state when the run ended (close), for the final snapshot
        if self.selected:
            began = time.perf_counter()
            self.pool = Pool(graph, boxes, self.count, guards_for(graph, options))
            self.start_seconds = time.perf_counter() - began
        else:  # not an error (the same command may run another network next), but nothing runs in them: say so
            rule = options.process_splits or "auto"
            if not any(isinstance(node, SplitNode) for node in graph.nodes):
                why = "--split-processes: this network has no index split"
            elif rule == "auto":
                why = ("no split of this network has a box in its operand (--process-splits auto leaves splits of "
                       "filters and synchro-cells in place)")
            else:
                why = f"--process-splits {rule} selects no split"
            logging.getLogger("snet").warning("warning: %s: no split process is started", why)

    def started(self) -> None:
        if self.pool is None:
            return
        where = sorted(n.span.location for n in self.graph.nodes if n.id in self.selected and n.span is not None)
        batches = f"first {self.batch_size:,} records, then chosen after every batch" \
            if self.sizer is not None and self.sizer.seconds is not None else f"{self.batch_size:,} records"
        logging.getLogger("snet").info("info: %d split processes ready in %.0f ms for the split%s at %s (batches: %s)",
                                       self.count, self.start_seconds * 1000,
                                       "s" if len(where) != 1 else "", ", ".join(where), batches)

    def make_runner(self, node_id: int) -> "ProcessSplitRunner":
        assert self.pool is not None
        restores = None
        if node_id in self.checkpointed:  # the state each process's replicas resume from (empty: a fresh run)
            part = self.resumed.pop(node_id, None) or empty_state()
            restores = [empty_state() for _ in range(self.count)]
            for key in ("cells", "sync_stars", "fired"):
                for entry in part[key]:
                    path = entry if key == "fired" else entry[0]
                    restores[owner(replica_value(path, node_id), self.count)][key].append(entry)
        return ProcessSplitRunner(self.graph, node_id, self.pool, skip_errors=self.error_policy is not None,
                                  restores=restores, instance_paths=self.instance_path)

    def take_checkpoints(self, graph: PropertyGraph, checkpointing: Any) -> None:
        """Splits with state keep their replicas in the processes, which export them for each snapshot at the
        paths a run without split processes gives them (the instance's path, from ``new_instance``, then
        ``(split, tag value)``); a resumed run sends each process the replicas of the tag values it owns
        (however many processes the run that saved them had, or none)."""
        super().take_checkpoints(graph, checkpointing)  # (which sets checkpointed, and the executor to ask)
        if self.checkpointed and self.pool is not None and checkpointing.restore is not None:
            self.resumed = take_replicas(checkpointing.restore, set(self.checkpointed))
            for node_id in sorted(self.resumed):  # now: their cells' warnings at the end if no record comes
                self.runners[node_id] = self.make_runner(node_id)

    def add_state(self, state: dict) -> None:
        if self.final_state is not None:
            add_state(state, self.final_state)
            return
        if self.pool is None or self.pool.stopped:
            raise SNetRuntimeError("the split processes have ended: their replicas cannot be saved for a checkpoint")
        for node_id in sorted(self.checkpointed):
            runner = self.runners.get(node_id)
            if isinstance(runner, ProcessSplitRunner):  # (none: no record has reached the split)
                for part in runner.export_states():
                    add_state(state, part)

    def stats(self) -> SplitProcessStats:
        # (asked from any thread, while a batch may run: copies of what the batch changes)
        runners = [r for r in list(self.runners.values()) if isinstance(r, ProcessSplitRunner)]
        calls: dict[str, list] = {}
        guarded: dict[str, tuple[int, int]] = {}
        for runner in runners:
            add_box_calls(calls, dict(runner.box_calls))
            guarded = add_guard_counts(guarded, runner.guard_counts)
        return SplitProcessStats(
            processes=self.count, batch_size=self.batch_size,
            selected=tuple(sorted(_where(self.graph.nodes[i]) for i in self.selected)),
            flushes=self.flushes, seconds=self.flush_seconds, records=sum(r.records for r in runners),
            replicas=sum(len(r.replicas) for r in runners), boxes=BoxStats.table(box_entries(calls, guarded)),
            batch_sizes=self.sizer.chosen() if self.sizer is not None else ())

    def cancel(self) -> None:
        if self.pool is not None:
            self.pool.stop()

    def close(self) -> None:
        for runner in self.runners.values():  # the replicas' warnings, before the processes end
            runner.warnings()
        pool = self.pool
        if self.checkpointed and pool is not None and not (pool.broken or pool.stopped or pool.busy):
            # the run's final snapshot is taken after the engine has ended, and with it the processes
            final = empty_state()
            try:
                self.add_state(final)
                self.final_state = final
            except SNetRuntimeError as e:  # no final snapshot then: the run fails (Checkpointing.finish)
                logging.getLogger("snet").debug("the split processes' final state was not saved: %s", e)
        super().close()
        if self.pool is not None:
            self.pool.stop()


def _where(node: Any) -> str:
    return node.span.location if node.span is not None else f"node {node.id}"


class _Process:
    """One split process, the parent's end of its pipe, and the slot naming the box it is calling."""

    __slots__ = ("process", "connection", "slot")

    def __init__(self, process: Any, connection: Any, slot: Any):
        self.process = process
        self.connection = connection
        self.slot = slot

    def exit_text(self) -> str:
        """How the process ended, once it has ("exit status 3", "killed by SIGKILL")."""
        import signal

        self.process.join(5)
        code = self.process.exitcode
        if code is None:
            return "its pipe closed"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"


class Pool:
    """The N split processes of one run, shared by every split run in them."""

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable], count: int,
                 guards: dict[str, Guard] | None = None):
        self.count = count
        self.box_names = sorted(graph.used_boxes())
        shipped = {name: shipped_function(name, boxes[name]) for name in self.box_names}
        # what every process starts with (a process that replaces a dead one too); ``guards``: the timeout and
        # retries of each box given them, which the processes call through them
        self._start_args = ([p for p in sys.path if p], shipped, pickle.dumps(graph, PROTOCOL), self.box_names,
                            dict(guards or {}))
        self._context = process_context()
        self._context.set_forkserver_preload(["snet.core.processes", "snet.splitworker"])  # before the server starts
        self.processes: list[_Process] = []
        self.splits: list[tuple] = []  # the ("split", node, skip_errors) messages sent, for a replacement process
        self.stopped = False
        self.busy = False  # a batch is running
        self.broken: SNetRuntimeError | None = None  # a process died: the replicas it held are lost
        self._lock = threading.Lock()
        try:
            with main_hidden():
                self.processes.extend(self._spawn(i) for i in range(count))
            for index in range(count):
                self._started(index)
        except BaseException:
            self.stop()
            raise

    def _spawn(self, index: int) -> _Process:
        from snet.splitworker import serve

        here, there = self._context.Pipe()
        slot = self._context.Value("i", 0, lock=False)
        process = self._context.Process(target=serve, args=(there, os.getpid(), *self._start_args, slot),
                                        daemon=True, name=f"snet-split-{index + 1}")
        process.start()
        there.close()
        return _Process(process, here, slot)

    def replace(self, index: int) -> None:
        """Start a process in place of process ``index``, which has died; it knows every split announced."""
        old = self.processes[index]
        old.connection.close()
        with main_hidden():
            self.processes[index] = self._spawn(index)
        self._started(index)
        for message in self.splits:
            self.send(index, message)

    def announce(self, node_id: int, skip_errors: bool, restores: list[dict] | None = None) -> None:
        """Tell every process that split ``node_id`` runs in them; ``restores``, in a run that takes checkpoints:
        per process, the state its replicas of the split resume from."""
        # (a process that replaces a dead one starts with fresh replicas: the run is stopping if they held state)
        self.splits.append(("split", node_id, skip_errors, None if restores is None else empty_state()))
        for index in range(self.count):
            self.send(index, ("split", node_id, skip_errors, None if restores is None else restores[index]))

    def _started(self, index: int) -> None:
        """Wait for process ``index`` to have loaded the boxes and the program; its failure is a start-up error."""
        entry = self.processes[index]
        try:
            answer = pickle.loads(entry.connection.recv_bytes())
        except (EOFError, OSError):
            answer = ("failed", f"it ended ({entry.exit_text()}) before it was ready")
        if answer[0] != "ready":
            raise SNetBindingError(f"split process {index + 1} of {self.count} could not start: {answer[1]}")

    def send(self, index: int, message: tuple) -> int:
        """Send ``message`` to process ``index`` (how many bytes it took); a process that has ended is a run-time
        error."""
        data = pickle.dumps(message, PROTOCOL)
        entry = self.processes[index]
        try:
            entry.connection.send_bytes(data)
        except OSError:
            if self.stopped:
                raise SNetRuntimeError("the split processes were stopped") from None
            self.broken = SNetRuntimeError(f"split process {index + 1} of {self.count} has ended "
                                           f"({entry.exit_text()}); its standard error says why")
            raise self.broken from None
        return len(data)

    def stop(self) -> None:
        """End every process now (the run is over, or stopping): a batch running is abandoned."""
        with self._lock:
            if self.stopped:
                return
            self.stopped = True
        for entry in self.processes:
            if entry.process.is_alive():
                entry.process.terminate()
        for entry in self.processes:
            entry.process.join(5)
            if entry.process.is_alive():
                entry.process.kill()
                entry.process.join(5)
            entry.connection.close()

    def pids(self) -> list[int]:
        """The process ids of the split processes running now."""
        return [e.process.pid for e in self.processes if e.process.is_alive()]


class ProcessSplitRunner(SplitRunner):
    """Runs the replicas of one split node in the pool's processes."""

    def __init__(self, graph: PropertyGraph, split_node_id: int, pool: Pool, skip_errors: bool = False,
                 restores: list[dict] | None = None, instance_paths: Sequence[tuple] = ()):
        node = graph.nodes[split_node_id]
        if not isinstance(node, SplitNode):
            raise SNetUsageError(f"node {split_node_id} is a {node.kind}, not a split")
        self.graph = graph
        self.node = node
        self.pool = pool
        self.where = _where(node)
        self.keys = SplitKeys(node)
        self.stateful = node.operand.holds_state
        self.replicas: set[tuple[int, int]] = set()
        self.records = 0
        self.moved = 0  # bytes of the batches' messages to the processes and of their answers
        self.failures: list[tuple] = []  # (seq, error record, error) of the records skipped in the processes
        self.box_calls: dict[str, list] = {}
        self.final_warnings: list[str] | None = None
        self.kept: dict[int, Any] = {}  # per process: (count, span, first record) its replicas keep for ever
        self.guard_counts: dict[str, tuple[int, int]] = {}  # box -> (retries, timeouts) in the processes
        self.skip_errors = skip_errors
        # in a run that takes checkpoints, the path of each instance's replica (the executor's list, which
        # grows): each new replica's path goes to its process with its first record
        self.instance_paths = instance_paths if restores is not None else None
        pool.announce(node.id, skip_errors, restores)

    def process_many(self, items: list[tuple[int, int, Record]]) -> list[SplitOutputs]:
        """Run ``[(instance, seq, record)]`` in the processes; the outputs per input, sorted by seq.

        Raises:
            SplitFailure: the first error in (seq, instance, value) order, a
                dead process included, with the outputs of the inputs before it.
        """
        pool = self.pool
        if pool.broken is not None:
            raise SplitFailure(pool.broken, -1, [])
        shares, runs, paths = self._share(items)
        pool.busy = True
        finished = False
        try:
            for index, share in enumerate(shares):
                if share:
                    try:
                        self.moved += pool.send(index, ("run", self.node.id, share, paths[index]))
                    except (pickle.PicklingError, TypeError, AttributeError) as e:
                        raise SNetRuntimeError(f"a record that entered the split cannot be sent to a split process "
                                               f"(records travel pickled): {type(e).__name__}: {e}",
                                               self.node.span) from e
            keyed, errors = self._collect(shares, runs)
            finished = True
        finally:
            pool.busy = False
            if not finished and pool.broken is None:  # answers may still come: the pipes are out of step
                pool.broken = SNetRuntimeError("a batch of the split processes was abandoned", self.node.span)
        keyed.sort(key=lambda item: item[0])
        if errors:
            key, error = min(errors, key=lambda e: e[0])
            raise SplitFailure(error, key[0], fold_outputs([item for item in keyed if item[0] < key]))
        return fold_outputs(keyed)

    def _share(self, items: list[tuple[int, int, Record]]) -> tuple[list[list[tuple]], collections.deque,
                                                                    list[dict]]:
        """Each process's first ``(key, record, replica)`` items, in key order, the runs given out later, and
        per process the checkpoint paths of the replicas new to it (a run that takes checkpoints).

        Replicas with state: every item of a tag value goes to the process
        that owns the value, all at once.  Without state any replica will
        do: the items are cut into runs of consecutive records, about
        ``RUNS_PER_PROCESS`` per process, and each process starts with one;
        :meth:`_collect` gives the next run to whichever process answers
        its last first.
        """
        n = self.pool.count
        shares: list[list[tuple]] = [[] for _ in range(n)]
        copies = [((seq, instance, value), record) for instance, seq, record in items
                  for value in self.keys.values(record)]
        copies.sort(key=lambda c: c[0])
        self.records += len(copies)
        runs: collections.deque = collections.deque()
        paths: list[dict] = [{} for _ in range(n)]
        if self.stateful:
            instance_paths, split = self.instance_paths, self.node.id
            for key, record in copies:
                replica = (key[1], key[2])
                index = owner(key[2], n)
                if replica not in self.replicas:
                    self.replicas.add(replica)
                    if instance_paths is not None:
                        paths[index][replica] = instance_paths[key[1]] + ((split, key[2]),)
                shares[index].append((key, record, replica))
        elif copies:
            size = -(-len(copies) // (n * RUNS_PER_PROCESS))
            runs.extend([(key, record, None) for key, record in copies[i:i + size]]
                        for i in range(0, len(copies), size))
            for index in range(min(n, len(runs))):
                shares[index] = runs.popleft()
        return shares, runs, paths

    def _collect(self, shares: list[list[tuple]], runs: collections.deque) -> tuple[list, list]:
        """Read every process's answers to its share: ``(keyed outputs, [(key, error)])``; a process that
        answers its share's last item is given the next of ``runs`` (taken from the left), if any are left.

        The answers are read from the pipes in large chunks and cut into
        messages here (:func:`_messages`), rather than one message per
        read: a process answers once per record.
        """
        pool = self.pool
        keyed: list[tuple[tuple, list[Record]]] = []
        errors: list[tuple[tuple, SNetRuntimeError]] = []
        done = [0] * pool.count  # items answered, per process
        buffers = [bytearray() for _ in range(pool.count)]
        waiting = {pool.processes[i].connection.fileno(): i for i, share in enumerate(shares) if share}
        with selectors.DefaultSelector() as selector:
            for fd in waiting:
                selector.register(fd, selectors.EVENT_READ)
            while waiting:
                try:
                    ready = [key.fd for key, _ in selector.select()]
                except (OSError, ValueError):  # a pipe closed by cancel() from another thread
                    raise SNetRuntimeError("the split processes were stopped while a batch ran", self.node.span)
                for fd in ready:
                    index = waiting[fd]
                    try:
                        chunk = os.read(fd, _CHUNK)
                    except OSError:
                        chunk = b""
                    if not chunk:  # the process has ended
                        selector.unregister(fd)
                        del waiting[fd]
                        share = shares[index]
                        item = share[done[index]] if done[index] < len(share) else None
                        error, box = self._died(index, item)
                        if item is None or not self._skips_crashes():
                            pool.broken = error
                            errors.append((item[0] if item is not None else share[-1][0], error))
                            continue
                        # skipped: the record fails alone, a new process takes the rest of the share
                        keyed.append((item[0], []))
                        self.failures.append((item[0][0], error_record(error, item[1], box), error))
                        shares[index] = share[done[index] + 1:]
                        done[index], buffers[index] = 0, bytearray()
                        pool.replace(index)
                        self.moved += pool.send(index, ("run", self.node.id, shares[index], {}))  # "end" if empty
                        fd = pool.processes[index].connection.fileno()
                        waiting[fd] = index
                        selector.register(fd, selectors.EVENT_READ)
                        continue
                    buffers[index] += chunk
                    self.moved += len(chunk)
                    for data in _messages(buffers[index]):
                        try:
                            message = read_answer(data)
                        except Exception as e:  # a class the parent cannot import, a value naming os._exit...
                            pool.broken = SNetRuntimeError(
                                f"an answer of split process {index + 1} of {pool.count} cannot be read: "
                                f"{type(e).__name__}: {e}", self.node.span)
                            raise pool.broken from None
                        kind = message[0]
                        if kind == "out":
                            _, key, outputs, failures = message
                            keyed.append((key, outputs))
                            if failures:
                                self.failures.extend((key[0], record, report.rebuild()) for record, report in failures)
                            done[index] += 1
                        elif kind == "error":
                            errors.append((message[1], message[2].rebuild()))
                        else:  # "end"
                            self._ended(index, message)
                            if runs and not errors and pool.broken is None:  # the next run not given out yet
                                shares[index], done[index] = runs.popleft(), 0
                                self.moved += pool.send(index, ("run", self.node.id, shares[index], {}))
                                continue
                            selector.unregister(fd)
                            del waiting[fd]
        return keyed, errors

    def _ended(self, index: int, message: tuple) -> None:
        """Process ``index``'s ``("end", box_calls, stuck, guards)`` after its share of a batch."""
        add_box_calls(self.box_calls, message[1])
        self.kept[index] = message[2]
        self.guard_counts = add_guard_counts(self.guard_counts, message[3])

    def _skips_crashes(self) -> bool:
        """Does a record on which a process died fail alone? Under ``on_error`` "skip", for replicas without
        state: any process gives the same outputs.  Replicas with state died with the process."""
        return self.skip_errors and not self.stateful and not self.pool.stopped

    def _died(self, index: int, item: tuple | None) -> tuple[SNetRuntimeError, str | None]:
        """The error for split process ``index``, which ended while it ran ``item``, and the box it was in."""
        pool = self.pool
        if pool.stopped:
            return SNetRuntimeError("the split processes were stopped while a batch ran", self.node.span), None
        entry = pool.processes[index]
        box = entry.slot.value
        how = entry.exit_text()
        record = _shown(item[1]) if item is not None else "?"
        if item is not None and self._skips_crashes():
            after = "the record is skipped, and a new split process runs the records after it"
        elif self.stateful:
            after = "the replicas that split process held are lost with it, so the run stops"
        else:  # nothing was lost but the call: the error policy decides
            after = "the run stops; under --on-error skip the record would be skipped alone"
        detail = f"the split's input record: {record}\n({after})"
        which = f"split process {index + 1} of {pool.count}"
        if box:
            name = pool.box_names[box - 1]
            return SNetBoxError(f"box '{name}' ended {which} ({how}) on the split's input record {record}",
                                _box_span(self.graph, name), detail), name
        return SNetRuntimeError(f"{which} of the split died ({how}) on its input record {record}", self.node.span,
                                detail), None

    def take_failures(self) -> list[tuple]:
        failures, self.failures = self.failures, []
        return sorted(failures, key=lambda f: f[0])

    def warnings(self) -> list[str]:
        """Termination warnings of the replicas in every process: asked once, at the end of the run.

        The executor asks before it ends the processes (:meth:`ProcessSplits.close`); a process that has
        ended, or a pool stopped in the middle of a batch, has nothing to say.
        """
        if self.final_warnings is None:
            self.final_warnings = self._ask_warnings()
        return self.final_warnings

    def _ask_warnings(self) -> list[str]:
        pool = self.pool
        if pool.broken is not None or pool.stopped or pool.busy:
            return []
        found: list[str] = []
        for index, entry in enumerate(pool.processes):
            try:
                pool.send(index, ("warnings", self.node.id))
                if entry.connection.poll(60):  # an idle process answers at once; an upper bound only
                    found.extend(read_answer(entry.connection.recv_bytes())[1])
            except (SNetRuntimeError, EOFError, OSError):
                pass
        return found

    def stuck(self) -> SNetRuntimeError | None:
        """The error that ends the run when the records the replicas keep for ever are all that is left (each
        process says, after each batch, how many its replicas keep, and the first one)."""
        found = [entry for entry in self.kept.values() if entry is not None]
        if not found:
            return None
        _, span, record = found[0]
        return cannot_terminate(span, sum(count for count, _, _ in found), record)

    def export_states(self) -> list[dict]:
        """The state of this split's replicas in every process (a run that takes checkpoints, between batches)."""
        pool = self.pool
        if pool.broken is not None:
            raise pool.broken
        assert not pool.busy, "a snapshot while a batch of the split processes runs"
        parts = []
        for index, entry in enumerate(pool.processes):
            pool.send(index, ("export", self.node.id))
            try:
                parts.append(read_answer(entry.connection.recv_bytes())[1])
            except (EOFError, OSError):
                pool.broken = SNetRuntimeError(f"split process {index + 1} of {pool.count} ended "
                                               f"({entry.exit_text()}) while its replicas were saved for a "
                                               f"checkpoint; its standard error says why", self.node.span)
                raise pool.broken from None
        return parts

    def bytes_moved(self) -> int:
        return self.moved

    def stats(self) -> dict:
        return {"split": self.where, "records": self.records, "replicas": len(self.replicas),
                "boxes": {name: {"calls": c, "seconds": t, "histogram": list(h)}
                          for name, (c, t, h) in sorted(self.box_calls.items())}}

    def cancel(self) -> None:
        self.pool.stop()


_CHUNK = 1 << 20  # bytes read from a process's pipe at once
_SIZE = struct.Struct("!i")
_LARGE = struct.Struct("!Q")


def _messages(buffer: bytearray) -> list[bytes]:
    """Cut the complete messages off the front of ``buffer`` (``Connection.send_bytes``'s framing).

    A message is a 4-byte big-endian size and the bytes; a size of -1 is
    followed by an 8-byte size (messages of 2 GiB or more).  An incomplete
    message stays in the buffer for the next read.
    """
    found = []
    at = 0
    end = len(buffer)
    while end - at >= 4:
        (size,) = _SIZE.unpack_from(buffer, at)
        start = at + 4
        if size == -1:
            if end - start < 8:
                break
            (size,) = _LARGE.unpack_from(buffer, start)
            start += 8
        if end - start < size:
            break
        found.append(bytes(buffer[start:start + size]))
        at = start + size
    del buffer[:at]
    return found


def _box_span(graph: PropertyGraph, name: str) -> Any:
    for node in graph.nodes:
        if isinstance(node, BoxNode) and node.name == name:
            return node.span
    return None


def _shown(record: Record, limit: int = 300) -> str:
    from snet.recordio.jsonl import format_record_jsonl

    try:
        text = format_record_jsonl(record)
    except Exception:
        text = repr(record)
    return text if len(text) <= limit else text[:limit - 3] + "..."



__all__ = ["ProcessSplits", "ProcessSplitRunner", "owner"]
