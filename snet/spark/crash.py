"""A Python worker that dies in a Spark task: find the box and the record, keep the outputs before it.

A box that calls ``os._exit``, segfaults in an extension or is killed by the
kernel takes its Python worker with it.  Spark then fails the task ("Python
worker exited unexpectedly (crashed)"), retries it where attempts are left,
and finally fails the job with a text that names neither the box nor the
record, and the outputs of the batch's other records are lost.

So when a split's job fails and the failure looks like a dead worker
(:func:`looks_like_crash`), the driver runs the same batch once more as a
*diagnosis* job (:func:`rdd_partition` / :func:`arrow_batches`).  Its tasks
are the original tasks, byte for byte (each replica's state from the last
successful batch, the same records), but each task runs its groups in a
forked child process of the Python worker, which tells the worker over a
pipe, as it goes:

* ``("item", key)`` before a record is fed to its replica, and
  ``("out", key, outputs)`` after it;
* ``("box", name, arguments)`` before every box call (the boxes of the
  diagnosis host are wrapped to say so);
* ``("done", index, result)`` after each group, with the group's
  :class:`~snet.spark.replicas.GroupResult` (state bytes included).

If the child dies, the Python worker, still alive, knows the record being
fed, the box being called with its arguments, and the outputs of the
records before it; it returns the crashed group as a result with an
:class:`~snet.spark.replicas.ErrorReport` (``box 'f' ended its Python worker
(exit status 3) on input (a=3, <k>=1)``), then runs the task's remaining
groups in a new child.  The driver then handles the batch as any batch with
a run-time error: the outputs of every input before the failing one are
written, and the run fails with exit status 1 and that message.

Under ``on_error`` "skip" the crashed record is skipped instead (an error
record in the group's failures, a ``(key, [])`` entry in its outputs) and the
group goes on in a new child without it: from the next record for a replica
without state (the outputs before it stand), from the replica's state before
the batch for one with state (the state the dead child held is lost), so
the outputs are those of a run without that record (:func:`_without`).

If the diagnosis job completes without a crash (the worker was killed from
outside, memory ran short once), its results are the batch's results: they
are exact, since a task's input is the state of the last successful batch.
A warning says so.  If the diagnosis job fails too, the original error is
reported.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import pickle
import signal
import struct
import traceback
from typing import Any, Callable

from snet.errorpolicy import error_record
from snet.spark.replicas import (ErrorReport, Group, GroupResult, ReplicaHost, TaskInput, TaskOutput, dumps, loads,
                                 _KEEP_HOSTS)

log = logging.getLogger("snet.spark")

# Texts of Spark's errors when a Python worker or its executor died (not a Python exception in the task).
CRASH_MARKERS = ("Python worker exited unexpectedly", "crashed", "EOFException", "ExecutorLostFailure",
                 "Connection reset", "worker lost", "SIGSEGV", "SIGKILL")
_HEADER = struct.Struct("!I")


def looks_like_crash(text: str) -> bool:
    """True for a job failure caused by a dead Python worker or executor."""
    return any(marker in text for marker in CRASH_MARKERS)


def crash_summary(text: str) -> str:
    """The part of Spark's failure text that says what died (for the error's detail)."""
    for line in text.splitlines():
        for marker in CRASH_MARKERS:
            at = line.find(marker)
            if at >= 0:
                start = line.rfind(": ", 0, at)
                end = line.find(". ", at)
                return line[start + 2 if start >= 0 else 0:end if end >= 0 else len(line)].strip()[:300]
    return text.strip().splitlines()[0][:300] if text.strip() else ""


# -- child to worker -------------------------------------------------------------

class _Channel:
    """Length-prefixed pickles over a pipe, from the child to its Python worker."""

    def __init__(self, fd: int):
        self.fd = fd

    def send(self, *message: Any) -> None:
        data = dumps(message)  # cloudpickle for values plain pickle refuses
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]


def _read_messages(fd: int):
    buffer = bytearray()
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        buffer += chunk
        while len(buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(buffer)
            if len(buffer) < _HEADER.size + size:
                break
            data = bytes(buffer[_HEADER.size:_HEADER.size + size])
            del buffer[:_HEADER.size + size]
            try:
                yield pickle.loads(data)
            except Exception:  # a message cut short by the child's death
                return


_CHANNEL: list[_Channel] = []  # the child's channel, set after the fork


def _shown(value: Any, limit: int = 80) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _announcing(name: str, labels: tuple[str, ...], function: Callable) -> Callable:
    """``function`` that first tells the worker which box runs on what."""

    def announce(args, kwargs):
        if _CHANNEL:
            parts = [f"{label}={_shown(value)}" for label, value in zip(labels, args)]
            parts += [f"{key}={_shown(value)}" for key, value in kwargs.items()]
            _CHANNEL[0].send("box", name, ", ".join(parts))

    if inspect.iscoroutinefunction(function):
        @functools.wraps(function)
        async def wrapped_async(*args, **kwargs):
            announce(args, kwargs)
            return await function(*args, **kwargs)
        return wrapped_async

    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        announce(args, kwargs)
        return function(*args, **kwargs)
    return wrapped


# -- the diagnosis host ------------------------------------------------------------

_HOSTS: dict[str, ReplicaHost] = {}


def diagnosis_host(run_id: str, context: Callable[[], bytes]) -> ReplicaHost:
    """A host of the run whose boxes announce their calls (cached per Python worker)."""
    host = _HOSTS.get(run_id)
    if host is None:
        from snet.spg.nodes import BoxNode

        ctx = pickle.loads(context())
        labels = {n.name: n.arguments for n in ctx.graph.nodes if isinstance(n, BoxNode)}
        table = {name: _announcing(name, labels.get(name, ()), f) for name, f in ctx.bind().items()}
        host = ReplicaHost(ctx.graph, table, ctx.split_node_id, ctx.skip_errors)
        host.graph = ctx.graph
        host.split_id = ctx.split_node_id
        while len(_HOSTS) >= _KEEP_HOSTS:
            _HOSTS.pop(next(iter(_HOSTS)))
        _HOSTS[run_id] = host
    return host


def _box_span(host: ReplicaHost, name: str):
    from snet.spg.nodes import BoxNode

    for node in host.graph.nodes:
        if isinstance(node, BoxNode) and node.name == name:
            return node.span
    return None


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit status {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else f"wait status {status}"


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this forked child when the thread that forked it ends (Linux; elsewhere nothing).

    Without it, a child whose Python worker was killed outright (Spark stopping a task, an executor lost) went
    on until its next write to the pipe failed, which a long box call could put off for as long as it ran.
    ``parent`` is the forking process: if it ended before the request took effect, the child ends now.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):  # no prctl here
        return
    if os.getppid() != parent:
        os._exit(0)


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def child_main(fd: int, body, parent: int) -> None:
    """The frame of a forked child: ``body(channel)`` with its channel registered, then ``os._exit``.

    A Python error in ``body`` is not what kills a worker: it is sent as ``("fail", traceback)``
    and the child exits with status 70.  ``parent``, the pid of the process that forked (taken before
    the fork), has the child die with it (:func:`_die_with_parent`).  Never returns.
    """
    status = 0
    try:
        _die_with_parent(parent)
        channel = _Channel(fd)
        _CHANNEL.append(channel)
        body(channel)
    except BaseException:
        try:
            _Channel(fd).send("fail", traceback.format_exc())
        except BaseException:
            pass
        status = 70
    finally:
        os._exit(status)


def _child(host: ReplicaHost, groups: list, first: int, fd: int, parent: int) -> None:
    """The forked child: run ``groups[first:]``, reporting as it goes; never returns."""

    def body(channel: _Channel) -> None:
        host.observer = lambda event, *rest: channel.send(event, *rest)
        host.engine.box_calls = {}
        for index in range(first, len(groups)):
            channel.send("start", index)
            result = host.run_group(groups[index])  # a run-time error of the network is a result
            channel.send("done", index, result, host.engine.box_calls)
            host.engine.box_calls = {}

    child_main(fd, body, parent)


def run_isolated(host: ReplicaHost, task: TaskInput, job_error: str = "") -> TaskOutput:
    """Run ``task``'s groups in forked children; a child's death becomes the crashed group's error.

    With ``on_error`` "skip" (``host.skip_errors``) the crashed record is skipped instead and its group goes
    on without it (:func:`_without`).
    """
    import time

    started = time.perf_counter()
    groups = list(task.groups)
    results: list[GroupResult] = []
    box_calls: dict[str, list] = {}
    # group index -> (outputs, failures) kept from runs of the group that a skipped crash cut short
    kept: dict[int, tuple[list, list]] = {}
    index = 0
    while index < len(groups):
        read_fd, write_fd = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
            os.close(read_fd)
            _child(host, groups, index, write_fd, parent)
        os.close(write_fd)
        current, key, box, outputs, failures = index, None, None, [], []
        failed = None
        try:
            for message in _read_messages(read_fd):
                kind = message[0]
                if kind == "start":
                    current, key, box, outputs, failures = message[1], None, None, [], []
                elif kind == "item":
                    key, box = message[1], None
                elif kind == "box":
                    box = (message[1], message[2])
                elif kind == "out":
                    outputs.append((message[1], message[2]))
                    failures.extend(message[3])
                elif kind == "done":
                    result = message[2]
                    if message[1] in kept:
                        earlier_outputs, earlier_failures = kept.pop(message[1])
                        result.outputs[:0] = earlier_outputs
                        result.failures[:0] = earlier_failures
                    results.append(result)
                    for name, (calls, seconds) in message[3].items():
                        entry = box_calls.setdefault(name, [0, 0.0])
                        entry[0] += calls
                        entry[1] += seconds
                    current = message[1] + 1
                elif kind == "fail":
                    failed = message[1]
        finally:
            os.close(read_fd)
            _, status = os.waitpid(pid, 0)
        if failed is not None:
            raise RuntimeError(f"the crash diagnosis of a split's batch failed:\n{failed}")
        if current >= len(groups):
            break
        group = groups[current]
        record = next((r for k, r, _fire in group.items if k == key), None)
        report = _report(host, key, record, box, _how(status), job_error)
        if host.skip_errors and record is not None:
            # skipped: the group runs again without the record, in a new child
            earlier_outputs, earlier_failures = kept.get(current, ([], []))
            skipped = (key[0], error_record(report.rebuild(), record, box[0] if box else None), report)
            none = [(key, [])]  # the skipped input has no outputs (engines wait for every input's entry)
            if host.stateful:  # the replica's state after the records before it died with the child: run them again
                kept[current] = (earlier_outputs + none, earlier_failures + [skipped])
                groups[current] = _without(group, key, 0)
            else:  # no state: the outputs so far stand, the group goes on after the record
                kept[current] = (earlier_outputs + outputs + none, earlier_failures + failures + [skipped])
                groups[current] = _without(group, key, [k for k, _r, _f in group.items].index(key))
            index = current
            continue
        earlier_outputs, _ = kept.pop(current, ([], []))
        results.append(GroupResult(group.instance, group.value, earlier_outputs + outputs, None, [], error=report))
        index = current + 1
    return TaskOutput(results, box_calls, time.perf_counter() - started)


def _without(group: Group, key, start: int) -> Group:
    """``group`` from item ``start`` on, without the item of ``key``.

    A replica that did not exist yet is made (its initialisers fired) at its
    first record: when that record is the one left out, the next one makes it.
    So a run that skips a crashed record gives what a run without that
    record gives.
    """
    items = group.items[start:]
    at = next(i for i, item in enumerate(items) if item[0] == key)
    fire = items[at][2]
    items = items[:at] + items[at + 1:]
    if fire and at < len(items):
        next_key, next_record, _ = items[at]
        items[at] = (next_key, next_record, True)
    return Group(group.instance, group.value, group.state, items)


def _report(host: ReplicaHost, key, record, box, how: str, job_error: str) -> ErrorReport:
    from snet.recordio.jsonl import format_record_jsonl

    try:
        shown = format_record_jsonl(record) if record is not None else "?"
    except Exception:
        shown = _shown(record, 300)
    if len(shown) > 300:
        shown = shown[:297] + "..."
    detail = (f"the split's input record: {shown}\n"
              f"the Spark job had failed: {job_error}\n"
              "(the batch ran again with each task's groups in a child process of the Python worker, "
              "to find the box and the record)")
    if box is not None:
        name, arguments = box
        return ErrorReport(key, "SNetBoxError", f"box '{name}' ended its Python worker ({how}) on input ({arguments})",
                           _box_span(host, name), detail, crash=True)
    span = host.graph.nodes[host.split_id].span
    return ErrorReport(key, "SNetRuntimeError", f"a Python worker of the split died ({how}) on its input record "
                       f"{shown}", span, detail, crash=True)


# -- executor entry points -----------------------------------------------------------

def run_payload(run_id: str, context: Callable[[], bytes], payload: bytes, job_error: str) -> bytes:
    task: TaskInput = loads(payload)
    return dumps(run_isolated(diagnosis_host(run_id, context), task, job_error))


def rdd_partition(run_id: str, broadcast, job_error: str, payloads):
    for payload in payloads:
        yield run_payload(run_id, lambda: broadcast.value, payload, job_error)


def arrow_batches(run_id: str, context: bytes, job_error: str, batches):
    import pyarrow as pa

    for batch in batches:
        column = batch.column(batch.schema.get_field_index("payload")).to_pylist()
        out = [run_payload(run_id, lambda: context, p, job_error) for p in column]
        yield pa.RecordBatch.from_arrays([pa.array(out, type=pa.binary())], names=["payload"])
