"""Box concurrency ``auto`` against a grid of fixed settings and against the default, ratios in one run.

    python3 -m pytest bench/test_bench_auto.py --benchmark-only -s

Three networks, boxes from bench/auto_boxes.py (fixed work per call):

1. a 29-box pipeline whose middle box ``wait`` releases the GIL for 0.5 ms
   (the shape of a signal-processing pipeline with one dominant stage in a
   C library), 28 cheap ``step`` boxes around it;
2. the same pipeline with ``crunch`` in the middle: a pure-Python loop of
   fixed length that holds the GIL;
3. Fibonacci (the conformance suite's ``fibonacci`` case, fib(22)): no
   boxes at all, so ``auto`` only chooses the active workers;
4. five cheap ``step`` boxes in a pipeline, 200,000 records: nothing to
   overlap, where one worker beats two (the GIL changes hands for nothing).

Each network runs once under every setting of the grid — ``-w 1`` with
box concurrency 1, and box concurrency C in 1, 2, 4, 8, 16 with ``max(C,
cores)`` workers —, under today's default (as many workers as cores, box
concurrency = workers) and under ``auto``; then the grid's fastest, the
default and ``auto`` run interleaved ``ROUNDS`` more times
(``SNET_BENCH_ROUNDS``, default 3); the figures are medians.  Two figures per setting: the whole run's time,
and the time of the run's second half (from the output that ends the first
half to the last; Fibonacci has one output: the whole run), which leaves out the start, where ``auto`` is still
trying levels.  Ratios are throughputs: above 1, ``auto`` is faster.  The
controller's settling time is ``RunStats.auto.settled_seconds``.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import snet

ROOT = Path(__file__).resolve().parents[1]
BOXES = Path(__file__).resolve().parent / "auto_boxes.py"
CASES = ROOT / "tests" / "conformance" / "cases"
STAGES = 29
ROUNDS = int(os.environ.get("SNET_BENCH_ROUNDS", "3"))
CORES = os.cpu_count() or 1

GRID = [("w1 c1", {"workers": 1, "box_concurrency": 1})] + [
    (f"c{c}", {"workers": max(CORES, c), "box_concurrency": c}) for c in (1, 2, 4, 8, 16)]
DEFAULT = ("default", {})
AUTO = ("auto", {"box_concurrency": "auto"})


def pipeline(middle: str):
    names = ["step"] * STAGES
    names[STAGES // 2] = middle
    source = (f"net pipe {{ box step ((a) -> (a)); box {middle} ((a) -> (a)); }} connect "
              + " .. ".join(names) + ";")
    return snet.load(source, boxes=str(BOXES))


def timed(net, records, expected, options) -> dict:
    """One run: its time, the time of its second half, and where auto settled."""
    start = time.perf_counter()
    half_at = None
    count = 0
    with net.run(records, **options) as execution:
        for _ in execution:
            count += 1
            if count == expected // 2:
                half_at = time.perf_counter()
    end = time.perf_counter()
    assert count == expected, (count, expected)
    auto = execution.stats().auto
    return {"seconds": end - start, "second_half": end - (half_at or start),
            "settled": auto.settled_seconds if auto is not None else None,
            "workers": auto.workers if auto is not None else None,
            "levels": {name: box.concurrency for name, box in execution.stats().boxes.items()} if auto else None}


def _levels(levels) -> str:
    return ",".join(f"{name}={level}" for name, level in sorted(levels.items())) or "-"


def compare(net, records, expected) -> dict:
    """The grid once, then the best setting, the default and auto interleaved ``ROUNDS`` times; medians."""
    settings = dict(GRID + [DEFAULT, AUTO])
    runs: dict[str, list[dict]] = {name: [] for name in settings}
    for name, options in settings.items():
        runs[name].append(timed(net, records, expected, dict(options)))
    grid = [name for name, _ in GRID]
    first = min(grid, key=lambda n: runs[n][0]["seconds"])
    for _ in range(ROUNDS):
        for name in dict.fromkeys([first, DEFAULT[0], AUTO[0]]):
            runs[name].append(timed(net, records, expected, dict(settings[name])))
    med = {name: {key: statistics.median(r[key] for r in rs) for key in ("seconds", "second_half")}
           for name, rs in runs.items()}
    best = min(grid, key=lambda n: med[n]["seconds"])
    best_half = min(grid, key=lambda n: med[n]["second_half"])
    figures = {f"{name}_s": m["seconds"] for name, m in med.items()}
    figures.update({
        "best": best,
        "auto_vs_best": med[best]["seconds"] / med["auto"]["seconds"],
        "auto_vs_default": med["default"]["seconds"] / med["auto"]["seconds"],
        "best_second_half": best_half,
        "auto_vs_best_second_half": med[best_half]["second_half"] / med["auto"]["second_half"],
        "auto_vs_default_second_half": med["default"]["second_half"] / med["auto"]["second_half"],
        "auto_settled_s": " ".join(f"{r['settled']:.2f}" for r in runs["auto"]),
        "auto_levels": " ".join(_levels(r["levels"]) for r in runs["auto"]),
        "auto_workers": " ".join(str(r["workers"]) for r in runs["auto"]),
        "load_average": os.getloadavg()[0],
    })
    return figures


def test_auto_on_a_pipeline_with_a_gil_releasing_box(benchmark, report):
    net = pipeline("wait")
    records = [{"a": i} for i in range(64_000)]
    report(**benchmark.pedantic(compare, (net, records, len(records)), rounds=1, iterations=1))


def test_auto_on_a_pipeline_with_a_pure_python_box(benchmark, report):
    net = pipeline("crunch")
    records = [{"a": i} for i in range(30_000)]
    report(**benchmark.pedantic(compare, (net, records, len(records)), rounds=1, iterations=1))


def test_auto_on_fibonacci(benchmark, report):
    net = snet.load(CASES / "fibonacci" / "net.snet")
    report(**benchmark.pedantic(compare, (net, [{"<n>": 22, "<id>": 1}], 1), rounds=1, iterations=1))


def test_auto_on_a_cheap_pipeline(benchmark, report):
    net = snet.load("net pipe { box step ((a) -> (a)); } connect " + " .. ".join(["step"] * 5) + ";",
                    boxes=str(BOXES))
    records = [{"a": i} for i in range(200_000)]
    report(**benchmark.pedantic(compare, (net, records, len(records)), rounds=1, iterations=1))
