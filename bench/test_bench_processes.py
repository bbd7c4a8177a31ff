"""Box processes: what a call costs in a process, and what two processes give CPU-bound pure-Python boxes.

1. Per-call cost: a trivial box called directly in this process and
   through its stand-in, one box process (``snet.core.processes``), 5,000
   calls a round: the round trip per call (pickling, two pipe transfers,
   unpickling) and the CPU this process spends per call (the box process's
   own CPU excluded); then whole runs of a one-box network, FRONT with one
   worker, in process against ``processes=1``, the pool's start included.
2. Batched calls: the same one-box network over ``BATCHED`` records, FRONT
   with one worker, in process against ``processes=1`` (whose calls go to
   the process in batches, snet.core.batching), rounds alternating in this
   process: the time per record of each, their ratio, the CPU per record
   of this process and of the box process, and the batches the pool sent.
3. A pipeline of two pure-Python boxes that compute for about ``WORK_MS``
   of CPU per call each, 200 records (400 calls), on a machine with two
   cores: ``processes=2`` (FRONT, two workers, two processes per box)
   against the same run in process with one worker (with the GIL, more
   workers run pure-Python boxes no faster).  Rounds alternate; the median
   and the best are reported, with the CPU ceiling before and after: how
   many cores two CPU-bound processes get meanwhile (2.0 on an idle
   two-core machine), the most two box processes could gain.

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
BATCHED = 50_000


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


def _probe(seconds):
    started, cpu = time.perf_counter(), time.thread_time()
    while time.perf_counter() - started < seconds:
        pass
    return time.thread_time() - cpu


def cpu_ceiling(seconds=0.5):
    """How many cores two CPU-bound processes get right now: 2.0 on an idle two-core machine.

    The speed-up two box processes can reach at most, whatever else runs.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver")) as pool:
        list(pool.map(_probe, [0.01, 0.01]))  # both processes have started
        return sum(pool.map(_probe, [seconds, seconds])) / seconds


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


def test_batched_calls_per_record_against_in_process(benchmark, report):
    import snet.core.processes as processes

    sent = []
    close = processes.BoxProcesses.close

    def counting_close(self):  # the pool's batches and its processes' CPU, read as the run releases it
        sent.append((*self.batches(), sum(_process_cpu(pid) for pid in self.pids())))
        close(self)

    net = snet.load(NET, boxes={"f": trivial})
    records = [{"n": i} for i in range(BATCHED)]
    timed(net, records[:10], engine="front", workers=1, processes=1)  # the fork server starts once
    local, remote, cpu_local, cpu_remote = [], [], [], []
    processes.BoxProcesses.close = counting_close
    try:
        for _ in range(5):
            used = time.process_time()
            local.append(timed(net, records, engine="front", workers=1))
            cpu_local.append(time.process_time() - used)
            used = time.process_time()
            remote.append(timed(net, records, engine="front", workers=1, processes=1))
            cpu_remote.append(time.process_time() - used)
    finally:
        processes.BoxProcesses.close = close
    benchmark.pedantic(lambda: timed(net, records, engine="front", workers=1, processes=1), rounds=1, iterations=1)
    messages, calls, _ = sent[-1]
    child_cpu = statistics.median(cpu for _, _, cpu in sent[-6:-1])  # the five timed runs'
    report(in_process_us_per_record=1e6 * statistics.median(local) / BATCHED,
           processes_1_us_per_record=1e6 * statistics.median(remote) / BATCHED,
           processes_1_best_us_per_record=1e6 * min(remote) / BATCHED,
           ratio_of_medians=statistics.median(remote) / statistics.median(local),
           parent_cpu_us_per_record_in_process=1e6 * statistics.median(cpu_local) / BATCHED,
           parent_cpu_us_per_record_processes=1e6 * statistics.median(cpu_remote) / BATCHED,
           box_process_cpu_us_per_record=1e6 * child_cpu / BATCHED,
           records_per_batch=calls / max(1, messages), load_average=round(os.getloadavg()[0], 2))


def _process_cpu(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (Linux ``/proc``; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def test_two_processes_against_one_worker_in_process(benchmark, report):
    net = snet.load(PIPELINE, boxes={"f": first, "g": second})
    records = [{"n": i} for i in range(200)]
    started = time.perf_counter()
    outputs = list(net.run(records, engine="front", processes=2))  # the first run starts the fork server
    first_run = time.perf_counter() - started
    assert [o["n"] for o in outputs] == list(range(200))  # a pipeline keeps input order
    ceilings = [cpu_ceiling()]
    local, remote = [], []
    for _ in range(5):
        local.append(timed(net, records, engine="front", workers=1))
        remote.append(timed(net, records, engine="front", processes=2))
    ceilings.append(cpu_ceiling())
    benchmark.pedantic(lambda: timed(net, records, engine="front", processes=2), rounds=1, iterations=1)
    report(in_process_median_s=statistics.median(local), in_process_best_s=min(local),
           processes_median_s=statistics.median(remote), processes_best_s=min(remote),
           speedup_of_medians=statistics.median(local) / statistics.median(remote),
           speedup_of_bests=min(local) / min(remote), first_run_s=first_run,
           cpu_ceiling_before=ceilings[0], cpu_ceiling_after=ceilings[1], cores=os.cpu_count(),
           # the boxes' CPU (WORK_MS a call, by thread_time) over the wall time: the cores each run had
           cores_used_in_process=2 * len(records) * WORK_MS / 1000 / statistics.median(local),
           cores_used_with_processes=2 * len(records) * WORK_MS / 1000 / statistics.median(remote),
           load_average=round(os.getloadavg()[0], 2), work_ms_per_call=WORK_MS)
