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
import sys
import weakref
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence

import attrs

from snet.backends import Execution, start
from snet.core.boxes import bind_boxes, resolve_box_sources
from snet.errors import SNetBindingError, SNetUsageError
from snet.options import CompileOptions, RunOptions
from snet.recordio.inputs import checked_inputs
from snet.session import Session
from snet.spg.nodes import PropertyGraph
from snet.stats import RunStats
from snet.warningsummary import summarise

if TYPE_CHECKING:
    from snet.aio import AsyncSession

__all__ = ["load", "Network", "Session"]

log = logging.getLogger("snet")

Record = dict


def load(source: str | os.PathLike, boxes: Any = None, *, net: str | None = None, dialect: str = "standard",
         net_path: str | os.PathLike | Sequence[str | os.PathLike] = ()) -> "Network":
    """Compile a network and bind its boxes.

    Args:
        source: a path to a ``.snet`` file, or the program text itself.
        boxes: where the box functions are: a module, a dotted module name,
            a path to a ``.py`` file, a mapping from box name to function, or
            a list of these (searched in order).  Without it, ``NET.py``
            beside ``NET.snet`` is used when ``source`` is a path.
        net: the top-level net to run when the file has several.
        dialect: ``"standard"`` (default) or ``"rts"``, the reference
            distribution's dialect: inline box code, ``type t = t;``
            naming an outer ``t``, declared-only nets bound from other files.
        net_path: folders searched for ``NAME.snet`` to bind a declared-only
            net ``NAME`` (rts dialect), after the program's own folder.

    Raises:
        SNetCompileError: syntax, name or type errors (with every diagnostic).
        SNetBindingError: declared boxes missing from the box modules.
        SNetUsageError: an unknown dialect or a net-path entry that is no folder.
    """
    from snet.inlinecode import with_inline_boxes
    from snet.spg.build import compile_file, compile_source

    options = CompileOptions(dialect=dialect, net_path=net_path)  # checked before anything is read

    path: str | None = None
    if isinstance(source, os.PathLike):
        path = os.fspath(source)
    elif isinstance(source, str) and "\n" not in source and ";" not in source:
        path = source
    if path is not None:
        if not os.path.isfile(path):
            raise SNetUsageError(f"network file not found: {path}")
        graph = compile_file(path, net=net, options=options)
    else:
        graph = compile_source(str(source), "<string>", net=net, options=options)
    namespaces = with_inline_boxes(graph, linked_box_sources(graph, boxes, path))
    warnings: list[str] = []
    try:
        table = bind_boxes(graph, namespaces, warnings)
    except SNetBindingError:
        # The warnings often explain the error (inline code that is not run, parameters in another order).
        for warning in summarise((*graph.warnings, *warnings)):
            log.warning("%s", warning)
        raise
    network = Network(graph, table)
    for warning in summarise(warnings):
        log.warning("%s", warning)
    return network


def linked_box_sources(graph: PropertyGraph, boxes: Any, path: str | None) -> list[Any]:
    """The box modules to bind from: as :func:`resolve_box_sources`, and, without ``boxes``,
    also ``X.py`` beside each file ``X.snet`` bound to a declared-only net (rts dialect)."""
    namespaces = resolve_box_sources(boxes, path)
    if boxes is None or (isinstance(boxes, (list, tuple)) and not boxes):
        for linked in graph.linked:
            namespaces.extend(resolve_box_sources(None, linked))
    return namespaces


class Network:
    """A compiled, bound network; run it with :meth:`run` or :meth:`session`."""

    def __init__(self, graph: PropertyGraph, boxes: dict[str, Callable]):
        self.graph = graph
        self.boxes = boxes
        for warning in summarise(graph.warnings):
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
            throttle: tuple[float, float] | None = None,
            box_concurrency: int | str | Mapping[str, int | str] | None = None,
            checkpoint: str | os.PathLike | None = None, checkpoint_interval: float | None = None,
            checkpoint_reset: bool = False, **options: Any) -> Execution:
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
                or a mapping from box name to number; ``"auto"`` (for all
                or for one box) lets the runtime choose (docs/runtime.md).
            checkpoint: a directory for snapshots of the run; the same call
                again resumes from the last one (:mod:`snet.checkpoint.api`:
                ``records`` must be a list, a tuple or a record file's path).
            checkpoint_interval: seconds between two snapshots (default 10).
            checkpoint_reset: forget the snapshots in ``checkpoint`` first.
            options: further :class:`~snet.options.RunOptions` fields.

        Raises:
            SNetUsageError: an unknown option or a value out of range,
                before the run starts.
        """
        run_options = RunOptions.from_keywords(workers=workers, engine=engine, throttle=throttle,
                                               box_concurrency=box_concurrency, **options)
        if checkpoint is not None:
            from snet.checkpoint.api import run_checkpointed

            return run_checkpointed(self, records, run_options, os.fspath(checkpoint), checkpoint_interval,
                                    checkpoint_reset)
        if checkpoint_interval is not None or checkpoint_reset:
            raise SNetUsageError("checkpoint_interval and checkpoint_reset apply to runs with checkpoint=DIR")
        return self.execute(checked_inputs(records), run_options)

    def execute(self, records: Iterable[Mapping], options: RunOptions) -> Execution:
        """Run the network over ``records`` with options already built; as :meth:`run`.

        The records are not checked here: the callers (:meth:`run`, the
        record readers of ``snet run``) have checked them already.
        """
        return self.execute_served(records, options, None)

    def execute_served(self, records: Iterable[Mapping], options: RunOptions, server: Any) -> Execution:
        """As :meth:`execute`, serving the run's figures with ``server``, a :class:`~snet.metrics.MetricsServer`.

        ``server`` None: one is made here when ``options.metrics_port`` asks
        for it (``snet run`` makes its own earlier, before it opens the
        output).  The server is closed with the execution.
        """
        if server is None and options.metrics_port is not None:
            from snet.metrics import MetricsServer

            server = MetricsServer(options.metrics_port)
        try:
            execution = _LoggedExecution(start(options.engine, self.graph, self.boxes, records, options))
        except BaseException:
            if server is not None:
                server.close()
            raise
        if server is not None:
            execution.serve_metrics(server, {d.name for d in self.graph.boxes})
        return execution

    def spark_apply(self, df: Any, schema: Any = None, *, partitions: int | None = None,
                    order: str | None = None) -> Any:
        """The network over a Spark DataFrame: a DataFrame of the output records, lazily (docs/spark.md).

        Rows map to records by column name in the JSON Lines spelling (``x``,
        ``<t>``, ``<#b>``; a null is an absent label).  The network runs
        whole inside each task (``mapInArrow``), an engine per task, so it
        works on Spark Connect too.  A network with state inside a top-level
        ``X ! <t>`` is repartitioned by the column ``<t>`` and kept in input
        order within each tag value.

        Args:
            df: a ``pyspark.sql.DataFrame`` (classic or Connect).
            schema: the output schema (StructType or DDL string), a
                projection; default: inferred from the output type, the
                input columns and the boxes' return annotations.
            partitions: the number of partitions (tasks); default: the
                DataFrame's own, or the default parallelism when it must
                be repartitioned by a tag.
            order: a column giving the input sequence (used to keep per-tag
                order, not passed to the network); default: the
                DataFrame's row order.

        Raises:
            SNetNotDistributable: the network keeps state outside any
                top-level index split (the message gives the position).
            SNetUsageError: a missing tag column, an output field whose
                type cannot be inferred.
        """
        from snet.spark.whole.dataframe import spark_apply

        if df.isStreaming and partitions is None and order is None:  # (snet.spark.stream: state in Spark's store)
            from snet.spark.stream import spark_apply_stream

            return spark_apply_stream(self, df, schema)
        return spark_apply(self, df, schema, partitions=partitions, order=order)

    def session(self, *, max_pending: int | None = None, checkpoint: str | os.PathLike | None = None,
                checkpoint_reset: bool = False, resume: str | os.PathLike | None = None,
                **run_options: Any) -> "Session":
        """Start a long-running session (see :class:`Session`); takes the options of :meth:`run`.

        ``checkpoint``: a directory for the snapshots ``Session.checkpoint()``
        takes; a session started with a directory that holds one resumes
        from it (``checkpoint_reset=True``: afresh).  ``resume``: the same,
        for a directory that must hold a snapshot: a service restarted
        after a crash is refused (:class:`SNetUsageError`) rather than
        started empty when the path is wrong or the snapshot is gone.
        """
        options = RunOptions.from_keywords(**run_options)
        checkpointing = self._session_checkpointing(options, checkpoint, checkpoint_reset, resume)
        return Session(self, options, max_pending, checkpointing=checkpointing)

    def asession(self, *, max_pending: int | None = None, checkpoint: str | os.PathLike | None = None,
                 checkpoint_reset: bool = False, resume: str | os.PathLike | None = None,
                 **run_options: Any) -> "AsyncSession":
        """A session for asyncio code: ``async with net.asession() as s: outs = await s.submit(r)``.

        See :class:`snet.aio.AsyncSession`; takes the options of :meth:`session`
        (``checkpoint=``, ``resume=``: ``await s.checkpoint()`` takes a snapshot).
        Must be created inside a running event loop.
        """
        from snet.aio import AsyncSession

        options = RunOptions.from_keywords(**run_options)
        checkpointing = self._session_checkpointing(options, checkpoint, checkpoint_reset, resume)
        return AsyncSession(self, options, max_pending, checkpointing=checkpointing)

    def _session_checkpointing(self, options: RunOptions, checkpoint: str | os.PathLike | None,
                               checkpoint_reset: bool, resume: str | os.PathLike | None) -> Any:
        """The snapshots of a session (``checkpoint=``, ``resume=``: see :meth:`session`), or None."""
        if resume is not None:
            from snet.checkpoint.api import require_snapshot

            if checkpoint is not None and os.path.abspath(checkpoint) != os.path.abspath(resume):
                raise SNetUsageError(f"resume={os.fspath(resume)!r} and checkpoint={os.fspath(checkpoint)!r} name "
                                     f"two directories: a session takes its snapshots where it resumes from")
            if checkpoint_reset:
                raise SNetUsageError("resume= and checkpoint_reset=True contradict each other: checkpoint=DIR with "
                                     "checkpoint_reset=True starts afresh")
            require_snapshot(os.fspath(resume))
            checkpoint = resume
        if checkpoint is None:
            return None
        from snet.checkpoint.api import session_checkpointing

        return session_checkpointing(self, options, os.fspath(checkpoint), checkpoint_reset)

    def arun(self, records: Any, *, max_pending: int | None = 1024, **run_options: Any) -> AsyncIterator[Record]:
        """Run over ``records`` (an iterable or an async iterable) as an async iterator of the outputs.

        ``max_pending`` (default 1,024) bounds the inputs inside the network:
        an endless source is read only as fast as the network keeps up.
        """
        from snet.aio import arun

        return arun(self, records, RunOptions.from_keywords(**run_options), max_pending)


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
        self._summarised = False
        self._over = False  # _ended has run
        self.error_policy = inner.error_policy
        self.metrics: Any = None  # the MetricsServer serving this run's figures, if any

    def __next__(self) -> Record:
        try:
            return next(self.inner)
        except BaseException as e:
            self._ended(e)
            raise

    def __iter__(self) -> Iterator[Record]:
        """The inner execution's own iteration (FRONT's takes its outputs in batches), with the same end."""
        return self.inner.iterate(self._ended)

    def _ended(self, e: BaseException) -> None:
        if self._over:  # (once: a loop over the run and next() may both reach its end)
            return
        self._over = True
        if self.metrics is not None:  # the run is over (or failed): nothing more to serve
            self.metrics.close()
        if not isinstance(e, StopIteration):
            return
        if not self._summarised:  # repeated warnings of a kind: a few, then their count
            self._summarised = True
            self.warnings[:] = summarise(self.warnings)
        for warning in self.warnings:
            log.warning("%s", warning)

    def ready(self) -> bool:
        return self.inner.ready()

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            if self.metrics is not None:
                self.metrics.close()

    def serve_metrics(self, server: Any, boxes: Iterable[str]) -> None:
        """Serve this run's figures with ``server`` until the execution is closed (see :mod:`snet.metrics`)."""
        self.metrics = server
        server.watch(self, boxes)  # by a weak reference: a run dropped unclosed stops serving when collected
        weakref.finalize(self, server.close)

    @property
    def metrics_url(self) -> str | None:
        """``http://127.0.0.1:PORT/metrics`` when the run serves its figures (``metrics_port``), else None."""
        return self.metrics.url if self.metrics is not None else None

    def stats(self) -> RunStats:
        stats = self.inner.stats()
        if self.inner.guards is not None:  # retries and timeouts beside each box's calls
            stats = stats.with_guards(self.inner.guards.table())
        return attrs.evolve(stats, failures=self.failures) if self.failures else stats
