"""Costs that must not grow with the work: time per record against records held.

Synchro-cell stars pair the k-th record of one pattern with the k-th of the
other.  Fed every ``{a}`` first and then every ``{b}``, a run holds n records
in cells at its peak; the time per record must stay flat as n grows (5k,
10k, 20k, 40k), on both engines.  The figure is the ratio of the time per
record at the largest size to that at the smallest, measured side by side
(1.0 is flat; a cost linear in the records held would give about 8).

    python3 -m pytest bench/test_bench_scaling.py --benchmark-only -s
"""

from __future__ import annotations

import time

import pytest

import snet

SIZES = (5_000, 10_000, 20_000, 40_000)
NETS = {
    "sync_star_pairing": "net s connect [| {a}, {b} |] * {a, b};",
    "stateful_star": "net s connect ([| {a}, {b} |] .. []) * {a, b};",
}


def per_record(net, n, engine):
    records = [{"a": i} for i in range(n)] + [{"b": i} for i in range(n)]
    options = {"engine": engine} if engine == "reference" else {"engine": "front", "workers": 1}
    best = None
    for _ in range(3):
        t = time.perf_counter()
        count = sum(1 for _ in net.run(records, **options))
        elapsed = time.perf_counter() - t
        best = elapsed if best is None else min(best, elapsed)
    assert count == n
    return best / (2 * n)


@pytest.mark.parametrize("engine", ["reference", "front"])
@pytest.mark.parametrize("name", sorted(NETS))
def test_time_per_record_is_flat_in_the_records_held(benchmark, report, name, engine):
    net = snet.load(NETS[name])
    figures = {f"us_per_record_{n // 1000}k_held": 1e6 * per_record(net, n, engine) for n in SIZES}
    benchmark.pedantic(lambda: per_record(net, SIZES[0], engine), rounds=1, iterations=1)
    first, last = figures[f"us_per_record_{SIZES[0] // 1000}k_held"], figures[f"us_per_record_{SIZES[-1] // 1000}k_held"]
    report(**figures, growth_40k_over_5k=last / first)
