"""The figures of a run, per box, as a person reads them: ``snet run --top``, ``RunStats`` in a notebook.

One table, built from :class:`~snet.stats.RunStats` snapshots (what
``--stats``, ``--progress`` and ``/metrics`` read): a row per box with

* ``calls/s``: calls per second, over the time since the previous
  snapshot when one is given (what the box does *now*), else over the run;
* ``mean`` and ``p99``: the mean call time and its 99th percentile, over
  the run (the percentile read from the box's histogram,
  :meth:`~snet.stats.BoxStats.quantile`);
* ``share``: the box's part of all the time spent in boxes, as ``--stats``
  gives it: the box with the largest share is the bottleneck;
* ``queued``: records waiting in the box's inboxes now, and ``limit``: how
  many calls of one instance may run at once (engines that say: FRONT);

and a heading with the run's records in and out, their rate, the records
held in synchro-cells that have not fired, the live entities and the
process's resident memory.  :func:`rows` gives the same as plain data,
:func:`table_lines` as lines of text drawn with box characters;
:func:`rich_table` makes those a ``rich`` renderable (``--top``,
``RunStats.__rich__``) and :func:`html_table` writes the table as HTML
(``RunStats._repr_html_``).  The durations and sizes are written by
:func:`format_duration` (which ``--stats`` and ``-v`` use too) and
:func:`format_bytes`.
"""

from __future__ import annotations

import html
from typing import Any, Iterable

import attrs

# What this module reads of snet.stats's RunStats and BoxStats, by name: snet.stats imports it (the
# formatters of its snapshots), so it imports nothing of snet.stats.
RunStats = Any

COLUMNS = ("box", "calls", "calls/s", "mean", "p99", "share", "queued", "limit")


@attrs.frozen
class BoxRow:
    """One box's line of the table (figures as numbers; None where the engine does not say)."""

    name: str
    calls: int
    rate: float  # calls per second
    mean: float | None  # seconds per call
    p99: float | None
    share: float | None  # of all the time spent in boxes, 0..1
    queued: int | None
    limit: int | None


def rows(stats: RunStats, previous: RunStats | None = None, names: Iterable[str] = ()) -> list[BoxRow]:
    """The boxes of ``stats`` (and every one of ``names``, at 0 until called), busiest first.

    ``previous``: an earlier snapshot of the same run; the rate is then over
    the time between the two.
    """
    total = sum(box.seconds for box in stats.boxes.values())
    elapsed = stats.seconds - previous.seconds if previous is not None else stats.seconds
    out = []
    for name in sorted(set(stats.boxes) | set(names)):
        box = stats.boxes.get(name)
        if box is None:  # not called yet
            out.append(BoxRow(name=name, calls=0, rate=0.0, mean=None, p99=None, share=0.0 if total > 0 else None,
                              queued=None, limit=None))
            continue
        before = previous.boxes.get(name) if previous is not None else None
        calls = box.calls - (before.calls if before is not None else 0)
        out.append(BoxRow(name=name, calls=box.calls, rate=calls / elapsed if elapsed > 0 else 0.0,
                          mean=box.seconds_per_call if box.calls else None, p99=box.p99,
                          share=box.seconds / total if total > 0 else None, queued=box.queued, limit=box.limit))
    out.sort(key=lambda r: (-(r.share or 0.0), r.name))
    return out


def workers_phrase(stats: RunStats) -> str:
    """``, 2 workers`` on FRONT, ``, 1 of 18 workers active`` under box concurrency auto; nothing elsewhere."""
    if stats.engine != "front":
        return ""
    if stats.auto is not None and stats.workers > 1:
        return f", {stats.auto.workers} of {stats.workers} workers active"  # (more than one, here)
    return f", {stats.workers} worker{'s' if stats.workers != 1 else ''}"


def heading(stats: RunStats, previous: RunStats | None = None) -> list[str]:
    """The run in two lines: time, engine, records in and out with the rate out; then cells, entities, memory."""
    elapsed = stats.seconds - previous.seconds if previous is not None else stats.seconds
    out_since = stats.records_out - (previous.records_out if previous is not None else 0)
    parts = [f"{format_duration(stats.seconds)} on the {stats.engine} engine" + workers_phrase(stats),
             f"in {stats.records_in:,}, out {stats.records_out:,}"
             + (f" ({out_since / elapsed:,.0f}/s)" if elapsed > 0 else "")]
    state = []
    if stats.held_in_cells is not None:
        state.append(f"held in synchro-cells {stats.held_in_cells:,}")
    if stats.front is not None:
        state.append(f"entities {stats.front.entities.alive:,}")
    if stats.failures:
        state.append(f"failed {stats.failures:,}")
    if stats.resident_bytes is not None:
        state.append(f"memory {format_bytes(stats.resident_bytes)}")
    return ["; ".join(parts), "; ".join(state)] if state else ["; ".join(parts)]


def cells(row: BoxRow) -> tuple[str, ...]:
    """A row's figures as the table writes them (``-``: not known, or nothing to tell yet)."""
    return (row.name, f"{row.calls:,}", f"{row.rate:,.0f}" if row.rate >= 10 else f"{row.rate:.1f}",
            format_duration(row.mean) if row.mean is not None else "-",
            format_duration(row.p99) if row.p99 is not None else "-",
            f"{100 * row.share:.0f}%" if row.share is not None else "-",
            f"{row.queued:,}" if row.queued is not None else "-",
            str(row.limit) if row.limit is not None else "-")


def format_duration(seconds: float) -> str:
    """``1.23 s``, ``45.6 ms``, ``7.8 us``: three significant digits in a unit that suits."""
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.3g} s" if seconds < 1000 else f"{seconds:,.0f} s"
    if seconds >= 1e-3:
        return f"{1e3 * seconds:.3g} ms"
    return f"{1e6 * seconds:.3g} us"


def format_bytes(n: int) -> str:
    """``12.3 MiB``: a size in the binary unit that suits."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover - the loop returns


def table_lines(stats: RunStats, previous: RunStats | None = None, names: Iterable[str] = ()) -> list[str]:
    """The table as lines of text drawn with box characters: the header, then a row per box.

    Drawn here rather than by rich's Table, whose layout cost 5 ms of
    processor time per frame on the ten-box pipeline (this: under 0.5 ms):
    the live view redraws it twice a second while the run holds the GIL.
    """
    body = [cells(row) for row in rows(stats, previous, names)]
    widths = [max(len(column), *(len(line[i]) for line in body)) for i, column in enumerate(COLUMNS)]

    def line(values: Iterable[str], bar: str) -> str:
        parts = [v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths))]
        return f"{bar} " + f" {bar} ".join(parts) + f" {bar}"

    def rule(left: str, cross: str, right: str, fill: str) -> str:
        return left + cross.join(fill * (w + 2) for w in widths) + right

    return ([rule("┏", "┳", "┓", "━"), line(COLUMNS, "┃"), rule("┡", "╇", "┩", "━")]
            + [line(values, "│") for values in body] + [rule("└", "┴", "┘", "─")])


def rich_table(stats: RunStats, previous: RunStats | None = None, names: Iterable[str] = (),
               title: str = "snet") -> Any:
    """The heading and the table as a ``rich`` renderable (rich is imported here: only the views that draw need it)."""
    from rich.console import Group
    from rich.text import Text

    first, *rest = heading(stats, previous)
    lines = table_lines(stats, previous, names)
    table = Text("\n".join(lines), no_wrap=True, overflow="crop")
    start = len(lines[0]) + 1
    table.stylize("bold", start, start + len(lines[1]))  # the column names
    return Group(Text(f"{title}: {first}", style="bold"), *(Text(f"  {line}") for line in rest), table)


def html_table(stats: RunStats) -> str:
    """The table as HTML, for a notebook (``RunStats._repr_html_``)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells(row)) + "</tr>"
                   for row in rows(stats))
    return (f"<div><p><b>snet run</b>: {html.escape('; '.join(heading(stats)))}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


__all__ = ["BoxRow", "COLUMNS", "cells", "format_bytes", "format_duration", "heading", "html_table", "rich_table",
           "rows", "table_lines"]
