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
import sys
import threading
from typing import Any, Callable, Iterable, Iterator, Mapping

from snet.backends import Execution, start
from snet.core.boxes import bind_boxes, resolve_box_sources
from snet.errors import SNetError, SNetUsageError
from snet.options import RunOptions
from snet.recordio.inputs import check_input, checked_inputs
from snet.spg.nodes import PropertyGraph
from snet.stats import RunStats

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

    def __repr__(self) -> str:
        return f"<snet.Network {self.name} {self.signature}; boxes: {', '.join(sorted(self.boxes)) or 'none'}>"

    def to_dot(self, *, compact: bool = False, left_to_right: bool = False) -> str:
        """The drawing of the network as Graphviz DOT text (as ``snet graph`` writes it)."""
        from snet.spg.dot import to_dot

        return to_dot(self.graph, compact=compact, left_to_right=left_to_right)

    def _repr_html_(self) -> str:
        """What a notebook shows: the signature, the boxes and where they come from, the compact drawing."""
        import html
        import shutil
        import subprocess

        rows = "".join(f"<tr><td><code>{html.escape(name)}</code></td><td>{html.escape(_origin(function))}</td></tr>"
                       for name, function in sorted(self.boxes.items()))
        parts = [f"<p><b>net {html.escape(self.name)}</b> <code>{html.escape(self.signature)}</code></p>",
                 f"<table><tr><th>box</th><th>function</th></tr>{rows}</table>" if rows else "<p>no boxes</p>"]
        dot = shutil.which("dot")
        if dot is None:
            parts.append("<p><i>install Graphviz (its dot program) to see the drawing here</i></p>")
        else:
            done = subprocess.run([dot, "-Tsvg"], input=self.to_dot(compact=True), capture_output=True, text=True,
                                  timeout=60)
            if done.returncode == 0 and "<svg" in done.stdout:
                parts.append(done.stdout[done.stdout.index("<svg"):])
        return "\n".join(parts)

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

    def session(self, **run_options: Any) -> "Session":
        """Start a long-running session (see :class:`Session`); takes the options of :meth:`run`."""
        return Session(self, RunOptions.from_keywords(**run_options))


def _origin(function: Callable) -> str:
    module = getattr(function, "__module__", None) or "?"
    name = getattr(function, "__qualname__", None) or type(function).__name__
    path = getattr(sys.modules.get(module), "__file__", None)
    return f"{name} in {path or module}"


class _LoggedExecution(Execution):
    """Passes an execution through, logging its termination warnings."""

    def __init__(self, inner: Execution):
        super().__init__()
        self.inner = inner
        self.warnings = inner.warnings

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
        return self.inner.stats()


_END = object()


class Session:
    """One run of a network kept up for a service.

    ``feed(record)`` hands records in, ``poll()`` returns the outputs ready
    now, ``get(timeout)`` waits for one, iterating the session yields outputs
    until the network has terminated after ``close()``.  ``close()`` ends the
    input, waits for the network to terminate and returns the outputs not
    taken yet.  An error in the network is raised from the next call.

    The network runs in a background thread that pulls fed records from a
    queue, so the engine sees an ordinary (blocking) input stream.
    """

    def __init__(self, network: Network, options: RunOptions):
        self._inputs: queue.Queue = queue.Queue()
        self._outputs: queue.Queue = queue.Queue()
        self._error: BaseException | None = None
        self._closed = False
        self._stop = False
        self._done = threading.Event()
        self.fed = 0
        self._net_name = network.name
        self.warnings: list[str] = []
        self._execution = network.execute(self._input_stream(), options)
        self._thread = threading.Thread(target=self._pump, name="snet-session", daemon=True)
        self._thread.start()

    def _input_stream(self) -> Iterator[Record]:
        while True:
            item = self._inputs.get()
            if item is _END or self._stop:
                return
            yield item

    def _pump(self) -> None:
        try:
            for record in self._execution:
                self._outputs.put(record)
        except BaseException as e:  # handed to the caller's thread
            self._error = e
        finally:
            self.warnings = list(self._execution.warnings)
            self._done.set()
            self._outputs.put(_END)

    def _check(self) -> None:
        """Raise the run's error: from the first call after it on, every call raises it again."""
        if self._error is not None:
            raise self._error

    def feed(self, record: Mapping) -> None:
        """Hand one record to the network."""
        if self._closed:
            raise SNetUsageError("session is closed")
        self._check()
        self._inputs.put(dict(check_input(record, self.fed + 1)))
        self.fed += 1

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

    def close(self, timeout: float | None = None) -> list[Record]:
        """End the input, wait for termination, return the outputs not yet taken."""
        if not self._closed:
            self._closed = True
            self._inputs.put(_END)
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
