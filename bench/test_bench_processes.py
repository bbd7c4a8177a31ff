"""Box processes: what a call costs in a process, and what two processes give a CPU-bound pure-Python box.

1. Per-call cost: a trivial box called in process and through one box
   process, side by side; the difference is what sending the arguments to
   the process and the results back costs per call.
2. A pure-Python box that computes for about ``WORK_MS`` per call, on a
   machine with at least two cores: ``processes=2`` against the same run in
   process (both FRONT with two workers; in process the GIL runs one call at
   a time).

    python3 -m pytest bench/test_bench_processes.py --benchmark-only -s
"""

from __future__ import annotations

import time

import pytest

import snet

NET = "box f ((n) -> (n, s)); net p connect f;"
WORK_MS = 5


def trivial(n):
    return {"n": n, "s": 0}


def burn(n):
    deadline = time.thread_time() + WORK_MS / 1000
    s = 0
    while time.thread_time() < deadline:
        s += n
    return {"n": n, "s": s}


def best_time(net, records, rounds=3, **options):
    best = None
    for _ in range(rounds):
        t = time.perf_counter()
        count = sum(1 for _ in net.run(records, **options))
        elapsed = time.perf_counter() - t
        assert count == len(records)
        best = elapsed if best is None else min(best, elapsed)
    return best


def test_per_call_cost_of_a_box_process(benchmark, report):
    net = snet.load(NET, boxes={"f": trivial})
    records = [{"n": i} for i in range(5000)]
    local = best_time(net, records, engine="front", workers=1)
    remote = best_time(net, records, engine="front", workers=1, processes=1)
    benchmark.pedantic(lambda: best_time(net, records, 1, engine="front", workers=1, processes=1), rounds=1,
                       iterations=1)
    report(in_process_us_per_call=1e6 * local / len(records), box_process_us_per_call=1e6 * remote / len(records),
           added_us_per_call=1e6 * (remote - local) / len(records))


def test_two_processes_against_one_core(benchmark, report):
    net = snet.load(NET, boxes={"f": burn})
    records = [{"n": i} for i in range(200)]
    local = best_time(net, records, engine="front", workers=2)
    remote = best_time(net, records, engine="front", workers=2, processes=2)
    benchmark.pedantic(lambda: best_time(net, records, 1, engine="front", workers=2, processes=2), rounds=1,
                       iterations=1)
    report(in_process_s=local, two_processes_s=remote, speedup=local / remote, work_ms_per_call=WORK_MS)
