"""The command line's side of ``snet run --spark``: starting Spark for the splits, and Spark-native runs.

:func:`start_for` starts Spark before the output is opened when the run's
splits will use it.  A run with a Spark source and sink is Spark-native.

Whether a run is Spark-native is decided here, from ``--format``,
``--input-format``/``--output-format``, the names' extensions and the files
in a directory (:func:`native_formats`).  The run itself is
:class:`snet.spark.whole.native.NativeRun`, asked for with a
:class:`~snet.spark.whole.native.NativeRequest` built from the parsed
arguments (:func:`request_from_args`), so the Spark package never reads
them; this side checks the paths the local file system shows
(:func:`check_paths`), prints what the run did (``--stats``, ``--stats-json``) and
turns a failed run into its error.  ``--on-error skip`` and ``--errors`` are
refused (exit status 2, before Spark starts): the tasks have no driver to
report skipped records to.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import IO, Any

from snet.errors import SNetUsageError
from snet.options import RunOptions

log = logging.getLogger("snet.spark")

SPARK_FORMATS = ("parquet", "json", "csv", "orc")
EXTENSIONS = {".parquet": "parquet", ".json": "json", ".csv": "csv", ".orc": "orc"}

# The options of the driver's engine, which the tasks of a Spark-native run do not take.
ENGINE_OPTIONS = (("engine", "--engine"), ("workers", "-w/--workers"), ("throttle", "--throttle"),
                  ("box_concurrency", "--box-concurrency"), ("box_processes", "--box-processes"),
                  ("no_steal", "--no-steal"), ("no_fuse", "--no-fuse"), ("seed", "--seed"),
                  ("box_timeout", "--box-timeout"), ("box_retries", "--box-retries"))


def spark_format(path: str | None, explicit: str | None) -> str | None:
    """The Spark format of ``path``, or None when it is a record file of the driver (JSON Lines, XML, stdio)."""
    if explicit is not None:
        return explicit if explicit in SPARK_FORMATS else None
    if path is None or path == "-":
        return None
    ext = os.path.splitext(path.rstrip("/"))[1].lower()
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    if os.path.isdir(path):  # a directory Spark wrote: the format of its part files
        found = {EXTENSIONS.get(os.path.splitext(name)[1].lower())
                 for name in os.listdir(path) if not name.startswith(("_", "."))}
        found.discard(None)
        if len(found) == 1:
            return found.pop()
    return None


def native_formats(args: argparse.Namespace) -> tuple[str, str] | None:
    """(input format, output format) when this run is Spark-native, else None; mixed sides are refused."""
    source = spark_format(args.input, args.input_format or args.format)
    sink = spark_format(args.output, args.output_format or args.format)
    if source is None and sink is None:
        return None
    explicit = {args.format, args.input_format, args.output_format} & set(SPARK_FORMATS)
    master = args.spark or os.environ.get("SNET_SPARK_MASTER")
    if not master and not explicit and (source is None or sink is None):
        return None  # one '.csv' name and no Spark: the record-file path says it cannot tell the format
    if source is None or sink is None:
        side, other = ("input", args.output) if source is None else ("output", args.input)
        raise SNetUsageError(f"a Spark-native run needs a Spark source and a Spark sink ({', '.join(SPARK_FORMATS)}), "
                             f"but the {side} is a record file of the driver; give both sides a Spark format "
                             f"(--input-format/--output-format), or neither ({other})")
    if not master:
        raise SNetUsageError(f"{source} input and {sink} output are read and written by Spark: give --spark MASTER")
    return source, sink


def check_paths(source: str, sink: str, mode: str) -> None:
    """Mistakes in -i and -o that the local file system shows, before Spark starts (exit status 2)."""
    from snet.spark.whole.native import local_path

    source_path, sink_path = local_path(source), local_path(sink)
    if source_path is not None and sink_path is not None:
        _check_overlap(source, source_path, sink, sink_path)
    if mode in ("error", "errorifexists") and sink_path is not None and os.path.exists(sink_path):
        raise SNetUsageError(f"the output {sink} exists; remove it, or give --spark-conf snet.mode=overwrite")
    if source_path is not None and not any(ch in source_path for ch in "*?[") and not os.path.exists(source_path):
        raise SNetUsageError(f"input not found: {source}")


def _check_overlap(source: str, source_path: str, sink: str, sink_path: str) -> None:
    """Refuse an output that is, holds or lies inside an input (every path a glob matches, symbolic links
    resolved), whatever the save mode: ``overwrite`` empties the output folder before the job reads its
    input, and any mode writes part files where the input's directory listing would find them."""
    import glob

    output = os.path.realpath(sink_path)
    pattern = any(ch in source_path for ch in "*?[")
    inputs = sorted(glob.glob(source_path)) if pattern else [source_path]
    for path in inputs:
        given = path if pattern else source
        path = os.path.realpath(path)
        if path == output:
            raise SNetUsageError(f"the output {sink} is the input{f' {given}' if pattern else ''}: writing it "
                                 "would destroy the input")
        if path.startswith(output.rstrip(os.sep) + os.sep):
            raise SNetUsageError(f"the output {sink} holds the input {given}: writing the output folder would "
                                 "destroy the input (give an output outside it)")
        if output.startswith(path.rstrip(os.sep) + os.sep):
            raise SNetUsageError(f"the output {sink} lies inside the input {given}: the run would read its own "
                                 "output (give an output outside it)")


def _given(value: Any) -> bool:
    """Whether an option's parsed value was given (``--seed 0`` was, though 0 == False)."""
    return value is not None and value is not False and value != []


def _show_ui(address: str) -> None:
    print(f"snet progress: Spark UI at {address}", file=sys.stderr)


def refuse_skipping(args: argparse.Namespace, options: RunOptions, source: str, sink: str) -> None:
    """Refuse ``--on-error skip`` and ``--errors`` for a run inside Spark tasks (exit status 2)."""
    errors = getattr(args, "errors", None)
    if options.on_error != "stop" or errors is not None:
        flag = "--errors" if errors is not None else "--on-error skip"
        raise SNetUsageError(f"{flag} does not apply to a Spark-native run ({source} in, {sink} out): its tasks run "
                             "the network with no driver to report a skipped record to, so a failing box or a "
                             "crashed Python worker fails the Spark job; to skip failing records, read and write "
                             "JSON Lines (--spark then runs the splits on Spark and skips there)")


def request_from_args(args: argparse.Namespace, options: RunOptions, source: str, sink: str):
    """The :class:`~snet.spark.whole.native.NativeRequest` of the parsed ``snet run`` arguments."""
    from snet.spark.whole.native import NativeRequest

    refuse_skipping(args, options, source, sink)
    return NativeRequest(
        source=source, sink=sink, input=args.input, output=args.output, options=options,
        schema=getattr(args, "spark_schema", None),
        driver_fallback=bool(getattr(args, "spark_driver_fallback", False)), task_warnings=not args.quiet,
        watched=args.progress is not None or bool(args.verbose), show_ui=_show_ui)


def run_spark_native(network, args: argparse.Namespace, options: RunOptions, formats: tuple[str, str],
                     stats_json: IO[str] | None) -> int:
    """The Spark-native run; its exit status (a failed run's error raised after its statistics)."""
    from snet.spark.whole.native import NativeRun

    request = request_from_args(args, options, *formats)
    run = NativeRun(network, request)  # the settings checked, the network's partitioning known
    check_paths(request.input, request.output, run.mode)
    given = [flag for name, flag in ENGINE_OPTIONS if _given(getattr(args, name, None))]
    if given and not run.fallback:
        log.warning("warning: %s %s no effect on a Spark-native run: each Spark task runs the network on an "
                    "engine of its own (FRONT with one worker; the tasks are the parallelism); they apply with "
                    "--spark-driver-fallback and to runs over record files", ", ".join(given),
                    "has" if len(given) == 1 else "have")
    outcome = run.run()
    failed = outcome.error is not None
    if args.stats:
        what = ("failed, " if failed else "") + \
            (f"{outcome.written} records written, " if outcome.written is not None else "")
        print(f"snet: {request.source} {request.input} -> {request.sink} {request.output}, the network "
              f"{outcome.where}: {what}{outcome.seconds:.2f} s", file=sys.stderr)
    if stats_json is not None:
        with stats_json:
            json.dump({"run": "spark-native", "network": outcome.where,
                       "source": {"format": request.source, "path": request.input},
                       "sink": {"format": request.sink, "path": request.output}, "failed": failed,
                       "records_out": outcome.written, "seconds": outcome.seconds}, stats_json, indent=2,
                      sort_keys=True)
            stats_json.write("\n")
    if outcome.error is not None:
        raise outcome.error
    return 0


def run_stream(network, args: argparse.Namespace, options: RunOptions, formats: tuple[str, str],
               stats_json: IO[str] | None) -> int:
    """``--stream``: the network as a Structured Streaming query (:mod:`snet.spark.stream`); its exit status."""
    from snet.spark.stream import StreamRequest, StreamRun

    source, sink = formats
    refuse_skipping(args, options, source, sink)
    if args.checkpoint is None:
        raise SNetUsageError("--stream needs --checkpoint DIR, the query's checkpoint location: it records which "
                             "input files were processed and which output files were committed, so that "
                             "running the same command again goes on exactly once")
    from snet.spark.whole.native import local_path

    check_paths(args.input, args.output, "append")  # a stream appends to its sink
    source_path = local_path(args.input)
    if source_path is not None and not any(ch in source_path for ch in "*?[") and not os.path.isdir(source_path):
        raise SNetUsageError(f"--stream reads a folder that files keep arriving in; {args.input} is no folder")
    request = StreamRequest(source=source, sink=sink, input=args.input, output=args.output,
                            checkpoint=args.checkpoint, options=options, available_now=args.available_now,
                            schema=getattr(args, "spark_schema", None), task_warnings=not args.quiet,
                            show_ui=_show_ui if args.progress is not None or args.verbose else None)
    outcome = StreamRun(network, request).run()
    how = "stopped" if outcome.stopped else "done"
    if args.stats or not args.quiet:
        out = f" and {outcome.rows_out} output" if outcome.rows_out is not None else ""
        print(f"snet: stream {how}: {outcome.batches} micro-batch{'es' if outcome.batches != 1 else ''} with "
              f"records, {outcome.rows_in} input{out} records, {outcome.seconds:.2f} s", file=sys.stderr)
    if stats_json is not None:
        with stats_json:
            json.dump({"run": "spark-stream", "source": {"format": source, "path": args.input},
                       "sink": {"format": sink, "path": args.output}, "checkpoint": args.checkpoint,
                       "batches": outcome.batches, "records_in": outcome.rows_in, "records_out": outcome.rows_out,
                       "seconds": outcome.seconds, "stopped": outcome.stopped}, stats_json, indent=2,
                      sort_keys=True)
            stats_json.write("\n")
    return 0


def start_for(graph, options: RunOptions):
    """Start Spark now if a run of ``graph`` with ``options`` will use it (None otherwise).

    ``snet run`` calls this before it opens the output file, so that a run
    that cannot start Spark leaves an existing output untouched.
    """
    if not options.spark_master:
        return None
    from snet.spark.cluster.preflight import addresses
    from snet.spark.cluster.session import start_session
    from snet.splitexec import select_splits

    addresses(options.spark_master)
    if not select_splits(graph, options.spark_splits):
        # Not an error (the same command may run a network with boxes next), but the user asked for
        # Spark: say that it is not used, so that the master is not taken as checked either.
        rule = options.spark_splits or "auto"
        why = ("no split of this network has a box in its operand (--spark-splits auto leaves splits of "
               "filters and synchro-cells local)" if rule == "auto" else f"--spark-splits {rule} selects no split")
        log.warning("warning: %s: the run does not use Spark, and %s is not contacted", why, options.spark_master)
        return None
    return start_session(options.spark_master, options.spark_conf)


def silence_spark() -> Any:
    """Turn this process's JVM logs off, and return its active Spark context (None without one).

    ``snet``'s process calls it once the command has written its last line:
    the JVM stops from its own shutdown hook when Python exits, and that
    stop can log errors of its own (the context cleaner, interrupted while
    it removes a broadcast of a failed job, logs a stack trace), after
    the command's one-line message.  Imports no PySpark that is not loaded.
    """
    if "pyspark" not in sys.modules:
        return None
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return None
    jvm: Any = context._jvm
    try:
        jvm.org.apache.logging.log4j.core.config.Configurator.setRootLevel(jvm.org.apache.logging.log4j.Level.OFF)
    except Exception:  # another logging back end, or the gateway is gone
        log.debug("could not silence Spark's logs", exc_info=True)
    return context


def stop_spark_after_interrupt() -> None:
    """Stop this process's Spark context, and silence its JVM, before an interrupted command's last line.

    The JVM is a child that writes to the same standard error: stopped by
    the exit handlers after snet's ``error: interrupted``, it went on with
    its own shutdown errors (a scheduler rejecting the cancelled tasks'
    updates), so the message was no longer the last line.  Only when
    PySpark is loaded and a context is active.
    """
    context = silence_spark()
    if context is None:
        return
    try:
        context.stop()
    except Exception:
        log.debug("stopping Spark after an interrupt failed", exc_info=True)
