"""The embedding API (interfaces.md §4).

>>> import snet
>>> net = snet.load("net.snet", boxes=my_module)          # doctest: +SKIP
>>> for out in net.run([{"a": 1}, {"a": 2}], workers=2):  # doctest: +SKIP
...     print(out)

A :class:`Network` is compiled and bound once and can be run any number of
times, one after another or at the same time: runs share only the immutable
property graph and the box functions.  For a long-running service,
:meth:`Network.session` keeps one run up: the caller feeds records and takes
outputs while the network stays alive, then closes it.

Options are checked before anything starts: ``run`` and ``session`` build a
:class:`~snet.options.RunOptions`, which refuses unknown keywords and values
out of range with a :class:`~snet.errors.SNetUsageError` naming the option.
``execute`` takes options already built (``snet run`` builds them from its
command line, to report errors in its own spelling).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Iterable, Iterator, Mapping

import attrs

from snet.backends import Execution, start
from snet.core.boxes import bind_boxes, resolve_box_sources
from snet.errors import SNetError, SNetRuntimeError, SNetUsageError
from snet.options import RunOptions
from snet.recordio.inputs import check_input, checked_inputs
from snet.requests import Request
from snet.spg.nodes import PropertyGraph
from snet.stats import RunStats

if TYPE_CHECKING:
    from snet.aio import AsyncSession

log = logging.getLogger("snet")

Record = dict


def load(source: str | os.PathLike, boxes: Any = None, *, net: str | None = None) -> "Network":
    """Compile a network and bind its boxes.

    Args:
        source: a path to a ``.snet`` file, or the program text itself.
        boxes: where the box functions are: a module, a dotted module name,
            a path to a ``.py`` file, a mapping from box name to function, or
            a list of these (searched in order).  Without it, ``NET.py``
            beside ``NET.snet`` is used when ``source`` is a path.
        net: the top-level net to run when the file has several.

    Raises:
        SNetCompileError: syntax, name or type errors (with every diagnostic).
        SNetBindingError: declared boxes missing from the box modules.
    """
    from snet.spg.build import compile_file, compile_source

    path: str | None = None
    if isinstance(source, os.PathLike):
        path = os.fspath(source)
    elif isinstance(source, str) and "\n" not in source and ";" not in source:
        path = source
    if path is not None:
        if not os.path.isfile(path):
            raise SNetUsageError(f"network file not found: {path}")
        graph = compile_file(path, net=net)
    else:
        graph = compile_source(str(source), "<string>", net=net)
    namespaces = resolve_box_sources(boxes, path)
    warnings: list[str] = []
    network = Network(graph, bind_boxes(graph, namespaces, warnings))
    for warning in warnings:
        log.warning("%s", warning)
    return network


class Network:
    """A compiled, bound network; run it with :meth:`run` or :meth:`session`."""

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable]):
        self.graph = graph
        self.boxes = boxes
        for warning in graph.warnings:
            log.warning("%s", warning)

    @property
    def name(self) -> str:
        return self.graph.net_name

    @property
    def signature(self) -> str:
        return self.graph.signature

    def run(self, records: Iterable[Mapping], *, workers: int | None = None, engine: str | None = None,
            throttle: tuple[float, float] | None = None, box_concurrency: int | Mapping[str, int] | None = None,
            **options: Any) -> Execution:
        """Run the network over ``records``; iterate the result for the outputs.

        Outputs stream back as they are produced: the first may arrive long
        before ``records`` is exhausted, and ``records`` may be endless.  The
        returned :class:`~snet.backends.Execution` also carries the
        termination ``warnings`` and ``stats()`` (a
        :class:`~snet.stats.RunStats`) once it is exhausted; use it as a
        context manager (or call ``close()``) to stop a run early.

        Args:
            records: any iterable of mappings in S-Net spelling.
            workers: worker threads (FRONT engine; default: the number of cores).
            engine: ``"front"`` (default) or ``"reference"``.
            throttle: ``(offset, factor)``: admit input only while
                ``inputs < offset + factor * outputs``.
            box_concurrency: concurrent calls per box instance: one number,
                or a mapping from box name to number.
            options: further :class:`~snet.options.RunOptions` fields.

        Raises:
            SNetUsageError: an unknown option or a value out of range,
                before the run starts.
        """
        run_options = RunOptions.from_keywords(workers=workers, engine=engine, throttle=throttle,
                                               box_concurrency=box_concurrency, **options)
        return self.execute(checked_inputs(records), run_options)

    def execute(self, records: Iterable[Mapping], options: RunOptions) -> Execution:
        """Run the network over ``records`` with options already built; as :meth:`run`.

        The records are not checked here: the callers (:meth:`run`, the
        record readers of ``snet run``) have checked them already.
        """
        return _LoggedExecution(start(options.engine, self.graph, self.boxes, records, options))

    def session(self, *, max_pending: int | None = None, **run_options: Any) -> "Session":
        """Start a long-running session (see :class:`Session`); takes the options of :meth:`run`."""
        return Session(self, RunOptions.from_keywords(**run_options), max_pending)

    def asession(self, *, max_pending: int | None = None, **run_options: Any) -> "AsyncSession":
        """A session for asyncio code: ``async with net.asession() as s: outs = await s.submit(r)``.

        See :class:`snet.aio.AsyncSession`; takes the options of :meth:`session`.
        Must be created inside a running event loop.
        """
        from snet.aio import AsyncSession

        return AsyncSession(self, RunOptions.from_keywords(**run_options), max_pending)

    def arun(self, records: Any, *, max_pending: int | None = 1024, **run_options: Any) -> AsyncIterator[Record]:
        """Run over ``records`` (an iterable or an async iterable) as an async iterator of the outputs.

        ``max_pending`` (default 1,024) bounds the inputs inside the network:
        an endless source is read only as fast as the network keeps up.
        """
        from snet.aio import arun

        return arun(self, records, RunOptions.from_keywords(**run_options), max_pending)


class _LoggedExecution(Execution):
    """Passes an execution through, logging its termination warnings."""

    def __init__(self, inner: Execution):
        super().__init__()
        self.inner = inner
        self.warnings = inner.warnings
        self.error_policy = inner.error_policy

    def __next__(self) -> Record:
        try:
            return next(self.inner)
        except StopIteration:
            for warning in self.warnings:
                log.warning("%s", warning)
            raise

    def ready(self) -> bool:
        return self.inner.ready()

    def close(self) -> None:
        self.inner.close()

    def stats(self) -> RunStats:
        stats = self.inner.stats()
        return attrs.evolve(stats, failures=self.failures) if self.failures else stats


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

    def __init__(self, network: Network, options: RunOptions, max_pending: int | None = None,
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
        # An asynchronous front (snet.aio): told of each output, of room under max_pending, and of the end,
        # from the runtime's threads; outputs then go to it instead of the queue.
        self._listener = listener
        self._execution = network.execute(self._input_stream(), options)
        self._thread = threading.Thread(target=self._pump, name="snet-session", daemon=True)
        self._thread.start()

    def _input_stream(self) -> Iterator[Any]:
        while True:
            item = self._inputs.get()
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

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
