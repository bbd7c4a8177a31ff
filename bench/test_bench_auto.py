"""Box concurrency ``auto`` against a grid of fixed settings and against the default, ratios in one run.

    python3 -m pytest bench/test_bench_auto.py --benchmark-only -s

Four networks, boxes from bench/auto_boxes.py (fixed work per call):

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
cores)`` workers —, under the default before ``auto`` became the default
(as many workers as cores, box concurrency = workers; "default" in the
figures) and under ``auto``; then the grid's fastest in that pass (the
"best"), the default and ``auto`` run interleaved ``ROUNDS`` more times
(``SNET_BENCH_ROUNDS``, default 3).  The figures of these three are
medians of the interleaved rounds alone, and each ratio is the median of
the rounds' own ratios (a round's three runs are next to each other, so a
drift of the machine's speed moves them together): the pass that picked
the best does not count, since a setting picked for a lucky run would
keep its luck.  Two figures per setting: the whole run's time,
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
# the default before auto: as many workers as cores, as many calls of a box at once as workers
DEFAULT = ("default", {"workers": CORES, "box_concurrency": CORES})
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
    figures = against_grid(lambda options: timed(net, records, expected, options), GRID)
    figures["auto_levels"] = " ".join(_levels(r["levels"]) for r in figures.pop("auto_runs"))
    return figures


def against_grid(run, grid_settings, rounds: int = ROUNDS) -> dict:
    """``run(options)`` once for every setting of ``grid_settings``, the default and auto, then the grid's
    fastest, the default and auto interleaved ``rounds`` more times: the grid pass's times, the medians of the
    rounds and the medians of the rounds' ratios (``auto_runs``: auto's runs in the rounds, as ``run`` gave
    them)."""
    settings = dict(grid_settings + [DEFAULT, AUTO])
    once = {name: run(dict(options)) for name, options in settings.items()}
    best = min((name for name, _ in grid_settings), key=lambda n: once[n]["seconds"])
    compared = list(dict.fromkeys([best, DEFAULT[0], AUTO[0]]))
    runs: dict[str, list[dict]] = {name: [] for name in compared}
    for _ in range(max(1, rounds)):
        for name in compared:
            runs[name].append(run(dict(settings[name])))

    def median(name: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[name])

    def ratio(name: str, key: str) -> float:  # above 1: auto is faster
        return statistics.median(a[key] / b[key] for a, b in zip(runs[name], runs[AUTO[0]]) if b[key] > 0)

    figures = {f"{name}_s": r["seconds"] for name, r in once.items() if name not in compared}
    figures.update({f"{name}_s": median(name, "seconds") for name in compared})
    figures.update({
        "best": best,
        "auto_vs_best": ratio(best, "seconds"),
        "auto_vs_default": ratio(DEFAULT[0], "seconds"),
        "auto_vs_best_second_half": ratio(best, "second_half"),
        "auto_vs_default_second_half": ratio(DEFAULT[0], "second_half"),
        "auto_settled_s": " ".join(f"{r['settled']:.2f}" for r in runs[AUTO[0]]),
        "auto_workers": " ".join(str(r["workers"]) for r in runs[AUTO[0]]),
        "auto_runs": runs[AUTO[0]],
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
