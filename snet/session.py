"""A long-running session of a network: ``Network.session()`` (interfaces.md §4 "Services").

See docs/services.md for what a request's outputs are, ``max_pending`` and
``on_error``; :mod:`snet.requests` for how engines follow an input.
"""

from __future__ import annotations

import queue
import threading
import time
import weakref
from concurrent.futures import Future
from typing import Any, Iterable, Iterator, Mapping

from snet.errors import SNetError, SNetRuntimeError, SNetUsageError
from snet.options import RunOptions
from snet.recordio.inputs import check_input
from snet.requests import NO_INPUT_YET, Request
from snet.stats import RunStats

Record = dict
INPUT_WAIT = 0.01  # seconds the input stream waits for the caller before it says "nothing yet"

_END = object()


class _Run:
    """What a session's threads share: the input queue, the output queue, the tracked inputs, the end.

    The runtime's threads (the pump, the engine's workers) reach only this
    object, never the :class:`Session`, so a session dropped without
    ``close()`` is collected, and its finaliser ends the input: the network
    processes what it accepted, then every thread of the run ends.

    Admission and the end of the input are one atomic step under ``room``'s
    lock: a record is either queued before the end marker (and processed),
    or refused with "session is closed"; never queued after the marker.
    """

    def __init__(self, listener: Any, max_pending: int | None):
        self.max_pending = max_pending
        self.inputs: queue.Queue = queue.Queue()
        self.outputs: queue.Queue = queue.Queue()
        self.error: BaseException | None = None
        self.closed = False
        self.stop = False
        self.done = threading.Event()
        self.room = threading.Condition(threading.Lock())  # guards live, closed and admission
        self.live: set[Request] = set()  # tracked inputs not done yet
        self.fed = 0
        self.warnings: list[str] = []
        self.listener = listener
        self.execution: Any = None
        self.finalizer: weakref.finalize | None = None  # the session's: ends the input of a session dropped open

    def input_stream(self) -> Iterator[Any]:
        # Waits a little for the caller, then says "nothing yet" (NO_INPUT_YET), so that an engine
        # whose only worker reads the input still finishes work that comes back from elsewhere
        # (async box calls, split executor batches) while the caller is quiet.
        inputs = self.inputs
        while True:
            try:
                item = inputs.get(timeout=INPUT_WAIT)
            except queue.Empty:
                if self.stop:
                    return
                yield NO_INPUT_YET
                continue
            if item is _END or self.stop:
                return
            yield item

    def pump(self) -> None:
        listener = self.listener
        deliver = listener.output if listener is not None else self.outputs.put
        try:
            for record in self.execution:
                deliver(record)
        except BaseException as e:  # handed to the caller's thread
            self.error = e
        finally:
            # The run is over: nothing left for the session's finalizer to end.  Left registered, it would
            # hold this run, and through the run's error (whose traceback holds the frames that raised it,
            # the caller's with the session among them) the session too, for as long as the process lives.
            if self.finalizer is not None:
                self.finalizer.detach()
            self.warnings = list(self.execution.warnings)
            self.done.set()
            self.abandon_live()
            self.outputs.put(_END)
            if listener is not None:
                listener.ended()

    def abandon_live(self) -> None:
        """The run is over: every tracked input not done yet fails (never a future that hangs)."""
        error = self.error or SNetRuntimeError(
            "the session ended before this input was done" + (" (it was aborted)" if self.stop else ""))
        with self.room:
            live = list(self.live)
            self.room.notify_all()
        for request in live:
            request.abandon(error)

    def check(self) -> None:
        """Raise the run's error: from the first call after it on, every call raises it again."""
        if self.error is not None:
            raise self.error

    def finished(self, request: Request) -> None:
        with self.room:
            self.live.discard(request)
            self.room.notify()
        if self.listener is not None:
            self.listener.room()

    def admit(self, record: Mapping, future: Future | None, timeout: float | None) -> None:
        """Check ``record``, wait for room under ``max_pending``, and queue it: all before the end, or raise."""
        with self.room:
            self.refuse_if_over()
            checked = dict(check_input(record, self.fed + 1))
            if future is None and self.max_pending is None:
                self.inputs.put(checked)  # untracked: no cost per record inside the network
                self.fed += 1
                return
            if self.max_pending is not None:
                deadline = None if timeout is None else time.monotonic() + timeout
                while len(self.live) >= self.max_pending and not self.done.is_set() and not self.closed:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise TimeoutError(f"max_pending: {self.max_pending} inputs are inside the network and "
                                           f"none was done within {timeout} s")
                    self.room.wait(left)
                self.refuse_if_over()
            request = Request(checked, future, self.finished)
            self.live.add(request)
            self.inputs.put(request)
            self.fed += 1

    def refuse_if_over(self) -> None:
        """Raise the run's error, or "session is closed" once the input has ended (``room`` held)."""
        self.check()
        if self.closed or self.done.is_set():
            raise SNetUsageError("session is closed: no more input is accepted after close(), end_input() "
                                 "or abort()")

    def end_input(self) -> None:
        """No more input: the end marker follows every record accepted so far, and no record follows it."""
        with self.room:
            if not self.closed:
                self.closed = True
                self.inputs.put(_END)
                self.room.notify_all()  # a caller waiting for room is refused now


class Session:
    """One run of a network kept up for a service.

    ``submit(record)`` hands in one input and returns a future of the list
    of its outputs; ``feed(record)`` hands in one input whose outputs join
    the session's output stream: ``poll()`` returns the outputs ready now,
    ``get(timeout)`` waits for one, iterating the session yields outputs
    until the network has terminated after ``close()``.  ``close()`` ends
    the input, waits for the network to terminate and returns the outputs
    not taken yet.  With ``on_error="stop"`` (the default) an error in the
    network is raised from the next call, and from every call after it.

    ``max_pending``: at most this many inputs inside the network at once
    (fed or submitted, not yet done: see :mod:`snet.requests`); ``feed``
    and ``submit`` block while it is reached, and raise ``TimeoutError``
    when their ``timeout`` passes first.

    A ``feed`` or ``submit`` that returns has its record accepted: its
    outputs are delivered (or its future fails with the run's error); one
    that comes after ``close()``, ``end_input()`` or ``abort()``, from any
    thread, raises ``SNetUsageError`` ("session is closed").

    The network runs in a background thread that pulls fed records from a
    queue, so the engine sees an ordinary (blocking) input stream.  A
    session dropped without ``close()`` ends its input when it is
    collected: what it accepted is processed and its threads end.
    """

    def __init__(self, network: Any, options: RunOptions, max_pending: int | None = None,
                 listener: Any = None, checkpointing: Any = None):
        if max_pending is not None and (not isinstance(max_pending, int) or isinstance(max_pending, bool)
                                        or max_pending < 1):
            raise SNetUsageError(f"max_pending must be an int >= 1 or None, not {max_pending!r}")
        self.max_pending = max_pending
        # An asynchronous front (snet.aio): told of each output, of room under max_pending, and of the end,
        # from the runtime's threads; outputs then go to it instead of the queue.
        self._run = run = _Run(listener, max_pending)
        self._outputs = run.outputs
        self._net_name = getattr(network, "name", "?")
        self._checkpointing = checkpointing  # snet.checkpoint: net.session(checkpoint=DIR)
        stream: Any = run.input_stream()
        if checkpointing is not None:
            from snet.checkpoint.gate import InputGate

            stream = InputGate(stream, checkpointing)
        run.execution = self._execution = network.execute(stream, options)
        # A session dropped open ends its input (the run detaches this when it ends: _Run.pump).
        run.finalizer = weakref.finalize(self, run.end_input)
        self._thread = threading.Thread(target=run.pump, name="snet-session", daemon=True)
        self._thread.start()

    def checkpoint(self, timeout: float | None = None) -> None:
        """Commit a snapshot of the session's state to its directory (``net.session(checkpoint=DIR)``).

        The snapshot covers every input fed or submitted before the call,
        including those still queued for the network: once the network has
        taken them, input is held until every record inside it has left or
        is stored in a synchro-cell; the state is then written, and the
        session goes on.  A session started again with the same directory
        resumes from it; what its callers submitted after the call is theirs
        to submit again.
        """
        checkpointing = self._checkpointing
        if checkpointing is None:
            raise SNetUsageError("this session takes no checkpoints: start it with net.session(checkpoint=DIR)")
        self._check()
        taken = checkpointing.request(covering=checkpointing.source.start + self._run.fed)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not taken.wait(0.05):
            self._check()
            if self._run.done.is_set():
                raise SNetUsageError("session is closed: no checkpoint after its network has terminated")
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"no quiescent point within {timeout} s: records stayed in flight")

    @property
    def fed(self) -> int:
        """Inputs accepted so far."""
        return self._run.fed

    @property
    def warnings(self) -> list[str]:
        return self._run.warnings

    @property
    def _live(self) -> set:
        return self._run.live

    @property
    def _error(self) -> BaseException | None:
        return self._run.error

    def _check(self) -> None:
        self._run.check()

    def _admit(self, record: Mapping, future: Future | None, timeout: float | None) -> None:
        self._run.admit(record, future, timeout)

    def feed(self, record: Mapping, timeout: float | None = None) -> None:
        """Hand one record to the network; its outputs come from :meth:`get`, :meth:`poll` or iteration.

        Blocks while ``max_pending`` inputs are inside the network; raises
        ``TimeoutError`` if no room was made within ``timeout`` seconds.
        """
        self._admit(record, None, timeout)

    def submit(self, record: Mapping, timeout: float | None = None) -> Future:
        """Hand one record to the network; returns a future of the list of its outputs.

        The future is done once nothing that came from this input is inside
        the network (see :mod:`snet.requests`); it holds the outputs in the
        order they left the network, or the error its record failed with
        (``on_error="skip"``), or the run's error.  Its outputs do not join
        the session's output stream.  Blocks as :meth:`feed` does.
        """
        future: Future = Future()
        self._admit(record, future, timeout)
        return future

    def feed_many(self, records: Iterable[Mapping]) -> None:
        for record in records:
            self.feed(record)

    def poll(self) -> list[Record]:
        """The outputs produced so far and not yet taken (never blocks).

        After a run-time error the outputs that reached the output before it
        are returned first; the call that finds none raises the error.
        """
        out = []
        while True:
            try:
                item = self._outputs.get_nowait()
            except queue.Empty:
                break
            if item is _END:
                self._outputs.put(_END)
                break
            out.append(item)
        if not out:
            self._check()
        return out

    def get(self, timeout: float | None = None) -> Record | None:
        """The next output, waiting up to ``timeout`` seconds; None on timeout or after the end."""
        try:
            item = self._outputs.get(timeout=timeout)
        except queue.Empty:
            self._check()
            return None
        if item is _END:
            self._outputs.put(_END)
            self._check()
            return None
        return item

    def __iter__(self) -> Iterator[Record]:
        """Outputs as they come, until the network terminates (after :meth:`close`)."""
        while True:
            item = self._outputs.get()
            if item is _END:
                self._outputs.put(_END)
                self._check()
                return
            yield item

    def end_input(self) -> None:
        """No more input: the network terminates once it has processed what it has (does not wait)."""
        self._run.end_input()

    def close(self, timeout: float | None = None) -> list[Record]:
        """End the input, wait for termination, return the outputs not yet taken."""
        self.end_input()
        if not self._run.done.wait(timeout):
            raise SNetError("session did not terminate in time")
        self._thread.join()
        out = []
        while True:
            item = self._outputs.get()
            if item is _END:
                self._outputs.put(_END)
                break
            out.append(item)
        self._check()
        return out

    def abort(self) -> None:
        """Stop at once: no more input is read, the run is closed, outputs not taken are dropped.

        Does not wait for a box call that is running (the engine abandons it
        after a second at most, see ``Execution.close``).
        """
        run = self._run
        run.stop = True
        run.end_input()
        self._execution.close()
        run.abandon_live()  # at once, also while a box call still runs: no future waits for it
        self._thread.join(2.0)

    def stats(self) -> RunStats:
        """The session's figures so far: a :class:`~snet.stats.RunStats` snapshot (docs/embedding.md, Statistics).

        What ``snet run --stats`` and ``--top`` show: records in and out,
        per box calls, seconds, a call-time histogram with its
        ``p99``, and on FRONT the records queued for the box now and its
        concurrency limit; the records held in synchro-cells, the process's
        resident memory.  Cheap (the engine's own counters, read without
        stopping it): call it as often as a display redraws.  A notebook
        shows the snapshot as the per-box table of ``--top``.
        """
        return self._execution.stats()

    @property
    def metrics_url(self) -> str | None:
        """Where the session serves its figures (``metrics_port=``): ``http://127.0.0.1:PORT/metrics``, or None."""
        return getattr(self._execution, "metrics_url", None)

    def __repr__(self) -> str:
        run = self._run
        state = "failed" if run.error is not None else "finished" if run.done.is_set() else \
            "closing" if run.closed else "open"
        return f"<snet.Session of net {self._net_name} ({state}): {self.fed} fed, {self._execution!r}>"

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
