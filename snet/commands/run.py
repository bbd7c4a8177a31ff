"""``snet run``: check options, load, read records, run, write records (interfaces.md §1).

Order of events, which the exit statuses depend on:

1. turn the options' text into values and check them (:mod:`snet.options`
   does the checking; its messages are relabelled with the flag's spelling):
   exit 2;
2. load the network through the embedding API (:func:`snet.api.load`):
   compile the ``.snet`` file (errors: exit 2, every diagnostic printed),
   then bind every declared box (missing ones: exit 2), before any record
   is read;
3. open the input, start Spark when the run uses it (a master that cannot
   be reached, Java missing: exit 2, see :mod:`snet.spark.cluster.preflight`),
   then open the output, so that a run that never started leaves an
   existing output file untouched;
4. run; outputs are written as they arrive and flushed at least every
   ``FLUSH_SECONDS``, and whenever the next output is not ready yet, so that
   a consumer on a pipe sees every output before the run waits for more;
5. on a run-time error, a bad input record or Ctrl-C, the outputs produced
   so far are written and flushed, then the error is reported (exit 1).

The API reports compile and termination warnings on the ``snet`` logger;
the command shows that logger's warnings on standard error, one bare line
each.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import time
from typing import Any

import attrs

from snet.deadletters import DeadLetters
from snet.errors import SNetRuntimeError, SNetInterrupted, SNetOptionError, SNetUsageError
from snet.commands.progress import record_destination, start_progress
from snet.options import DEFAULT_ENGINE, RunOptions
from snet.stats import RunStats, format_duration

FLUSH_SECONDS = 0.05
log = logging.getLogger("snet")

# How the command line spells each run option, for the messages of snet.options.
FLAGS = {
    "engine": "--engine", "workers": "-w/--workers", "throttle": "--throttle",
    "box_concurrency": "--box-concurrency", "box_concurrency_per_box": "--box-concurrency",
    "steal": "--no-steal", "fuse": "--no-fuse", "seed": "--seed", "stats": "--stats", "spark_master": "--spark",
    "spark_conf": "--spark-conf", "spark_splits": "--spark-splits", "spark_batch": "--spark-batch",
    "box_processes": "--box-processes", "box_processes_per_box": "--box-processes", "on_error": "--on-error",
    "box_process_calls": "--box-processes ...,calls=C", "box_process_memory": "--box-processes ...,memory=SIZE",
    "box_timeout": "--box-timeout", "box_timeout_per_box": "--box-timeout",
    "box_retries": "--box-retries", "box_retries_per_box": "--box-retries",
    "metrics_port": "--metrics-port", "split_processes": "--split-processes",
    "process_splits": "--process-splits", "process_batch": "--process-batch",
    "max_held": "--max-held", "memory_limit": "--memory-limit",
}


def parse_throttle(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        offset, factor = (float(x) for x in text.split(","))
    except ValueError:
        raise SNetUsageError(f"--throttle takes OFFSET,FACTOR (two numbers), not '{text}'") from None
    return offset, factor


def _workers_said(options: RunOptions) -> str:
    """``, 2 workers``, or under box concurrency auto what it chooses and the cap ``-w`` gives."""
    if options.auto_concurrency:
        cap = f" (at most {options.workers} worker{'s' if options.workers != 1 else ''})" if options.workers else ""
        return f", workers and box concurrency chosen as the run goes on{cap}"
    workers = options.workers or os.cpu_count() or 1
    return f", {workers} worker{'s' if workers != 1 else ''}"


def parse_box_concurrency(values: list[str], flag: str = "--box-concurrency") -> tuple[Any, dict[str, Any]]:
    """``[NAME=]N`` values (``--box-concurrency`` also takes ``auto`` for N): (default, per box)."""
    default: Any = None
    per_box: dict[str, Any] = {}
    automatic = flag == "--box-concurrency"
    for value in values:
        name, eq, number = value.rpartition("=")
        try:
            n: Any = "auto" if automatic and number == "auto" else int(number)
        except ValueError:
            shape = "N, auto, NAME=N or NAME=auto" if automatic else "N or NAME=N"
            raise SNetUsageError(f"{flag} takes {shape}, not '{value}'") from None
        if eq:
            per_box[name] = n
        else:
            default = n
    return default, per_box


def parse_box_guards(values: list[str], flag: str) -> tuple[Any, dict[str, Any]]:
    """``--box-timeout [NAME=]SECONDS`` or ``--box-retries [NAME=]N[,BACKOFF]`` values: (default, per box).

    Only the text is read here; :mod:`snet.options` checks the numbers.
    """
    default: Any = None
    per_box: dict[str, Any] = {}
    shape = "SECONDS or NAME=SECONDS" if flag == "--box-timeout" else "N[,BACKOFF] or NAME=N[,BACKOFF]"
    for value in values:
        name, eq, setting = value.partition("=")
        if not eq:
            name, setting = "", value
        try:
            if flag == "--box-timeout":
                parsed: Any = float(setting)
            else:
                count, comma, backoff = setting.partition(",")
                parsed = (int(count), float(backoff)) if comma else int(count)
        except ValueError:
            raise SNetUsageError(f"{flag} takes {shape}, not '{value}'") from None
        if eq and not name:
            raise SNetUsageError(f"{flag} takes {shape}, not '{value}' (no box name before '=')")
        if eq:
            per_box[name] = parsed
        else:
            default = parsed
    return default, per_box


def split_process_limits(values: list[str]) -> tuple[list[str], dict[str, str]]:
    """``--box-processes`` values without their limits (``4,calls=1000,memory=512M``), and the limits.

    The limits (``calls=C``, ``memory=SIZE``) apply to every box process of
    the run; given twice they must agree.
    """
    counts: list[str] = []
    limits: dict[str, str] = {}
    for value in values:
        count, *extra = value.split(",")
        counts.append(count)
        for item in extra:
            key, eq, setting = item.partition("=")
            if key not in ("calls", "memory") or not eq or not setting:
                raise SNetUsageError(f"--box-processes takes N or NAME=N, then optionally ,calls=C and ,memory=SIZE; "
                                     f"'{item}' in '{value}' is neither")
            if limits.get(key, setting) != setting:
                raise SNetUsageError(f"--box-processes: {key}= is given twice, as {limits[key]} and {setting}")
            limits[key] = setting
    return counts, limits


def _number(text: str | None) -> int | str | None:
    """An int from a text of digits; anything else as given, for the option's check to name."""
    return int(text) if text is not None and text.isdigit() else text


def parse_spark_conf(values: list[str]) -> dict[str, str]:
    conf = {}
    for value in values:
        key, eq, setting = value.partition("=")
        if not eq or not key:
            raise SNetUsageError(f"--spark-conf takes KEY=VALUE, not '{value}'")
        conf[key] = setting
    return conf


def options_from_args(args: argparse.Namespace) -> RunOptions:
    """The run options the command line gives; a bad value is an error naming its flag."""
    default, per_box = parse_box_concurrency(args.box_concurrency)
    process_counts, process_limits = split_process_limits(args.box_processes)
    processes, processes_per_box = parse_box_concurrency(process_counts, "--box-processes")
    timeout, timeout_per_box = parse_box_guards(args.box_timeout, "--box-timeout")
    retries, retries_per_box = parse_box_guards(args.box_retries, "--box-retries")
    on_error: Any = args.on_error or "stop"
    if args.errors is not None:
        if args.on_error == "stop":
            raise SNetUsageError("--errors FILE skips failing records: it cannot be combined with --on-error stop")
        on_error = "skip"  # run_command hands the failures to the --errors file
    try:
        return RunOptions(
            engine=args.engine,
            workers=args.workers,
            throttle=parse_throttle(args.throttle),
            box_concurrency=default,
            box_concurrency_per_box=per_box,
            steal=not args.no_steal,
            fuse=not args.no_fuse,
            seed=args.seed,
            stats=args.stats or args.stats_json is not None,
            # $SNET_SPARK_MASTER is a default: --split-processes asks for local processes instead
            spark_master=args.spark or (None if args.split_processes else os.environ.get("SNET_SPARK_MASTER")) or None,
            split_processes=args.split_processes,
            process_splits=args.process_splits,
            process_batch=args.process_batch,
            spark_conf=parse_spark_conf(args.spark_conf),
            spark_splits=args.spark_splits,
            spark_batch=args.spark_batch,
            on_error=on_error,
            box_processes=processes,
            box_processes_per_box=processes_per_box,
            # (text that is no number goes on to the option's check, which names it)
            box_process_calls=_number(process_limits.get("calls")),  # type: ignore[arg-type]
            box_process_memory=process_limits.get("memory"),
            box_timeout=timeout, box_timeout_per_box=timeout_per_box,
            box_retries=retries, box_retries_per_box=retries_per_box,
            metrics_port=args.metrics_port,
            **_bounds(args),
        )
    except SNetOptionError as e:
        raise e.relabelled(FLAGS.get(e.option, e.option)) from None


def _bounds(args: argparse.Namespace) -> dict[str, Any]:
    """``--max-held N`` (0: no bound) and ``--memory-limit SIZE`` as run options; absent ones keep the defaults."""
    bounds: dict[str, Any] = {}
    if args.max_held is not None:
        bounds["max_held"] = None if args.max_held == 0 else args.max_held
    if args.memory_limit is not None:
        bounds["memory_limit"] = args.memory_limit  # RunOptions reads the size, and refuses what it cannot read
    return bounds


class NetFile(os.PathLike):
    """The network file's name exactly as given, as a path for :func:`snet.api.load`.

    A path-like, so that a name is never read as program text; not a
    ``pathlib.Path``, which would drop a leading ``./`` from the positions
    in messages (``snet check`` prints the name as given too).
    """

    def __init__(self, name: str):
        self.name = name

    def __fspath__(self) -> str:
        return self.name


def run_command(args: argparse.Namespace) -> int:
    from snet.api import load
    from snet.recordio import detect_format, open_writer, read_records

    options = options_from_args(args)
    if args.progress is not None and args.progress <= 0:
        raise SNetUsageError(f"--progress takes a positive number of seconds, not {args.progress}")
    from snet.commands.top import refuse_unless_drawable

    refuse_unless_drawable(args)  # not on a terminal: refused before anything is read or written
    level = logging.ERROR if args.quiet else logging.INFO if args.verbose else logging.WARNING
    show_warnings(level)
    from snet.commands.check import compile_options

    compiling = compile_options(args)
    network = load(NetFile(args.net_file), boxes=args.boxes, net=args.net, dialect=compiling.dialect,
                   net_path=compiling.net_path)
    log.info("info: net %s %s; boxes %s", network.name, network.signature, _box_origins(network))
    from snet.commands.clobber import refuse_clobbering

    refuse_clobbering(args, network)  # before any file is opened for writing
    from snet.commands.sparknative import native_formats, run_spark_native  # imports no pyspark

    formats = native_formats(args)  # a Spark source and sink: the whole run inside Spark (docs/spark.md)
    if getattr(args, "available_now", False) and not getattr(args, "stream", False):
        raise SNetUsageError("--available-now applies to runs with --stream")
    if getattr(args, "stream", False):
        from snet.commands.sparknative import run_stream

        if formats is None:
            raise SNetUsageError("--stream runs the network over a Spark source folder into a Spark sink folder: give "
                                 "both a Spark format (--input-format/--output-format parquet, json, csv or orc; "
                                 "an empty source folder has no files to tell it by)")
        for given, flag in ((options.metrics_port is not None, "--metrics-port"), (getattr(args, "top", False), "--top"),
                            (args.checkpoint_interval is not None, "--checkpoint-interval"),
                            (args.checkpoint_reset, "--checkpoint-reset"),
                            (getattr(args, "spark_driver_fallback", False), "--spark-driver-fallback")):
            if given:
                raise SNetUsageError(f"{flag} does not apply to a run with --stream (Spark runs the query; its "
                                     "checkpoint location is --checkpoint DIR)")
        return run_stream(network, args, options, formats, _open_stats_json(args.stats_json))
    if formats is not None:
        if args.checkpoint is not None:
            raise SNetUsageError("--checkpoint does not apply to a batch run with a Spark source and sink: the "
                                 "whole network runs inside Spark tasks, which keep Spark's own task retry (with "
                                 "--stream, DIR is the query's checkpoint location)")
        if options.metrics_port is not None:
            raise SNetUsageError("--metrics-port serves the figures of a run on this machine; a Spark source and "
                                 "sink run the whole network inside Spark (see its UI)")
        if getattr(args, "top", False):
            raise SNetUsageError("--top shows the boxes of a run on this machine; a Spark source and sink run "
                                 "the whole network inside Spark (see its UI)")
        return run_spark_native(network, args, options, formats, _open_stats_json(args.stats_json))

    in_format = detect_format(args.input, args.input_format or args.format)
    out_format = detect_format(args.output, args.output_format or args.format)
    if getattr(args, "xml_mode", "textual") == "binary" and out_format != "xml":
        raise SNetUsageError("--xml-mode binary applies to XML output only; the output format is jsonl")
    if args.input not in (None, "-") and (not os.path.exists(args.input) or os.path.isdir(args.input)):
        raise SNetUsageError(f"input file not found: {args.input}")
    if (options.engine or DEFAULT_ENGINE) == "front":  # an unbuilt tree: one line, before any file is made
        from snet.backends.front import load_runtime

        load_runtime()
    stats_json = _open_stats_json(args.stats_json)
    checkpointed = None  # --checkpoint: the input and output are opened with the checkpoint (snet.checkpoint)
    if args.checkpoint is not None:
        from snet.checkpoint.command import refuse_unsupported

        refuse_unsupported(args)
    elif args.checkpoint_interval is not None or args.checkpoint_reset:
        raise SNetUsageError("--checkpoint-interval and --checkpoint-reset apply to runs with --checkpoint DIR")
    input_file = _open_input(args.input) if args.checkpoint is None else None
    records = read_records(args.input if input_file is None else input_file, in_format, name=args.input
                           if input_file is not None else None, allow_pickle=args.allow_pickle) \
        if args.checkpoint is None else None
    # --errors FILE: opened here, or with the checkpoint (cut back to its committed position on a resume)
    dead = DeadLetters(args.errors, args.allow_pickle) if args.errors is not None and args.checkpoint is None else None
    if dead is not None:
        options = attrs.evolve(options, on_error=dead.write)
    watched = args.progress is not None or args.verbose
    if options.spark_master:
        # Spark starts before the output is opened: a run that cannot start it leaves an existing file as it was.
        from snet.commands.sparknative import start_for

        if watched and "spark.ui.enabled" not in options.spark_conf:  # the Spark UI, for a person watching
            options = attrs.evolve(options, spark_conf={**options.spark_conf, "spark.ui.enabled": "true"})
        session = start_for(network.graph, options)
        if watched and session is not None:
            from snet.spark.cluster.session import ui_address

            address = ui_address(session)
            if address:
                print(f"snet progress: Spark UI at {address}", file=sys.stderr)
    metrics = serve_metrics(options)  # bound before the output is opened: a port in use leaves it untouched
    top = _top_view(args, network)
    if args.checkpoint is None:
        destination = top.destination(args.output) if top is not None else record_destination(args.output, args.progress)
        writer = open_writer(destination, out_format, allow_pickle=args.allow_pickle,
                             hint=lambda label: _made_by(network, label), xml_mode=getattr(args, "xml_mode", "textual"))
    else:
        from snet.checkpoint.command import open_checkpointed

        checkpointed = open_checkpointed(args, network, options, in_format, out_format,
                                         hint=lambda label: _made_by(network, label))
        records, writer, input_file = checkpointed.records, checkpointed.output, checkpointed.input_file
        if checkpointed.errors is not None:
            options = attrs.evolve(options, on_error=checkpointed.errors.write)
        if checkpointed.resumed:
            log.info("info: resuming from the checkpoint in %s (%d records read, %d written)", args.checkpoint,
                     checkpointed.source.taken, checkpointed.output.total)
    where = "standard output" if args.output in (None, "-") else f"output file {args.output}"
    if watched and options.spark_master:
        log_spark_batches()
    # Boxes that print write to standard error from the start: standard output carries the records only.
    # SIGTERM (what service managers send) stops the run as Ctrl-C does, from the line that says it starts on.
    try:
        with contextlib.redirect_stdout(sys.stderr), _terminate_as_interrupt():
            log.info("info: %s engine%s; input %s (%s), output %s (%s)", options.engine or DEFAULT_ENGINE,
                     _workers_said(options) if (options.engine or DEFAULT_ENGINE) == "front" else "",
                     _shown(args.input, "standard input"), in_format, _shown(args.output, "standard output"),
                     out_format)
            return _run(network, records, options, writer, where, args, stats_json, input_file, metrics, top,
                        checkpointed.checkpointing if checkpointed is not None else None)
    except KeyboardInterrupt as e:  # one that came while the engine started, before _run's loop
        raise _interrupted(e) from None
    finally:
        if metrics is not None:
            metrics.close()
        if checkpointed is not None:
            checkpointed.close()
        elif input_file is not None:
            input_file.close()
        if dead is not None:
            dead.close()


def serve_metrics(options: RunOptions):
    """``--metrics-port``: the bound :class:`~snet.metrics.MetricsServer`, its address on standard error; or None."""
    if options.metrics_port is None:
        return None
    from snet.metrics import MetricsServer

    server = MetricsServer(options.metrics_port, "--metrics-port")
    print(f"snet metrics: serving {server.url}", file=sys.stderr, flush=True)
    return server


def _open_input(path: str | None):
    """The input file opened here (not by the reader), so that ``--progress`` can tell how far it is read."""
    if path in (None, "-"):
        return None
    try:
        return open(path, "rb")
    except OSError as e:
        raise SNetUsageError(f"cannot open input file {path}: {e.strerror or e}") from None


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt."""


def _interrupted(e: KeyboardInterrupt) -> SNetInterrupted:
    what = "terminated (SIGTERM)" if isinstance(e, _Terminated) else "interrupted"
    return SNetInterrupted(f"{what}; the outputs produced so far were written")


@contextlib.contextmanager
def _terminate_as_interrupt():
    def on_term(signum, frame):
        raise _Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread (an embedding caller): leave the signal alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _top_view(args: argparse.Namespace, network):
    """``--top``: the live view of the network's boxes (snet.commands.top), or None."""
    if not getattr(args, "top", False):
        return None
    from snet.commands.top import TopView

    return TopView(d.name for d in network.graph.boxes)


def _run(network, records, options, writer, where: str, args: argparse.Namespace, stats_json, input_file,
         metrics=None, top=None, checkpointing=None) -> int:
    execution = network.execute_served(records, options, metrics)
    if checkpointing is not None:
        checkpointing.count_failures = lambda: execution.failures
    progress = top.start(execution) if top is not None else \
        start_progress(execution, args.progress, input_file) if args.progress is not None else None
    written = 0  # records handed to the writer: what --stats reports as written
    started = time.monotonic()
    try:
        last_flush = time.monotonic()
        for record in execution:
            writer.write(record)
            written += 1
            now = time.monotonic()
            # Flush before waiting for the network, and at least every FLUSH_SECONDS while outputs stream.
            if not execution.ready() or now - last_flush >= FLUSH_SECONDS:
                writer.flush()
                last_flush = now
        if checkpointing is not None:  # the final state, before the writer ends the output
            checkpointing.finish()
    except KeyboardInterrupt as e:
        raise _interrupted(e) from None
    except OSError as e:
        raise _write_failed(where, e) from None
    finally:
        if progress is not None:
            progress.stop()
        try:
            execution.close()
        finally:
            try:
                writer.close()
            except OSError as e:
                raise _write_failed(where, e) from None
            finally:
                if progress is not None:
                    progress.report(final=True)
                stats = _final_stats(execution)
                # The engine's measure of the run, in the words --stats uses; the command's own clock only
                # for an engine that could not say.
                seconds = stats.seconds if stats is not None else time.monotonic() - started
                log.info("info: %s after %s; %d records written", "stopped" if sys.exc_info()[0] else "done",
                         format_duration(seconds), written)
                if args.stats or stats_json is not None:
                    report_stats(stats if stats is not None else execution.stats(), written, args.stats, stats_json)
    before = checkpointing.failures_before if checkpointing is not None else 0  # (a resumed run's)
    failures = before + execution.failures
    if failures:
        where_to = f" (error records in {args.errors})" if args.errors is not None else ""
        earlier = f", {before} of them before the run resumed" if before else ""
        print(f"snet: {failures} record{'s' if failures != 1 else ''} failed and "
              f"{'were' if failures != 1 else 'was'} skipped{earlier}{where_to}", file=sys.stderr)
    return 0


def _final_stats(execution) -> RunStats | None:
    """The run's statistics once it is over, or None when the engine cannot give them (a failed start)."""
    try:
        return execution.stats()
    except Exception:
        return None


def _made_by(network, label: str) -> str:
    """`` (made by box 'f')``: the boxes whose output types have the field `label`, as a hint."""
    names = sorted({d.name for d in network.graph.boxes if any(label in v for v in d.variants)})
    if not names:
        return ""
    return f" (made by box {', '.join(repr(n) for n in names)})" if len(names) == 1 else \
        f" (made by one of the boxes {', '.join(repr(n) for n in names)})"


def _open_stats_json(path: str | None):
    """The file ``--stats-json`` names, opened before the run so that a bad path is a usage error."""
    if path is None:
        return None
    if path == "-":
        raise SNetUsageError("--stats-json takes a file name: standard output carries the records")
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as e:
        raise SNetUsageError(f"cannot open the --stats-json file {path}: {e.strerror or e}") from None


def report_stats(stats: RunStats, written: int, summary: bool, json_file) -> None:
    """``--stats`` and ``--stats-json``: the engine's figures, with the records out counted as written.

    The engine counts an output when it leaves the network; after Ctrl-C some
    of those were never taken by the writer, so the command reports the
    records it wrote, and the engine's own count as ``records_produced``.
    """
    produced = stats.records_out
    stats = attrs.evolve(stats, records_out=written)
    if summary:
        print(stats.summary(), file=sys.stderr)
    if json_file is not None:
        with json_file:
            json.dump({**stats.to_json(), "records_produced": produced}, json_file, indent=2, sort_keys=True,
                      default=str)
            json_file.write("\n")


def _write_failed(where: str, error: OSError) -> SNetRuntimeError:
    return SNetRuntimeError(f"cannot write the {where}: {error.strerror or error}")


class _MarkedHandler(logging.StreamHandler):
    """A handler of the command's own, marked so that it is found again (and not added twice)."""

    snet_warnings = False  # shows the `snet` logger's warnings (show_warnings)
    snet_progress = False  # shows the Spark part's per-batch lines (log_spark_batches)


def show_warnings(level: int = logging.WARNING) -> None:
    """Show the messages of the ``snet`` logger from `level` up on standard error, as bare lines.

    ``-q`` gives ERROR (no warnings), ``-v`` INFO (what the run does).
    """
    logger = logging.getLogger("snet")
    handler = next((h for h in logger.handlers if getattr(h, "snet_warnings", False)), None)
    if handler is None:
        handler = _MarkedHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.snet_warnings = True
        logger.addHandler(handler)
        logger.propagate = False  # the command owns standard error: no second copy from a root handler
    handler.setLevel(level)
    if level < logging.WARNING:
        logger.setLevel(level)


def _shown(path: str | None, default: str) -> str:
    return default if path in (None, "-") else path


def _box_origins(network) -> str:
    """Where the bound box functions come from: ``f, g from net.py``."""
    by_file: dict[str, list[str]] = {}
    for name, function in sorted(network.boxes.items()):
        module = sys.modules.get(getattr(function, "__module__", None) or "")
        origin = getattr(module, "__file__", None) or getattr(module, "__name__", None) or "Python"
        by_file.setdefault(origin, []).append(name)
    return "; ".join(f"{', '.join(names)} from {origin}" for origin, names in by_file.items()) or "none"


def log_spark_batches() -> None:
    """Show the Spark part's per-batch log lines (logger ``snet.spark``, INFO) on standard error."""
    logger = logging.getLogger("snet.spark")
    if not any(getattr(h, "snet_progress", False) for h in logger.handlers):
        handler = _MarkedHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("snet progress: %(message)s"))
        handler.snet_progress = True
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # not a second time through the "snet" logger's handler (-v)
