"""A long-running session of a network: ``Network.session()`` (interfaces.md §4 "Services").

See docs/services.md for what a request's outputs are, ``max_pending`` and
``on_error``; :mod:`snet.requests` for how engines follow an input.
"""

from __future__ import annotations

import queue
import threading
import time
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

    The network runs in a background thread that pulls fed records from a
    queue, so the engine sees an ordinary (blocking) input stream.
    """

    def __init__(self, network: Any, options: RunOptions, max_pending: int | None = None,
                 listener: Any = None):
        if max_pending is not None and (not isinstance(max_pending, int) or isinstance(max_pending, bool)
                                        or max_pending < 1):
            raise SNetUsageError(f"max_pending must be an int >= 1 or None, not {max_pending!r}")
        self.max_pending = max_pending
        self._inputs: queue.Queue = queue.Queue()
        self._outputs: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._closed = False
        self._stop = False
        self._done = threading.Event()
        self._room = threading.Condition(threading.Lock())  # guards _live; notified when an input is done
        self._live: set[Request] = set()  # tracked inputs not done yet
        self.fed = 0
        self.warnings: list[str] = []
        self._net_name = getattr(network, "name", "?")
        # An asynchronous front (snet.aio): told of each output, of room under max_pending, and of the end,
        # from the runtime's threads; outputs then go to it instead of the queue.
        self._listener = listener
        self._execution = network.execute(self._input_stream(), options)
        self._thread = threading.Thread(target=self._pump, name="snet-session", daemon=True)
        self._thread.start()

    def _input_stream(self) -> Iterator[Any]:
        # Waits a little for the caller, then says "nothing yet" (NO_INPUT_YET), so that an engine
        # whose only worker reads the input still finishes work that comes back from elsewhere
        # (async box calls, split executor batches) while the caller is quiet.
        while True:
            try:
                item = self._inputs.get(timeout=INPUT_WAIT)
            except queue.Empty:
                if self._stop:
                    return
                yield NO_INPUT_YET
                continue
            if item is _END or self._stop:
                return
            yield item

    def _pump(self) -> None:
        deliver = self._listener.output if self._listener is not None else self._outputs.put
        try:
            for record in self._execution:
                deliver(record)
        except BaseException as e:  # handed to the caller's thread
            self._error = e
        finally:
            self.warnings = list(self._execution.warnings)
            self._done.set()
            self._abandon_live()
            self._outputs.put(_END)
            if self._listener is not None:
                self._listener.ended()

    def _abandon_live(self) -> None:
        """The run is over: every tracked input not done yet fails (never a future that hangs)."""
        error = self._error or SNetRuntimeError(
            "the session ended before this input was done" + (" (it was aborted)" if self._stop else ""))
        with self._room:
            live = list(self._live)
            self._room.notify_all()
        for request in live:
            request.abandon(error)

    def _check(self) -> None:
        """Raise the run's error: from the first call after it on, every call raises it again."""
        if self._error is not None:
            raise self._error

    def _finished(self, request: Request) -> None:
        with self._room:
            self._live.discard(request)
            self._room.notify()
        if self._listener is not None:
            self._listener.room()

    def _admit(self, record: Mapping, future: Future | None, timeout: float | None) -> None:
        """Check ``record``, wait for room under ``max_pending``, and hand it to the network."""
        if self._closed:
            raise SNetUsageError("session is closed")
        self._check()
        checked = dict(check_input(record, self.fed + 1))
        if future is None and self.max_pending is None:
            self._inputs.put(checked)  # untracked: no cost per record inside the network
            self.fed += 1
            return
        request = Request(checked, future, self._finished)
        with self._room:
            if self.max_pending is not None:
                deadline = None if timeout is None else time.monotonic() + timeout
                while len(self._live) >= self.max_pending and not self._done.is_set():
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise TimeoutError(f"max_pending: {self.max_pending} inputs are inside the network and "
                                           f"none was done within {timeout} s")
                    self._room.wait(left)
            self._check()
            if self._done.is_set():
                raise SNetUsageError("session is closed")
            self._live.add(request)
        self._inputs.put(request)
        self.fed += 1

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
        if not self._closed:
            self._closed = True
            self._inputs.put(_END)

    def close(self, timeout: float | None = None) -> list[Record]:
        """End the input, wait for termination, return the outputs not yet taken."""
        self.end_input()
        if not self._done.wait(timeout):
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
        self._stop = True
        self._closed = True
        self._inputs.put(_END)
        self._execution.close()
        self._thread.join(2.0)

    def stats(self) -> RunStats:
        return self._execution.stats()

    def __repr__(self) -> str:
        state = "failed" if self._error is not None else "finished" if self._done.is_set() else \
            "closing" if self._closed else "open"
        return f"<snet.Session of net {self._net_name} ({state}): {self.fed} fed, {self._execution!r}>"

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
