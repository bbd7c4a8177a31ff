"""What every peer workload script shares: contenders, alternating rounds, checks, the table.

A workload script builds a list of :class:`Contender` (a name, a function
that takes the input and returns the output, or the reason it is skipped)
and calls :func:`main`.  Each round runs every contender once, in turn, in
this process; the table gives each one's median time, its time per record
and its ratio to the plain loop (the first contender), with the load
average before and after, since the machine may be shared; and the ratio
of this process's CPU time to the plain loop's, which a loaded machine
disturbs less than the clock (but which leaves out the work of a
contender's worker processes).  Every
contender's output is checked against the plain loop's (as a multiset
where the order is not part of the result) before any time counts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:  # run from a checkout: this snet, not another installed one
    sys.path.insert(0, ROOT)


class Contender:
    """One way to do a workload: ``run(inputs) -> outputs``, or ``skip``, why it cannot run here."""

    def __init__(self, name: str, run: Callable[[Any], Any] | None = None, skip: str | None = None,
                 ordered: bool = True, note: str = ""):
        self.name = name
        self.run = run
        self.skip = skip
        self.ordered = ordered  # outputs compared in order (else as a multiset)
        self.note = note
        self.times: list[float] = []
        self.cpu: list[float] = []  # this process's CPU time (its worker processes' not counted)


def missing(module: str, extra: str = "peers") -> str | None:
    """Why a contender needing ``module`` is skipped (None: it imports)."""
    try:
        __import__(module)
    except ImportError as e:
        return f"{module} is not installed ({e}); pip install -e '.[{extra}]'"
    return None


def arguments(description: str, records: int, rounds: int = 5) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--records", type=int, default=records, help=f"input records (default {records:,})")
    parser.add_argument("--rounds", type=int, default=rounds, help=f"alternating rounds (default {rounds})")
    parser.add_argument("--only", default="",
                        help="contenders to run, by part of their name, separated by ';' (default: all)")
    return parser.parse_args()


def _same(expected: Any, got: Any, ordered: bool) -> bool:
    if ordered:
        return list(got) == list(expected)
    key = repr
    return Counter(map(key, got)) == Counter(map(key, expected))


def main(title: str, contenders: list[Contender], inputs: Any, count: int, rounds: int, only: str = "",
         unit: str = "record") -> list[Contender]:
    """Check, then time ``contenders`` in alternating rounds; print the table (markdown)."""
    if only:
        wanted = [part.strip() for part in only.split(";") if part.strip()]  # (names hold commas)
        contenders = [c for i, c in enumerate(contenders) if i == 0 or any(w in c.name for w in wanted)]
    load_before = os.getloadavg()
    baseline = contenders[0]
    expected = baseline.run(inputs)
    for c in contenders:
        if c.skip is None:
            try:
                if not _same(expected, c.run(inputs), c.ordered):
                    c.skip = "its output differs from the plain loop's"
            except Exception as e:  # a peer that cannot run here: said in the table, never hidden
                c.skip = f"failed: {type(e).__name__}: {e}"
    for _ in range(rounds):
        for c in contenders:
            if c.skip is None:
                started, used = time.perf_counter(), time.process_time()
                c.run(inputs)
                c.times.append(time.perf_counter() - started)
                c.cpu.append(time.process_time() - used)
    load_after = os.getloadavg()
    base = statistics.median(baseline.times)
    print(f"\n### {title}\n")
    print(f"{count:,} {unit}s, median of {rounds} alternating rounds; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after, on {os.cpu_count()} cores; Python {sys.version.split()[0]}\n")
    cpu_base = statistics.median(baseline.cpu)
    print(f"| contender | median s | µs per {unit} | × plain loop | CPU of this process, × plain loop's |")
    print("|---|---|---|---|---|")
    for c in contenders:
        if c.skip is not None:
            print(f"| {c.name} | skipped: {c.skip} | | | |")
            continue
        median = statistics.median(c.times)
        note = f" ({c.note})" if c.note else ""
        print(f"| {c.name}{note} | {median:.3f} | {1e6 * median / count:.2f} | {median / base:.2f} | "
              f"{statistics.median(c.cpu) / cpu_base:.2f} |")
    sys.stdout.flush()
    return contenders


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux: ru_maxrss is in KB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


__all__ = ["Contender", "ROOT", "arguments", "main", "missing", "peak_rss_mb"]
