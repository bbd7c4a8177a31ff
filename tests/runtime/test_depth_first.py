"""Depth-first stars (docs/runtime.md, "Depth-first stars").

A star whose operand holds no state shares one operand instance between
its replicas, and its incarnation 1 takes the record of the deepest replica
first.  The language allows that only because records of one replica keep
their order (per-path FIFO): these tests check that order against the
reference engine, and that the Fibonacci network's unfolding no longer
keeps a whole level of its call tree alive.
"""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

import snet

FIBONACCI = Path(__file__).resolve().parents[1] / "conformance" / "cases" / "fibonacci" / "net.snet"

# Each round doubles a record; <p> is the path of choices taken (most significant first)
DOUBLE = "[{<n>, <p>} -> {<n=n-1>, <p=2*p>}; {<n=n-1>, <p=2*p+1>}]"


def key(record):
    return json.dumps(record, sort_keys=True)


def run(net, recs, engine, workers=1):
    execution = net.run(recs, engine=engine, workers=workers)
    try:
        return list(execution), execution.stats()
    finally:
        execution.close()


@settings(max_examples=int(os.environ.get("SNET_DEPTH_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(depths=st.lists(st.integers(0, 5), min_size=1, max_size=40), det=st.booleans())
def test_records_leaving_at_one_replica_keep_their_order(depths, det):
    star = "**" if det else "*"
    net = snet.load(f"net t connect {DOUBLE} {star} {{<n>}} if <n <= 0>;")
    # input i leaves at replica d = depths[i], all its outputs there
    recs = [{"<n>": d, "<p>": 0, "i": i, "d": d} for i, d in enumerate(depths)]
    expected, _ = run(net, recs, "reference")
    for workers in (1, 2, 4):
        got, _ = run(net, recs, "front", workers)
        assert collections.Counter(map(key, got)) == collections.Counter(map(key, expected)), workers
        by_replica = collections.defaultdict(list)
        for r in got:
            by_replica[r["d"]].append((r["i"], r["<p>"]))
        for d, order in by_replica.items():
            # same replica: input order (FIFO stream into replica 1), then each
            # doubling's first output before its second (ordered filters)
            assert order == sorted(order), (workers, d, order)
        if det:
            # `**`: everything caused by input i before anything caused by input i+1
            assert [(r["i"], r["<p>"]) for r in got] == sorted((r["i"], r["<p>"]) for r in got), workers


def test_fibonacci_unfolds_depth_first():
    # Breadth first, the half-filled join replicas grow with the call tree
    # (2,000 entities alive at once at fib(20), 21,000 at fib(25)); depth
    # first, only the pending siblings along one path wait.
    net = snet.load(str(FIBONACCI))
    peaks = {}
    for n in (12, 20):
        got, stats = run(net, [{"<n>": n, "<id>": 1}], "front", 1)
        assert got == [{"<id>": 1, "<x>": [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987,
                                           1597, 2584, 4181, 6765][n]}]
        peaks[n] = stats.front.entities.peak
    assert peaks[20] <= peaks[12] + 2 * (20 - 12), peaks
