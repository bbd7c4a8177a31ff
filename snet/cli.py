"""The ``snet`` command: ``run``, ``check``, ``graph`` (interfaces.md §1) and ``spark-submit``.

This module only parses the command line and maps errors to exit statuses;
each sub-command lives in :mod:`snet.commands`.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import logging
import sys
from typing import Callable

from snet._version import __version__
from snet.errors import EXIT_STARTUP, SNetCompileError, SNetError, SNetInterrupted

PROGRESS_SECONDS = 2.0  # --progress without a number


def _add_boxes_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--boxes", action="append", default=[], metavar="SPEC",
                   help="box module: a path to a .py file, or a name: NAME.py in the current folder "
                        "if it exists, else the importable module NAME "
                        "(repeatable; default: NET.py beside NET.snet)")
    p.add_argument("--net", metavar="NAME",
                   help="the top-level net to use (default: the only one, or the one named after the file)")
    _add_dialect_options(p)


def _add_dialect_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dialect", choices=("standard", "rts"), default="standard",
                   help="the language read: standard (default), or rts, the reference distribution's dialect "
                        "(inline box code, 'type t = t;' naming an outer t, declared-only nets bound from NAME.snet, "
                        "parenthesised exit patterns and split tags)")
    p.add_argument("--net-path", action="append", default=[], metavar="DIR",
                   help="a folder searched for NAME.snet to bind a declared-only net NAME, after the program's "
                        "own folder (rts dialect; repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="snet", description="S-Net: declarative coordination of Python box functions.")
    parser.add_argument("--version", action="version", version=f"snet {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser("run", help="run a network over a stream of records")
    run.add_argument("net_file", metavar="NET.snet")
    run.add_argument("-i", "--input", default="-", metavar="INPUT",
                     help="input records (.jsonl/.ndjson or .xml; default: standard input); with --spark also "
                          "a Parquet, JSON, CSV or ORC path, glob or URI read by Spark")
    run.add_argument("-o", "--output", default="-", metavar="OUTPUT",
                     help="output records (.jsonl or .xml; default: standard output); with --spark and a Spark "
                          "input also a Parquet, JSON, CSV or ORC folder written by Spark")
    formats = ("jsonl", "xml", "parquet", "json", "csv", "orc")  # the last four: Spark-native runs (docs/spark.md)
    run.add_argument("--format", choices=formats,
                     help="record format of input and output (default: from the file extension; jsonl on a pipe); "
                          "parquet, json, csv, orc: read and written by Spark, with --spark")
    run.add_argument("--input-format", choices=formats, help="record format of the input only")
    run.add_argument("--output-format", choices=formats, help="record format of the output only")
    run.add_argument("--xml-mode", choices=("textual", "binary"), default="textual",
                     help="how XML output writes field values: textual (default) or the C4SNet binary form")
    _add_boxes_option(run)
    run.add_argument("-w", "--workers", type=int, metavar="N",
                     help="worker threads of the FRONT engine, at most (default: the number of cores, and one "
                          "more for each call of a box that auto lets run beside the others, up to 16 more)")
    run.add_argument("--engine", default=None, metavar="NAME",
                     help="engine: front (default) or reference")
    run.add_argument("--allow-pickle", action="store_true",
                     help='read {"$pickle": ...} field values from the input (unpickling runs code), and write '
                          'output values that JSON cannot hold in that form rather than stop with an error')
    run.add_argument("--throttle", metavar="OFFSET,FACTOR",
                     help="admit input only while inputs < OFFSET + FACTOR * outputs")
    run.add_argument("--box-concurrency", action="append", default=[], metavar="N|auto|NAME=N|NAME=auto",
                     help="concurrent calls of one box instance: auto (the default: the runtime chooses each box's "
                          "level and the active workers as the run goes on), a number N for every box, or NAME=N "
                          "for one box (repeatable)")
    run.add_argument("--box-processes", action="append", default=[], metavar="N|NAME=N[,calls=C][,memory=SIZE]",
                     help="run box calls in N worker processes: N for every box, or NAME=N for one box "
                          "(repeatable); for pure-Python boxes that need more than one core. calls=C and "
                          "memory=SIZE (512M, 2G) replace a box process after C calls or once it holds SIZE")
    run.add_argument("--box-timeout", action="append", default=[], metavar="SECONDS|NAME=SECONDS",
                     help="abandon a box call after SECONDS and fail its record (then --on-error applies): a "
                          "default for every box, or NAME=SECONDS for one box (repeatable)")
    run.add_argument("--box-retries", action="append", default=[], metavar="N[,BACKOFF]|NAME=N[,BACKOFF]",
                     help="try a failing box call again up to N times, waiting BACKOFF seconds (default 0.1), "
                          "doubling each time: a default for every box, or NAME=... for one box (repeatable)")
    run.add_argument("--checkpoint", metavar="DIR", default=None,
                     help="take consistent snapshots of the run in DIR (made if needed); running the same command "
                          "again resumes from the last one, with exactly-once output (needs -i FILE and -o FILE)")
    run.add_argument("--checkpoint-interval", type=float, metavar="SECONDS", default=None,
                     help="seconds between two snapshots (default 10)")
    run.add_argument("--checkpoint-reset", action="store_true",
                     help="forget the snapshots in the --checkpoint directory and start afresh")
    run.add_argument("--no-steal", action="store_true",
                     help="disable work stealing between workers (for measurements)")
    run.add_argument("--no-fuse", action="store_true",
                     help="run every box and filter as an entity of its own, not chains of them as one "
                          "(FRONT; for comparison)")
    run.add_argument("--seed", type=int, metavar="S",
                     help="seed the scheduler's tie-breaks (victim order), for reproducing runs")
    run.add_argument("--on-error", choices=("stop", "skip"), default=None,
                     help="at a run-time error in a box or filter: stop the run (default), or skip the record "
                          "with a warning and go on (exit 0 when the input was all read)")
    run.add_argument("--max-held", type=int, metavar="N",
                     help="stop with an error when the network holds more than N records and star replicas at "
                          "once (a star that keeps unfolding; default 250000; 0: no bound)")
    run.add_argument("--memory-limit", metavar="SIZE",
                     help="stop with an error when the run has grown the process's memory by more than SIZE "
                          "(bytes, or 512M, 2G; default: no limit)")
    run.add_argument("--errors", metavar="FILE",
                     help="write one JSON Lines error record per failing record to FILE; implies --on-error skip")
    run.add_argument("--stats", action="store_true",
                     help="print a summary of the run on standard error at the end: records, per box calls, "
                          "time and share, records held in synchro-cells, peak entities")
    run.add_argument("--stats-json", metavar="FILE",
                     help="write every statistic of the run, the engine's own counters too, to FILE as JSON")
    run.add_argument("--metrics-port", metavar="[HOST:]PORT",
                     help="serve the run's figures in the Prometheus text format at http://127.0.0.1:PORT/metrics "
                          "while it runs (HOST:PORT: another address; 0: any free port); the address is printed "
                          "on standard error; needs prometheus-client")
    run.add_argument("--progress", type=float, nargs="?", const=PROGRESS_SECONDS, default=None, metavar="SECONDS",
                     help="show progress on standard error: on a terminal a live display (records in and out, "
                          "rate, and for an input file the share of its bytes read); elsewhere a line every "
                          "SECONDS (default 2); Spark batches are also logged one by one")
    run.add_argument("--top", action="store_true",
                     help="draw the network's boxes on standard error while the run goes on, redrawn live: per "
                          "box calls per second, mean and 99th-percentile call time, share of the time in boxes, "
                          "records queued, concurrency; records held in synchro-cells and memory above (needs a "
                          "terminal)")
    run.add_argument("--split-processes", type=int, metavar="N",
                     help="run the replicas of index splits in N local processes, keyed by tag value (pure-Python "
                          "boxes in splits use N cores; not with --spark)")
    run.add_argument("--process-splits", metavar="IDS",
                     help="which splits run in the split processes: 'auto' (default), 'all', or a comma list of "
                          "FILE:LINE:COL positions or net names")
    run.add_argument("--process-batch", type=int, metavar="N",
                     help="records per batch of the split processes (default: chosen while the run goes on under "
                          "box concurrency auto; 1024 with --box-concurrency N; fewer where they are large)")
    run.add_argument("--spark", metavar="MASTER",
                     help="run index splits on Spark (local[N], spark://, yarn, k8s://, sc://); "
                          "default: $SNET_SPARK_MASTER, else no Spark")
    run.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                     help="a Spark configuration setting (repeatable)")
    run.add_argument("--spark-splits", metavar="IDS",
                     help="which splits run on Spark: 'auto' (default), 'all', or a comma list of "
                          "FILE:LINE:COL positions or net names")
    run.add_argument("--spark-batch", type=int, metavar="N",
                     help="records per Spark batch (default: chosen while the run goes on under box concurrency "
                          "auto, from 4096; 4096 with --box-concurrency N; fewer where they are large)")
    run.add_argument("--spark-driver-fallback", action="store_true",
                     help="Spark source and sink, but a network whose state cannot be partitioned: run it on the "
                          "driver instead of stopping")
    run.add_argument("--stream", action="store_true",
                     help="with --spark and a Spark source folder and sink folder: run the network as a Structured "
                          "Streaming query over the files that keep arriving in the source, --checkpoint DIR its "
                          "checkpoint location; until Ctrl-C or SIGTERM (exit 0 once the micro-batch in progress "
                          "is committed)")
    run.add_argument("--available-now", action="store_true",
                     help="with --stream: process the files there now, then stop")
    run.add_argument("--spark-schema", metavar="DDL",
                     help="types of output columns of a Spark-native run, e.g. 'x double, `<t>` long'; the others "
                          "are inferred (default: all inferred)")
    loudness = run.add_mutually_exclusive_group()
    loudness.add_argument("-q", "--quiet", action="store_true",
                          help="print no warnings (errors, and what --stats and --progress ask for, still appear)")
    loudness.add_argument("-v", "--verbose", action="store_true",
                          help="also print what the run does: the net and its boxes, the engine, the record "
                               "files, the Spark batches, the end")
    run.set_defaults(func=_run, parser=run)

    check = sub.add_parser("check", help="parse, resolve and type-check; print the signature")
    check.add_argument("net_file", metavar="NET.snet")
    _add_boxes_option(check)
    check.add_argument("-v", "--verbose", action="store_true", help="print the signature of every net")
    check.add_argument("-q", "--quiet", action="store_true", help="print no warnings")
    check.add_argument("--strict", action="store_true",
                       help="treat every warning as an error: report them as errors and exit with status 2")
    check.set_defaults(func=_check, parser=check)

    graph = sub.add_parser("graph", help="draw the static property graph (DOT, or a Graphviz drawing: .svg, .png, .pdf...)")
    graph.add_argument("net_file", metavar="NET.snet")
    _add_drawing_options(graph, compact="draw each combinator once around its operands, boxes by name only, "
                                        "no type labels")
    graph.add_argument("--collapse", action="append", default=[], metavar="NET",
                       help="draw the named net NET as one node with its signature (repeatable)")
    graph.add_argument("--fused", action="store_true",
                       help="colour the chains of boxes and filters that FRONT runs as one entity each "
                            "(an async def box, or one in box processes, runs alone)")
    graph.set_defaults(func=_graph, parser=graph)

    explain = sub.add_parser("explain", help="draw the network with a run's figures: each box coloured by its "
                                             "share of the time in boxes and labelled with its calls and times")
    explain.add_argument("net_file", metavar="NET.snet")
    explain.add_argument("--stats-json", required=True, metavar="RUN.json",
                         help="the figures of a run, as 'snet run --stats-json' wrote them")
    _add_drawing_options(explain, compact="draw each combinator once around its operands, boxes by name only")
    explain.set_defaults(func=_explain, parser=explain)

    fmt = sub.add_parser("fmt", help="rewrite .snet files in the canonical layout (comments kept)")
    fmt.add_argument("files", nargs="+", metavar="FILE.snet",
                     help="files, or folders of .snet files; - alone: standard input to standard output")
    fmt_mode = fmt.add_mutually_exclusive_group()
    fmt_mode.add_argument("--check", action="store_true",
                          help="write nothing; print the diffs and exit with 1 if a file would change")
    fmt_mode.add_argument("--diff", action="store_true", help="write nothing; print the diffs")
    fmt.add_argument("--dialect", choices=("standard", "rts"), default="standard",
                     help="the language read: standard (default), or rts, the reference distribution's dialect")
    fmt.set_defaults(func=_fmt, parser=fmt)

    lsp = sub.add_parser("lsp", help="a language server for editors, on standard input and output")
    lsp.add_argument("--dialect", choices=("standard", "rts"), default="standard",
                     help="the language read (an editor's initialization option 'dialect' overrides it)")
    lsp.set_defaults(func=_lsp, parser=lsp)

    sub.add_parser("spark-submit", help="run 'snet run' under Spark's spark-submit (docs/spark.md)",
                   usage="snet spark-submit [SPARK-SUBMIT OPTIONS] [--dry-run] [--spark-submit PROGRAM] "
                         "-- NET.snet [SNET RUN OPTIONS]",
                   description="Everything before '--' goes to spark-submit (--master, --deploy-mode, --conf, "
                               "--driver-memory ...); after it come the arguments of snet run. --dry-run prints "
                               "the command without running it.")
    return parser


def _add_drawing_options(parser: argparse.ArgumentParser, compact: str) -> None:
    """The options ``snet graph`` and ``snet explain`` share: where the drawing goes, the net, its layout."""
    parser.add_argument("-o", "--output", default="-", metavar="FILE",
                        help="output file: .dot or .gv for DOT text; .svg, .png, .pdf... are drawn by Graphviz's "
                             "dot (default: DOT on standard output)")
    parser.add_argument("--net", metavar="NAME", help="the top-level net to draw")
    _add_dialect_options(parser)
    parser.add_argument("--compact", action="store_true", help=compact)
    parser.add_argument("--left-to-right", action="store_true",
                        help="lay the stages out from left to right (default: top to bottom)")


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The subcommand `name` of `module`, imported when it runs: ``snet check`` never loads the runtime."""

    def run(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(module), name)(args)

    return run


_run = _command("snet.commands.run", "run_command")
_check = _command("snet.commands.check", "check_command")
_graph = _command("snet.commands.graph", "graph_command")
_explain = _command("snet.commands.explain", "explain_command")
_fmt = _command("snet.commands.fmt", "fmt_command")
_lsp = _command("snet.lsp", "lsp_command")


def _spark_submit(words: list[str], parser: argparse.ArgumentParser) -> int:
    """``snet spark-submit``: its arguments are spark-submit's and snet run's, split at ``--``."""
    from snet.commands.submit import submit_command
    return submit_command(words, parser)


def report(error: SNetError) -> None:
    """Print an error as the contract asks: one actionable line first."""
    if isinstance(error, SNetCompileError):
        for d in error.diagnostics:
            print(d.render(), file=sys.stderr)
    else:
        text = error.render() if hasattr(error, "render") else str(error)
        if not text.startswith(("error:", "warning:")) and ": error:" not in text.split("\n", 1)[0]:
            text = "error: " + text
        print(text, file=sys.stderr)


def unrecognized(extras: list[str], command: argparse.ArgumentParser) -> str:
    """argparse's message for arguments nobody takes, with the option each one probably meant."""
    known = [s for action in command._actions for s in action.option_strings if s.startswith("--")]
    hints = []
    for extra in extras:
        close = difflib.get_close_matches(extra.split("=", 1)[0], known, n=1) if extra.startswith("--") else []
        if close:
            hints.append(f"{extra.split('=', 1)[0]}: did you mean {close[0]}?")
    return f"unrecognized arguments: {' '.join(extras)}" + (f" ({'; '.join(hints)})" if hints else "")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def bare_progress(argv: list[str]) -> list[str]:
    """`argv` with a ``--progress`` that is not followed by a number spelt ``--progress=2.0``.

    ``--progress`` takes an optional number of seconds; argparse would take
    whatever follows as that number (``snet run --progress net.snet`` would
    lose its network file), so a following word that is no number is left
    to the arguments after it.
    """
    out = list(argv)
    for i, word in enumerate(out):
        if word == "--":
            break
        if len(word) > 4 and "--progress".startswith(word) and (i + 1 == len(out) or not _is_number(out[i + 1])):
            out[i] = f"--progress={PROGRESS_SECONDS}"
    return out


DASHED_VALUES = ("--throttle",)  # options whose value may start with '-' (a negative number)


def dashed_values(argv: list[str]) -> list[str]:
    """`argv` with ``--throttle -1,0`` spelt ``--throttle=-1,0``.

    argparse takes a word that starts with '-' and is not a plain negative
    number for an option, so a value such as ``-1,0`` would be "expected one
    argument"; joined to its option it reaches the option's own check, which
    says what is wrong with it.
    """
    out = list(argv)
    i = 0
    while i < len(out) - 1:
        word = out[i]
        if word == "--":
            break
        if any(len(word) > 4 and option.startswith(word) for option in DASHED_VALUES) and out[i + 1].startswith("-"):
            out[i:i + 2] = [f"{word}={out[i + 1]}"]
        i += 1
    return out


@contextlib.contextmanager
def _loggers_kept(*names: str):
    """Put the named loggers back as they were: a command called in process (tests, notebooks)
    must not leave its standard-error handlers behind, or stop the loggers propagating."""
    kept = [(lg, list(lg.handlers), lg.propagate, lg.level) for lg in map(logging.getLogger, names)]
    try:
        yield
    finally:
        for lg, handlers, propagate, level in kept:
            lg.handlers[:] = handlers
            lg.propagate = propagate
            lg.setLevel(level)


interrupted = False  # the last command ended by Ctrl-C or SIGTERM (`python -m snet` then ends at once)


def _stop_spark() -> None:
    """Before an interrupted command's message: stop Spark if this run started it (its JVM writes last otherwise)."""
    from snet.commands.sparknative import stop_spark_after_interrupt  # imports no pyspark

    stop_spark_after_interrupt()


def main(argv: list[str] | None = None) -> int:
    with _loggers_kept("snet", "snet.spark"):
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    words = sys.argv[1:] if argv is None else list(argv)
    if words and words[0] == "spark-submit" and not {"-h", "--help"} & set(words[1:words.index("--")]
                                                                            if "--" in words else words[1:]):
        def command() -> int:
            return _spark_submit(words[1:], parser)
    else:
        args, extras = parser.parse_known_args(dashed_values(bare_progress(words)))
        if extras:
            parser.error(unrecognized(extras, args.parser))  # exits with status 2

        def command() -> int:
            return args.func(args)
    global interrupted
    try:
        return command()
    except SNetError as error:
        interrupted = isinstance(error, SNetInterrupted)
        if interrupted:
            _stop_spark()
        report(error)
        return error.exit_status
    except KeyboardInterrupt:
        _stop_spark()
        print("error: interrupted", file=sys.stderr)
        interrupted = True
        return 1
    except BrokenPipeError:
        return 1
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_STARTUP


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
