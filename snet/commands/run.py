"""``snet run``: compile, bind, read records, run, write records (interfaces.md §1).

Order of events, which the exit statuses depend on:

1. compile the ``.snet`` file (errors: exit 2, every diagnostic printed);
2. bind every declared box (missing ones: exit 2), before any record is read;
3. open input and output (a missing input file: exit 2);
4. run; outputs are written as they arrive and flushed at least every
   ``FLUSH_SECONDS`` so that a consumer on a pipe sees them promptly;
5. on a run-time error, a bad input record or Ctrl-C, the outputs produced
   so far are written and flushed, then the error is reported (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from snet.backends import RunOptions, start
from snet.core.boxes import bind_boxes, resolve_box_sources
from snet.errors import SNetInterrupted, SNetUsageError

FLUSH_SECONDS = 0.05


def parse_throttle(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        offset, factor = (float(x) for x in text.split(","))
    except ValueError:
        raise SNetUsageError(f"--throttle takes OFFSET,FACTOR (two numbers), not '{text}'") from None
    if offset < 1 or factor < 0:
        raise SNetUsageError("--throttle needs OFFSET >= 1 and FACTOR >= 0, or no input is ever admitted")
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
        if n < 1:
            raise SNetUsageError(f"--box-concurrency must be at least 1, not {n}")
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
    if args.workers is not None and args.workers < 1:
        raise SNetUsageError(f"-w/--workers must be at least 1, not {args.workers}")
    default, per_box = parse_box_concurrency(args.box_concurrency)
    return RunOptions(
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


def run_command(args: argparse.Namespace) -> int:
    from snet.recordio import detect_format, open_writer, read_records
    from snet.spg.build import compile_file

    if not os.path.isfile(args.net_file):
        raise SNetUsageError(f"network file not found: {args.net_file}")
    graph = compile_file(args.net_file, net=args.net)
    for warning in graph.warnings:
        print(warning, file=sys.stderr)
    boxes = bind_boxes(graph, resolve_box_sources(args.boxes, args.net_file))
    options = options_from_args(args)

    in_format = detect_format(args.input, args.input_format or args.format)
    out_format = detect_format(args.output, args.output_format or args.format)
    if args.input not in (None, "-") and not os.path.isfile(args.input):
        raise SNetUsageError(f"input file not found: {args.input}")
    if args.progress is not None and args.progress <= 0:
        raise SNetUsageError(f"--progress takes a positive number of seconds, not {args.progress}")
    records = read_records(args.input, in_format, allow_pickle=args.allow_pickle)
    writer = open_writer(args.output, out_format)
    if args.progress is not None and options.spark_master:
        log_spark_batches()
    execution = start(args.engine, graph, boxes, records, options)
    progress = Progress(execution, args.progress) if args.progress is not None else None
    try:
        last_flush = time.monotonic()
        for record in execution:
            writer.write(record)
            now = time.monotonic()
            if now - last_flush >= FLUSH_SECONDS:
                writer.flush()
                last_flush = now
    except KeyboardInterrupt:
        raise SNetInterrupted("interrupted; the outputs produced so far were written") from None
    finally:
        if progress is not None:
            progress.stop()
        try:
            execution.close()
        finally:
            writer.close()
        if progress is not None:
            progress.report(final=True)
        if args.stats:
            print_stats(execution.stats())
    for warning in execution.warnings:
        print(warning, file=sys.stderr)
    return 0


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
        out = stats.get("records_out", 0)
        then, before = self.last
        rate = (out - before) / (now - then) if now > then else 0.0
        self.last = (now, out)
        line = (f"snet progress: {'done, ' if final else ''}{now - self.started:.1f} s, "
                f"in {stats.get('records_in', 0)}, out {out} ({rate:.0f}/s)")
        spark = stats.get("spark")
        if spark:
            splits = spark.get("splits", {}).values()
            line += (f"; spark: {sum(s['batches'] for s in splits)} batches, "
                     f"{sum(s['records'] for s in splits)} records, {spark.get('seconds', 0.0):.1f} s")
        print(line, file=sys.stderr, flush=True)


def log_spark_batches() -> None:
    """Show the Spark part's per-batch log lines (logger ``snet.spark``, INFO) on standard error."""
    import logging

    logger = logging.getLogger("snet.spark")
    if not any(getattr(h, "snet_progress", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("snet progress: %(message)s"))
        handler.snet_progress = True
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def print_stats(stats: dict) -> None:
    """Statistics on standard error: a readable summary, then the same data as one JSON line.

    The JSON line starts with ``snet stats: `` so scripts can find and parse it.
    """
    print(format_stats(stats), file=sys.stderr)
    print("snet stats: " + json.dumps(stats, sort_keys=True, default=str), file=sys.stderr)


def format_stats(stats: dict) -> str:
    lines = ["-- snet run statistics --"]
    boxes = stats.get("boxes", {})
    for key in sorted(stats):
        value = stats[key]
        if key == "boxes":
            continue
        if isinstance(value, dict):
            inner = ", ".join(f"{k}={_num(v)}" for k, v in sorted(value.items()) if not isinstance(v, (dict, list)))
            lines.append(f"{key:>22}: {inner}")
            if key == "spark":
                for where, split in sorted(value.get("splits", {}).items()):
                    inner = ", ".join(f"{k}={_num(v)}" for k, v in sorted(split.items())
                                      if not isinstance(v, (dict, list)) and k != "split")
                    lines.append(f"{'split ' + where:>22}: {inner}")
        elif isinstance(value, list):
            lines.append(f"{key:>22}: " + ", ".join(_num(v) for v in value))
        else:
            lines.append(f"{key:>22}: {_num(value)}")
    if boxes:
        lines.append(f"{'box':>22}  {'calls':>10}  {'seconds':>10}  {'us/call':>10}")
        for name, entry in sorted(boxes.items()):
            calls = entry.get("calls", 0)
            seconds = entry.get("seconds", 0.0)
            per_call = 1e6 * seconds / calls if calls else 0.0
            lines.append(f"{name:>22}  {calls:>10}  {seconds:>10.4f}  {per_call:>10.1f}")
    return "\n".join(lines)


def _num(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
