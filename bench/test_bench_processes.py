"""Box processes: what a call costs in a process, and what two processes give CPU-bound pure-Python boxes.

1. Per-call cost: a trivial box called directly in this process and
   through its stand-in, one box process (``snet.core.processes``), 5,000
   calls a round: the round trip per call (pickling, two pipe transfers,
   unpickling) and the CPU this process spends per call (the box process's
   own CPU excluded); then whole runs of a one-box network, FRONT with one
   worker, in process against ``processes=1``, the pool's start included.
2. A pipeline of two pure-Python boxes that compute for about ``WORK_MS``
   of CPU per call each, 200 records (400 calls), on a machine with two
   cores: ``processes=2`` (FRONT, two workers, two processes per box)
   against the same run in process with one worker (with the GIL, more
   workers run pure-Python boxes no faster).  Rounds alternate; the median
   and the best are reported, with the CPU ceiling: one core (what the run
   in process uses) plus the idle cores measured while it ran, at most 2.

    python3 -m pytest bench/test_bench_processes.py --benchmark-only -s
"""

from __future__ import annotations

import os
import statistics
import time

import snet

NET = "box f ((n) -> (n, s)); net p connect f;"
PIPELINE = "box f ((n) -> (n)); box g ((n) -> (n, s)); net p connect f .. g;"
WORK_MS = 5
CALLS = 5000


def trivial(n):
    return {"n": n, "s": 0}


def spin(n):
    deadline = time.thread_time() + WORK_MS / 1000
    s = 0
    while time.thread_time() < deadline:
        s += n
    return s


def first(n):
    spin(n)
    return {"n": n}


def second(n):
    return {"n": n, "s": spin(n)}


def timed(net, records, **options):
    started = time.perf_counter()
    count = sum(1 for _ in net.run(records, **options))
    elapsed = time.perf_counter() - started
    assert count == len(records)
    return elapsed


def idle_cores(run):
    """``run()``'s time and the cores idle meanwhile (from /proc/stat; None where it is missing)."""
    def idle():
        try:
            with open("/proc/stat") as f:
                fields = f.readline().split()[1:]
            return int(fields[3]) + int(fields[4])  # idle and iowait
        except (OSError, IndexError, ValueError):
            return None
    before = idle()
    elapsed = run()
    after = idle()
    if before is None or after is None:
        return elapsed, None
    return elapsed, (after - before) / os.sysconf("SC_CLK_TCK") / elapsed


def test_round_trip_and_parent_cpu_per_call(benchmark, report):
    from snet.core.processes import BoxProcesses

    pools = BoxProcesses({"f": trivial}, {"f": 1})
    try:
        stand_in = pools.function("f")
        stand_in(0)  # the process has started and imported the box's module
        local, trips, cpu = [], [], []
        for _ in range(5):
            started = time.perf_counter()
            for i in range(CALLS):
                trivial(i)
            local.append((time.perf_counter() - started) / CALLS)
            started, used = time.perf_counter(), time.process_time()
            for i in range(CALLS):
                stand_in(i)
            trips.append((time.perf_counter() - started) / CALLS)
            cpu.append((time.process_time() - used) / CALLS)
    finally:
        pools.close()
    net = snet.load(NET, boxes={"f": trivial})
    records = [{"n": i} for i in range(CALLS)]
    timed(net, records[:10], engine="front", workers=1, processes=1)  # the fork server starts once
    runs_local = [timed(net, records, engine="front", workers=1) for _ in range(3)]
    runs_remote = [timed(net, records, engine="front", workers=1, processes=1) for _ in range(3)]
    benchmark.pedantic(lambda: timed(net, records, engine="front", workers=1, processes=1), rounds=1, iterations=1)
    report(direct_call_us=1e6 * statistics.median(local),
           round_trip_median_us=1e6 * statistics.median(trips), round_trip_best_us=1e6 * min(trips),
           parent_cpu_median_us=1e6 * statistics.median(cpu), parent_cpu_best_us=1e6 * min(cpu),
           run_in_process_us_per_call=1e6 * min(runs_local) / CALLS,
           run_processes_1_us_per_call=1e6 * min(runs_remote) / CALLS)


def test_two_processes_against_one_worker_in_process(benchmark, report):
    net = snet.load(PIPELINE, boxes={"f": first, "g": second})
    records = [{"n": i} for i in range(200)]
    started = time.perf_counter()
    outputs = list(net.run(records, engine="front", processes=2))  # the first run starts the fork server
    first_run = time.perf_counter() - started
    assert [o["n"] for o in outputs] == list(range(200))  # a pipeline keeps input order
    local, remote, ceilings = [], [], []
    for _ in range(5):
        elapsed, idle = idle_cores(lambda: timed(net, records, engine="front", workers=1))
        local.append(elapsed)
        if idle is not None:
            ceilings.append(min(2.0, 1.0 + idle))
        remote.append(timed(net, records, engine="front", processes=2))
    benchmark.pedantic(lambda: timed(net, records, engine="front", processes=2), rounds=1, iterations=1)
    report(in_process_median_s=statistics.median(local), in_process_best_s=min(local),
           processes_median_s=statistics.median(remote), processes_best_s=min(remote),
           speedup_of_medians=statistics.median(local) / statistics.median(remote),
           speedup_of_bests=min(local) / min(remote), first_run_s=first_run,
           cpu_ceiling=statistics.median(ceilings) if ceilings else "unknown", cores=os.cpu_count(),
           load_average=round(os.getloadavg()[0], 2), work_ms_per_call=WORK_MS)
