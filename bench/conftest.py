"""Helpers for benchmarks that report ratios measured side by side.

The machine is shared and noisy, so absolute times say little; a ratio of
two commands run alternately in the same process is what the benchmarks
report.  ``paired(candidate, baseline, rounds)`` runs the two callables
alternately and returns the ratio of their median times, with both medians.
"""

from __future__ import annotations

import statistics
import time

import pytest


def paired(candidate, baseline, rounds: int = 5) -> dict:
    cand, base = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        baseline()
        base.append(time.perf_counter() - t)
        t = time.perf_counter()
        candidate()
        cand.append(time.perf_counter() - t)
    c, b = statistics.median(cand), statistics.median(base)
    return {"candidate_s": c, "baseline_s": b, "ratio": c / b}


@pytest.fixture
def report(benchmark, request):
    """``report(name, **figures)``: store figures with the benchmark and print them."""
    def emit(**figures):
        benchmark.extra_info.update(figures)
        shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items())
        print(f"\n[{request.node.name}] {shown}")
    return emit
