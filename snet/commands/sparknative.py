"""``snet run`` with a Spark source and sink: the command line's side of a Spark-native run.

Whether a run is Spark-native is decided here, from ``--format``,
``--input-format``/``--output-format``, the names' extensions and the files
in a directory (:func:`native_formats`).  The run itself is
:func:`snet.spark.whole.native.run_native`, asked for with a
:class:`~snet.spark.whole.native.NativeRequest` built from the parsed
arguments (:func:`request_from_args`), so the Spark package never reads
them; this side prints what the run did (``--stats``, ``--stats-json``) and
turns a failed run into its error.  ``--on-error skip`` and ``--errors`` are
refused (exit status 2, before Spark starts): the tasks have no driver to
report skipped records to.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import IO, Any

from snet.errors import SNetUsageError
from snet.options import RunOptions

SPARK_FORMATS = ("parquet", "json", "csv", "orc")
EXTENSIONS = {".parquet": "parquet", ".json": "json", ".csv": "csv", ".orc": "orc"}

# The options of the driver's engine, which the tasks of a Spark-native run do not take.
ENGINE_OPTIONS = (("engine", "--engine"), ("workers", "-w/--workers"), ("throttle", "--throttle"),
                  ("box_concurrency", "--box-concurrency"), ("box_processes", "--box-processes"),
                  ("no_steal", "--no-steal"), ("seed", "--seed"), ("box_timeout", "--box-timeout"),
                  ("box_retries", "--box-retries"))


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


def _given(value: Any) -> bool:
    """Whether an option's parsed value was given (``--seed 0`` was, though 0 == False)."""
    return value is not None and value is not False and value != []


def _show_ui(address: str) -> None:
    print(f"snet progress: Spark UI at {address}", file=sys.stderr)


def request_from_args(args: argparse.Namespace, options: RunOptions, source: str, sink: str):
    """The :class:`~snet.spark.whole.native.NativeRequest` of the parsed ``snet run`` arguments."""
    from snet.spark.whole.native import NativeRequest

    errors = getattr(args, "errors", None)
    if options.on_error != "stop" or errors is not None:
        flag = "--errors" if errors is not None else "--on-error skip"
        raise SNetUsageError(f"{flag} does not apply to a Spark-native run ({source} in, {sink} out): its tasks run "
                             "the network with no driver to report a skipped record to, so a failing box or a "
                             "crashed Python worker fails the Spark job; to skip failing records, read and write "
                             "JSON Lines (--spark then runs the splits on Spark and skips there)")
    return NativeRequest(
        source=source, sink=sink, input=args.input, output=args.output, options=options,
        schema=getattr(args, "spark_schema", None),
        driver_fallback=bool(getattr(args, "spark_driver_fallback", False)), task_warnings=not args.quiet,
        engine_flags=tuple(flag for name, flag in ENGINE_OPTIONS if _given(getattr(args, name, None))),
        watched=args.progress is not None or bool(args.verbose), show_ui=_show_ui)


def run_spark_native(network, args: argparse.Namespace, options: RunOptions, formats: tuple[str, str],
                     stats_json: IO[str] | None) -> int:
    """The Spark-native run; its exit status (a failed run's error raised after its statistics)."""
    from snet.spark.whole.native import run_native

    request = request_from_args(args, options, *formats)
    outcome = run_native(network, request)
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
