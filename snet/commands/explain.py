"""``snet explain NET.snet --stats-json RUN.json [-o FILE]``: the network's drawing with a run's figures.

The drawing is ``snet graph``'s (:mod:`snet.spg.dot`); each box is filled
with a colour for its share of the time spent in boxes, from white (none)
to red (all of it), and labelled with its calls, its time, that share and
the time per call.  A box the run never called is drawn white with "not
called".  The title gives the run: its time and records in and out.  So the
bottleneck is the reddest box.  The figures of a box are those of all its
instances, as ``--stats`` gives them.

``RUN.json`` is what ``snet run --stats-json`` wrote.  A file that cannot
be read, is not such a file, or names boxes the network does not have (a
run of another network) is refused with exit status 2, as is everything
``snet graph`` refuses.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Mapping

from snet.errors import SNetUsageError
from snet.stats import BoxStats, format_duration

COLD = (255, 255, 255)  # the fill of a box that took no time
HOT = (215, 48, 31)  # the fill of a box that took all of it


def explain_command(args: argparse.Namespace) -> int:
    from snet.commands.check import compile_options
    from snet.commands.graph import write_drawing
    from snet.spg.build import compile_file
    from snet.spg.dot import to_dot
    from snet.warningsummary import summarise

    if not os.path.isfile(args.net_file):
        raise SNetUsageError(f"network file not found: {args.net_file}")
    run = read_run(args.stats_json)
    graph = compile_file(args.net_file, net=args.net, options=compile_options(args))
    for warning in summarise(graph.warnings):
        print(warning, file=sys.stderr)
    boxes = BoxStats.table(run["boxes"])
    names = {d.name for d in graph.boxes}
    strangers = sorted(set(boxes) - names)
    if strangers:
        raise SNetUsageError(f"{args.stats_json} is not a run of net {graph.net_name}: it has figures of "
                             f"box{'es' if len(strangers) > 1 else ''} {', '.join(strangers)}, which the net "
                             f"does not have (its boxes: {', '.join(sorted(names)) or 'none'})")
    text = to_dot(graph, compact=args.compact, left_to_right=args.left_to_right,
                  decorate=lambda n: box_figures(boxes, n.name), note=run_line(run, boxes))
    return write_drawing(text, args.output or "-",
                         {"the network file": args.net_file, "the figures file (--stats-json)": args.stats_json})


def read_run(path: str) -> Mapping[str, Any]:
    """The figures ``snet run --stats-json`` wrote to `path`; a usage error naming the file for anything else."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise SNetUsageError(f"cannot read the --stats-json file {path}: {e.strerror or e}") from None
    except (ValueError, RecursionError) as e:
        raise SNetUsageError(f"{path} is not JSON: {e}") from None
    problem = _run_problem(data)
    if problem:
        raise SNetUsageError(f"{path} is not what 'snet run --stats-json' writes: {problem}")
    return data


def _run_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return "not a JSON object"
    for key in ("seconds", "records_in", "records_out"):
        if not _number(data.get(key)):
            return f"no number '{key}'"
    boxes = data.get("boxes")
    if not isinstance(boxes, dict):
        return "no object 'boxes'"
    for name, entry in boxes.items():
        if not (isinstance(entry, dict) and _number(entry.get("calls")) and _number(entry.get("seconds"))):
            return f"box '{name}' has no numbers 'calls' and 'seconds'"
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def box_figures(boxes: Mapping[str, BoxStats], name: str) -> tuple[str, dict[str, str]]:
    """The lines under box `name` and its fill: calls, time and share, time per call."""
    box = boxes.get(name)
    if box is None or box.calls == 0:
        return "not called", {"style": "filled", "fillcolor": share_colour(0.0)}
    total = sum(b.seconds for b in boxes.values())
    share = box.seconds / total if total > 0 else 0.0
    lines = (f"{box.calls:,} calls, {format_duration(box.seconds)} ({100 * share:.0f}%)\n"
             f"{format_duration(box.seconds_per_call)} per call")
    attrs = {"style": "filled", "fillcolor": share_colour(share)}
    if share > 0.6:
        attrs["fontcolor"] = "white"  # readable on the darker reds
    return lines, attrs


def share_colour(share: float) -> str:
    """``#rrggbb`` between COLD (share 0) and HOT (share 1)."""
    share = min(max(share, 0.0), 1.0)
    return "#" + "".join(f"{round(c + (h - c) * share):02x}" for c, h in zip(COLD, HOT))


def run_line(run: Mapping[str, Any], boxes: Mapping[str, BoxStats]) -> str:
    """The drawing's second title line: the run's time and records, and what the colours mean."""
    in_boxes = sum(b.seconds for b in boxes.values())
    return (f"run: {format_duration(run['seconds'])}, {run['records_in']:,} records in, "
            f"{run['records_out']:,} out; {format_duration(in_boxes)} in boxes, "
            f"each box coloured by its share of it")


__all__ = ["explain_command", "read_run", "box_figures", "share_colour"]
