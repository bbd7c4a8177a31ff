"""Reclaimed split replicas: the shared ``fibonacci`` case, FRONT ``-w 1`` against the reference engine.

Each run is a child process of its own (so that its peak RSS is its own),
alternating FRONT and the reference engine; the child times the run alone
(loading the network and importing snet are left out) and reports its peak
RSS and, for FRONT, the entities alive at the end and the ones reclaimed.
The figures are in docs/performance.md.

    PYTHONPATH=$PWD python3 -m pytest bench/test_bench_reclaim.py -s --benchmark-disable-gc
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIBONACCI = ROOT / "tests" / "conformance" / "cases" / "fibonacci" / "net.snet"

CHILD = r"""
import json, resource, sys, time
import snet
net = snet.load(sys.argv[1])
t = time.perf_counter()
execution = net.run([{"<n>": int(sys.argv[2]), "<id>": 1}], engine=sys.argv[3], workers=1)
out = list(execution)
seconds = time.perf_counter() - t
stats = execution.stats()
front = stats.front
print(json.dumps({"seconds": seconds, "out": out, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "alive": front.entities.alive if front else None,
                  "peak_entities": front.entities.peak if front else None,
                  "reclaimed": front.entities.reclaimed if front else None}))
"""


def one(n: int, engine: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", CHILD, str(FIBONACCI), str(n), engine],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@pytest.mark.parametrize("n, rounds", [(22, 3), (25, 2)])
def test_fibonacci_front_against_reference(benchmark, report, n, rounds):
    front, ref = [], []

    def pair():
        ref.append(one(n, "reference"))
        front.append(one(n, "front"))

    benchmark.pedantic(pair, rounds=rounds, iterations=1)
    for r in front + ref:
        assert r["out"] == [{"<id>": 1, "<x>": fib(n)}]
    f = statistics.median(r["seconds"] for r in front)
    b = statistics.median(r["seconds"] for r in ref)
    report(n=n, front_s=f, reference_s=b, speedup=b / f,
           front_rss_mb=max(r["rss_mb"] for r in front), reference_rss_mb=max(r["rss_mb"] for r in ref),
           front_alive_at_end=max(r["alive"] for r in front), front_peak_entities=max(r["peak_entities"] for r in front),
           front_reclaimed=front[0]["reclaimed"])


def test_fibonacci_front_memory_from_25_to_30(benchmark, report):
    """FRONT's peak RSS is flat between fib(25) and fib(30): its star unfolds the call tree depth first."""
    runs = {}

    def both():
        runs[25] = one(25, "front")
        runs[30] = one(30, "front")

    benchmark.pedantic(both, rounds=1, iterations=1)
    assert runs[30]["out"] == [{"<id>": 1, "<x>": fib(30)}]
    # 11 times the calls: breadth first the peak grew 7 times (713 MB against 99 MB) and
    # the entities 10 times; depth first only the siblings along one path wait (5 more levels)
    assert runs[30]["rss_mb"] <= 1.1 * runs[25]["rss_mb"], runs
    assert runs[30]["peak_entities"] <= runs[25]["peak_entities"] + 2 * (30 - 25), runs
    report(rss25_mb=runs[25]["rss_mb"], rss30_mb=runs[30]["rss_mb"], s25=runs[25]["seconds"], s30=runs[30]["seconds"],
           peak_entities25=runs[25]["peak_entities"], peak_entities30=runs[30]["peak_entities"],
           alive30=runs[30]["alive"])
