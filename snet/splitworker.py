"""A split process: the replicas of its share of the tag values, kept alive between batches.

One process of :mod:`snet.splitproc` serves every split that runs in the
split processes.  It holds, per split node, a :class:`ReplicaTable`: a
:class:`~snet.reference.ReferenceEngine` for the whole program (lowered in
the process, without an executor, so the split's operand is built by the
same machinery as in a local run) and the live instance tree of every
replica it owns, keyed by (split instance, tag value).  A replica's
synchro-cells therefore stay where they are between batches: nothing is
pickled but the records going in and out.  An operand without state (no
synchro-cell, no initialiser) needs one instance tree only: any replica
gives the same outputs.

The conversation with the parent, one pickled message each way per event
over the process's pipe:

* process -> parent, once: ``("ready",)`` when the box functions and the
  program are loaded, or ``("failed", message)`` (the process then ends);
* parent -> process: ``("split", node_id, skip_errors, restore)`` once per
  split node (``restore``: None, or in a run that takes checkpoints the
  state dict its replicas resume from, :mod:`snet.checkpoint.state`),
  then ``("run", node_id, items, paths)`` per batch, ``items`` a list of
  ``(key, record, replica)`` in key order (``key`` the parent's
  ``(seq, instance, value)``, ``replica`` the ``(instance, value)`` whose
  tree the record enters, None for an operand without state) and
  ``paths``, in a run that takes checkpoints, the checkpoint path of each
  replica new to the process (the path of the instance's own replica, a
  star's say, then ``(split, value)``), where it is built;
* process -> parent: ``("out", key, outputs, failures)`` after each item,
  then ``("end", box_calls, stuck, guards)`` after the batch (``stuck``:
  None, or ``(count, span, first record)`` of the records that stay in a
  synchro-cell star of the node's replicas for ever; ``guards``: the
  retries and timeouts of each box given them, since the last batch).  A run-time error
  is sent as ``("error", key, report)`` and ends the batch (the run is
  failing); ``failures`` are the records skipped under ``on_error``
  "skip", as ``(error record, report)``;
* at a checkpoint's quiescent point, ``("export", node_id)`` is answered
  with ``("state", state)``: the node's replicas, their paths as a run
  without split processes has them;
* at the end of the run, ``("warnings", node_id)`` is answered with
  ``("warnings", texts)``: the synchro-cells of the node's replicas that
  hold records and never fired (computed once, not after every batch).

The parent learns which record a dead process was on from the ``"out"``
messages (the first item without one); which box it was calling, from a
shared slot the process writes before every box call (:func:`announcing`).
"""

from __future__ import annotations

import functools
import inspect
import os
import pickle
import select
import signal
import sys
import threading
import time
from typing import Any, Callable

from snet.core.guard import Guard, GuardCounters, apply_guards
from snet.errors import SNetError, SNetRuntimeError
from snet.spg.lower import lower
from snet.reference import ReferenceEngine
from snet.spg.nodes import PropertyGraph
from snet.splitexec import CollectingPolicy, ErrorReport

Record = dict
PROTOCOL = 5


class ReplicaTable:
    """The replicas of one split node that this process owns, alive between batches."""

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable], split_id: int, skip_errors: bool,
                 restore: dict | None = None):
        self.policy = CollectingPolicy() if skip_errors else None
        plan = lower(graph, boxes, on_error=self.policy)
        self.split_id = split_id
        self.operand = plan.nodes[split_id].children[0]
        self.span = graph.nodes[split_id].span
        self.engine = ReferenceEngine(plan, resident_replicas=True)
        self.replicas: dict[Any, tuple] = {}  # the replica of each tag value (None for all of a stateless operand)
        self.paths: dict[Any, tuple] = {}  # (checkpoints) where each new replica is built, until it is
        self.checkpoints = None
        if restore is not None:  # the run takes checkpoints: the replicas are built at their paths, and restored
            from snet.checkpoint.reference import ReferenceCheckpoints

            self.checkpoints = ReferenceCheckpoints(self.engine, restore)

    def feed(self, replica: Any, record: Record) -> list[Record]:
        """The outputs of ``record`` in replica ``replica``, which is built (initialisers first) if new; after
        a run-time error the engine holds nothing of that record."""
        target = self.replicas.get(replica)
        if target is None:
            # (the path of the split's replica for its tag value, as a run without split processes has it)
            path = self.paths.pop(replica, ()) if self.checkpoints is not None else ()
            target = self.replicas[replica] = self.engine.replica(self.operand, path)
            return self.engine.feed(target, record, fire=True)
        return self.engine.feed(target, record)

    def export_state(self) -> dict:
        """The replicas' part of a snapshot; the records parked for ever in a synchro-cell star with it (a resumed
        run keeps them in its engine, which ends the run with the same error)."""
        assert self.checkpoints is not None
        return self.checkpoints.export_state()

    def failures(self) -> list[tuple[dict, ErrorReport]]:
        if self.policy is None:
            return []
        caught, self.policy.caught = self.policy.caught, []
        return caught


def announcing(index: int, function: Callable, slot: Any) -> Callable:
    """``function`` that writes ``index + 1`` into the shared ``slot`` while it runs (0 after it)."""
    if inspect.iscoroutinefunction(function):
        @functools.wraps(function)
        async def wrapped_async(*args: Any, **kwargs: Any) -> Any:
            slot.value = index + 1
            try:
                return await function(*args, **kwargs)
            finally:
                slot.value = 0
        return wrapped_async

    @functools.wraps(function)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        slot.value = index + 1
        try:
            return function(*args, **kwargs)
        finally:
            slot.value = 0
    return wrapped


def end_with(parent: int) -> None:
    """End this process as soon as process ``parent`` (the run's) ends, whatever this process is doing.

    A split process is a child of the fork server, not of the run, and the
    fork server lives as long as its children do; so a watcher thread waits
    on the run's process itself (a pidfd on Linux, else a look every half
    second) and ends this process, even in the middle of a box call, when
    the run was killed outright.
    """
    def watch() -> None:
        try:
            fd = os.pidfd_open(parent)
        except (AttributeError, OSError):  # no pidfd here, or the run has ended already
            fd = None
        if fd is not None:
            select.select([fd], [], [])
        else:
            while _alive(parent):
                time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="snet-split-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def serve(connection: Any, parent: int, path: list[str], shipped: dict[str, tuple], graph_bytes: bytes,
          box_names: list[str], guards: dict[str, Guard], slot: Any) -> None:
    """A split process: answer the parent's messages (see the module docstring) until its pipe ends; the boxes
    in ``guards`` are called through their timeout and retries (:mod:`snet.core.guard`), as in the parent."""
    from snet.core.processes import load_functions

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it ends the processes
    end_with(parent)
    for entry in reversed(path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    send = connection.send_bytes
    try:
        functions = load_functions(shipped)
        graph: PropertyGraph = pickle.loads(graph_bytes)
    except Exception as e:  # the parent raises it as a start-up error
        message = str(e).removeprefix("error: ") if isinstance(e, SNetError) else f"{type(e).__name__}: {e}"
        send(_dumps(("failed", message)))
        return
    send(_dumps(("ready",)))
    boxes, counters = apply_guards({name: announcing(box_names.index(name), f, slot) for name, f in functions.items()},
                                   guards)
    tables: dict[int, ReplicaTable] = {}
    while True:
        try:
            message = pickle.loads(connection.recv_bytes())
        except (EOFError, OSError):
            return  # the run is over
        if message[0] == "split":
            _, node_id, skip_errors, restore = message
            tables[node_id] = ReplicaTable(graph, boxes, node_id, skip_errors, restore)
        elif message[0] == "run":
            _, node_id, items, paths = message
            tables[node_id].paths.update(paths)
            run_items(tables[node_id], items, send, counters)
        elif message[0] == "warnings":
            send(_dumps(("warnings", tables[message[1]].engine.termination_warnings())))
        elif message[0] == "export":
            send(_dumps(("state", tables[message[1]].export_state())))


def run_items(table: ReplicaTable, items: list[tuple], send: Callable[[bytes], Any],
              counters: GuardCounters | None = None) -> None:
    """Feed ``items`` to their replicas in order, sending each one's outputs; an error ends the batch."""
    engine = table.engine
    engine.box_calls = {}
    for key, record, replica in items:
        try:
            outputs = table.feed(replica, record)
        except SNetRuntimeError as e:
            send(_dumps(("error", key, ErrorReport.of(e))))
            break
        try:
            data = _dumps(("out", key, outputs, table.failures()))
        except Exception as e:  # an output that cannot travel fails the run, naming the split
            error = SNetRuntimeError(f"an output record of the split cannot be sent back from its split process "
                                     f"(records travel pickled): {type(e).__name__}: {e}", table.span)
            send(_dumps(("error", key, ErrorReport.of(error))))
            break
        send(data)
    stuck = None
    if engine.parked:  # records that stay in a synchro-cell star for ever: the run cannot end (the parent says so)
        node, record = engine.parked[0]
        stuck = (len(engine.parked), node.span, record)
    send(_dumps(("end", engine.box_calls, stuck, counters.take() if counters is not None else {})))


def _dumps(message: tuple) -> bytes:
    """Pickle a message; a value plain pickle refuses (a lambda in an output) goes by cloudpickle."""
    try:
        return pickle.dumps(message, PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        import cloudpickle

        return cloudpickle.dumps(message, protocol=PROTOCOL)


__all__ = ["ReplicaTable", "run_items", "serve"]
