"""``snet run``: check options, load, read records, run, write records (interfaces.md §1).

Order of events, which the exit statuses depend on:

1. turn the options' text into values and check them (:mod:`snet.options`
   does the checking; its messages are relabelled with the flag's spelling):
   exit 2;
2. load the network through the embedding API (:func:`snet.api.load`):
   compile the ``.snet`` file (errors: exit 2, every diagnostic printed),
   then bind every declared box (missing ones: exit 2), before any record
   is read;
3. open input and output (a missing input file: exit 2);
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

from snet.errors import SNetRuntimeError, SNetInterrupted, SNetOptionError, SNetUsageError
from snet.options import RunOptions
from snet.stats import RunStats

FLUSH_SECONDS = 0.05

# How the command line spells each run option, for the messages of snet.options.
FLAGS = {
    "engine": "--engine", "workers": "-w/--workers", "throttle": "--throttle",
    "box_concurrency": "--box-concurrency", "box_concurrency_per_box": "--box-concurrency",
    "steal": "--no-steal", "seed": "--seed", "stats": "--stats", "spark_master": "--spark",
    "spark_conf": "--spark-conf", "spark_splits": "--spark-splits", "spark_batch": "--spark-batch",
}


def parse_throttle(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        offset, factor = (float(x) for x in text.split(","))
    except ValueError:
        raise SNetUsageError(f"--throttle takes OFFSET,FACTOR (two numbers), not '{text}'") from None
    return offset, factor


def parse_box_concurrency(values: list[str]) -> tuple[int | None, dict[str, int]]:
    default: int | None = None
    per_box: dict[str, int] = {}
    for value in values:
        name, eq, number = value.rpartition("=")
        try:
            n = int(number)
        except ValueError:
            raise SNetUsageError(f"--box-concurrency takes N or NAME=N, not '{value}'") from None
        if eq:
            per_box[name] = n
        else:
            default = n
    return default, per_box


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
    try:
        return RunOptions(
            engine=args.engine,
            workers=args.workers,
            throttle=parse_throttle(args.throttle),
            box_concurrency=default,
            box_concurrency_per_box=per_box,
            steal=not args.no_steal,
            seed=args.seed,
            stats=args.stats,
            spark_master=args.spark or os.environ.get("SNET_SPARK_MASTER") or None,
            spark_conf=parse_spark_conf(args.spark_conf),
            spark_splits=args.spark_splits,
            spark_batch=args.spark_batch,
        )
    except SNetOptionError as e:
        raise e.relabelled(FLAGS.get(e.option, e.option)) from None


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
    show_warnings()
    network = load(NetFile(args.net_file), boxes=args.boxes, net=args.net)

    in_format = detect_format(args.input, args.input_format or args.format)
    out_format = detect_format(args.output, args.output_format or args.format)
    if getattr(args, "xml_mode", "textual") == "binary" and out_format != "xml":
        raise SNetUsageError("--xml-mode binary applies to XML output only; the output format is jsonl")
    if args.input not in (None, "-") and not os.path.isfile(args.input):
        raise SNetUsageError(f"input file not found: {args.input}")
    if _same_file(args.input, args.output):
        raise SNetUsageError(f"the output file {args.output} is the input file: writing it would destroy the input")
    records = read_records(args.input, in_format, allow_pickle=args.allow_pickle)
    writer = open_writer(args.output, out_format, getattr(args, "xml_mode", "textual"))
    where = "standard output" if args.output in (None, "-") else f"output file {args.output}"
    if args.progress is not None and options.spark_master:
        log_spark_batches()
    # Boxes that print write to standard error from the start: standard output carries the records only.
    # SIGTERM (what service managers send) stops the run as Ctrl-C does.
    with contextlib.redirect_stdout(sys.stderr), _terminate_as_interrupt():
        return _run(network, records, options, writer, where, args)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt."""


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


def _run(network, records, options, writer, where: str, args: argparse.Namespace) -> int:
    execution = network.execute(records, options)
    progress = Progress(execution, args.progress) if args.progress is not None else None
    try:
        last_flush = time.monotonic()
        for record in execution:
            writer.write(record)
            now = time.monotonic()
            # Flush before waiting for the network, and at least every FLUSH_SECONDS while outputs stream.
            if not execution.ready() or now - last_flush >= FLUSH_SECONDS:
                writer.flush()
                last_flush = now
    except KeyboardInterrupt as e:
        what = "terminated (SIGTERM)" if isinstance(e, _Terminated) else "interrupted"
        raise SNetInterrupted(f"{what}; the outputs produced so far were written") from None
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
        if progress is not None:
            progress.report(final=True)
        if args.stats:
            print_stats(execution.stats())
    return 0


def _same_file(input_path, output_path) -> bool:
    """True when ``-o`` names the file ``-i`` reads (opening it for writing would truncate the input)."""
    if input_path in (None, "-") or output_path in (None, "-") or not os.path.exists(output_path):
        return False
    try:
        return os.path.samefile(input_path, output_path)
    except OSError:
        return False


def _write_failed(where: str, error: OSError) -> SNetRuntimeError:
    return SNetRuntimeError(f"cannot write the {where}: {error.strerror or error}")


def show_warnings() -> None:
    """Show the warnings of the ``snet`` logger on standard error, as bare lines."""
    logger = logging.getLogger("snet")
    if not any(getattr(h, "snet_warnings", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.snet_warnings = True
        logger.addHandler(handler)
        logger.propagate = False  # the command owns standard error: no second copy from a root handler


class Progress:
    """``--progress``: a line on standard error every ``interval`` seconds while the run goes on.

    ``snet progress: 12.0 s, in 120000, out 119800 (10000/s); spark: 3 batches, 12288 records, 2.1 s``
    The figures come from the engine's statistics (cheap counters, read
    without stopping the workers); the rate is that of the last interval.
    """

    def __init__(self, execution, interval: float):
        import threading

        self.execution = execution
        self.interval = interval
        self.started = time.monotonic()
        self.last = (self.started, 0)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="snet-progress", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.done.wait(self.interval):
            self.report()

    def stop(self) -> None:
        self.done.set()
        self.thread.join()

    def report(self, final: bool = False) -> None:
        try:
            stats = self.execution.stats()
        except Exception:  # a run being torn down: skip this line
            return
        now = time.monotonic()
        out = stats.records_out
        then, before = self.last
        rate = (out - before) / (now - then) if now > then else 0.0
        self.last = (now, out)
        line = (f"snet progress: {'done, ' if final else ''}{now - self.started:.1f} s, "
                f"in {stats.records_in}, out {out} ({rate:.0f}/s)")
        spark = stats.spark
        if spark is not None:
            line += f"; spark: {spark.batches} batches, {spark.records} records, {spark.seconds:.1f} s"
        print(line, file=sys.stderr, flush=True)


def log_spark_batches() -> None:
    """Show the Spark part's per-batch log lines (logger ``snet.spark``, INFO) on standard error."""
    logger = logging.getLogger("snet.spark")
    if not any(getattr(h, "snet_progress", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("snet progress: %(message)s"))
        handler.snet_progress = True
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def print_stats(stats: RunStats) -> None:
    """Statistics on standard error: a readable summary, then the same data as one JSON line.

    The JSON line starts with ``snet stats: `` so scripts can find and parse it.
    """
    print(format_stats(stats), file=sys.stderr)
    print("snet stats: " + json.dumps(stats.to_json(), sort_keys=True, default=str), file=sys.stderr)


def format_stats(stats: RunStats) -> str:
    return stats.format_table()
