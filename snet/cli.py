"""The ``snet`` command: ``run``, ``check`` and ``graph`` (interfaces.md §1).

This module only parses the command line and maps errors to exit statuses;
each sub-command lives in :mod:`snet.commands`.
"""

from __future__ import annotations

import argparse
import difflib
import sys

from snet._version import __version__
from snet.errors import EXIT_STARTUP, SNetCompileError, SNetError


def _add_boxes_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--boxes", action="append", default=[], metavar="SPEC",
                   help="box module: a dotted importable name or a path to a .py file "
                        "(repeatable; default: NET.py beside NET.snet)")
    p.add_argument("--net", metavar="NAME",
                   help="the top-level net to use (default: the only one, or the one named after the file)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="snet", description="S-Net: declarative coordination of Python box functions.")
    parser.add_argument("--version", action="version", version=f"snet {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    run = sub.add_parser("run", help="run a network over a stream of records")
    run.add_argument("net_file", metavar="NET.snet")
    run.add_argument("-i", "--input", default="-", metavar="INPUT",
                     help="input records (.jsonl/.ndjson or .xml; default: standard input)")
    run.add_argument("-o", "--output", default="-", metavar="OUTPUT",
                     help="output records (.jsonl or .xml; default: standard output)")
    run.add_argument("--format", choices=("jsonl", "xml"),
                     help="record format of input and output (default: from the file extension; jsonl on a pipe)")
    run.add_argument("--input-format", choices=("jsonl", "xml"), help="record format of the input only")
    run.add_argument("--output-format", choices=("jsonl", "xml"), help="record format of the output only")
    run.add_argument("--xml-mode", choices=("textual", "binary"), default="textual",
                     help="how XML output writes field values: textual (default) or the C4SNet binary form")
    _add_boxes_option(run)
    run.add_argument("-w", "--workers", type=int, metavar="N",
                     help="worker threads of the FRONT engine (default: the number of cores)")
    run.add_argument("--engine", default=None, metavar="NAME",
                     help="engine: front (default) or reference")
    run.add_argument("--allow-pickle", action="store_true",
                     help='read {"$pickle": ...} field values from the input (unpickling runs code)')
    run.add_argument("--throttle", metavar="OFFSET,FACTOR",
                     help="admit input only while inputs < OFFSET + FACTOR * outputs")
    run.add_argument("--box-concurrency", action="append", default=[], metavar="N|NAME=N",
                     help="concurrent calls of one box instance: a default N, or NAME=N for one box (repeatable)")
    run.add_argument("--no-steal", action="store_true",
                     help="disable work stealing between workers (for measurements)")
    run.add_argument("--seed", type=int, metavar="S",
                     help="seed the scheduler's tie-breaks (victim order), for reproducing runs")
    run.add_argument("--stats", action="store_true",
                     help="print run statistics on standard error at the end")
    run.add_argument("--progress", type=float, nargs="?", const=2.0, default=None, metavar="SECONDS",
                     help="print a progress line on standard error every SECONDS (default 2): records in "
                          "and out, rate, and the Spark batches; Spark batches are also logged one by one")
    run.add_argument("--spark", metavar="MASTER",
                     help="run index splits on Spark (local[N], spark://, yarn, k8s://, sc://); "
                          "default: $SNET_SPARK_MASTER, else no Spark")
    run.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                     help="a Spark configuration setting (repeatable)")
    run.add_argument("--spark-splits", metavar="IDS",
                     help="which splits run on Spark: 'auto' (default), 'all', or a comma list of "
                          "FILE:LINE:COL positions or net names")
    run.add_argument("--spark-batch", type=int, metavar="N",
                     help="records per Spark batch (default 4096)")
    run.set_defaults(func=_run, parser=run)

    check = sub.add_parser("check", help="parse, resolve and type-check; print the signature")
    check.add_argument("net_file", metavar="NET.snet")
    _add_boxes_option(check)
    check.add_argument("-v", "--verbose", action="store_true", help="print the signature of every net")
    check.add_argument("--strict", action="store_true",
                       help="treat every warning as an error: report them as errors and exit with status 2")
    check.set_defaults(func=_check, parser=check)

    graph = sub.add_parser("graph", help="draw the static property graph (.dot, .svg or .png)")
    graph.add_argument("net_file", metavar="NET.snet")
    graph.add_argument("-o", "--output", default="-", metavar="FILE",
                       help="output file; .svg and .png need Graphviz's dot (default: DOT on standard output)")
    graph.add_argument("--net", metavar="NAME", help="the top-level net to draw")
    graph.set_defaults(func=_graph, parser=graph)
    return parser


def _run(args: argparse.Namespace) -> int:
    from snet.commands.run import run_command
    return run_command(args)


def _check(args: argparse.Namespace) -> int:
    from snet.commands.check import check_command
    return check_command(args)


def _graph(args: argparse.Namespace) -> int:
    from snet.commands.graph import graph_command
    return graph_command(args)


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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        parser.error(unrecognized(extras, args.parser))  # exits with status 2
    try:
        return args.func(args)
    except SNetError as error:
        report(error)
        return error.exit_status
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_STARTUP


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
