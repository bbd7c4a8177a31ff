"""Split processes: a pure-Python box in an index split, in two processes against two threads.

``work ! <t>`` over 64 tag values, 6 records each (384 calls), the box a
fixed amount of pure-Python arithmetic: a loop whose length is calibrated
once, when the benchmark starts, to take about ``WORK_MS`` on this machine,
then written into a box file (``fanned.py``) and loaded from there as users'
boxes are.  Each call does the same work whatever else runs (it is not a
loop that runs until a time has passed).  Two cases: every call the same
(``even``), and the first quarter of the records four times the rest
(``first_quarter_4x``, as when the biggest inputs come first).

Candidate: FRONT, two workers, ``split_processes=2`` (``snet run
--split-processes 2``); baseline: FRONT, two workers, the split in process
(``snet run -w 2``), where the GIL runs one call at a time.  Rounds
alternate (``bench/conftest.py: paired``); the candidate's times include
starting its two processes.  Reported with the load average, the CPU
ceiling (how many cores two CPU-bound processes get meanwhile: 2.0 on an
idle two-core machine) and what a user would write by hand instead: the
same box function mapped over the records by a warm
``concurrent.futures.ProcessPoolExecutor(2)`` (forkserver, chunks of 48;
its start not counted), which shows what two processes gain on this
machine (two processes busy at once each run somewhat slower than one
alone), and how close the split processes come to it.

    python3 -m pytest bench/test_bench_splitprocs.py --benchmark-only -s
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import pytest

import snet

from conftest import paired
from test_bench_processes import cpu_ceiling

NET = "net fanned {\n  box work((x, <t>) -> (x, <t>));\n} connect work ! <t>;\n"
WORK_MS = 5
TAGS = 64
PER_TAG = 6

BOX = '''
LOOPS = {loops}
HEAVY_BELOW = {heavy_below}


def work(x, t):
    s = x
    for i in range(LOOPS if x < HEAVY_BELOW else LOOPS // 4):
        s = (s * 31 + i) % 1000003
    return {{"x": s, "<t>": t}}
'''


def calibrated_loops(ms: float = WORK_MS) -> int:
    """The loop length of the box that takes about ``ms`` on this machine (best of a few tries)."""
    def spin(loops: int) -> float:
        started = time.thread_time()
        s = 1
        for i in range(loops):
            s = (s * 31 + i) % 1000003
        return time.thread_time() - started

    per_loop = min(spin(200_000) for _ in range(3)) / 200_000
    return max(1, int(ms / 1000 / per_loop))


# (the records a full call costs: every one; or the first quarter, the rest a quarter of it)
@pytest.mark.parametrize("heavy_below", [TAGS * PER_TAG, TAGS * PER_TAG // 4], ids=["even", "first_quarter_4x"])
def test_split_processes_against_threads(benchmark, report, tmp_path, heavy_below):
    """``first_quarter_4x``: the calls of the first 96 records cost four times those of the rest, as when
    the biggest inputs come first; a split process that had been given a fixed half would run all of them."""
    loops = calibrated_loops()
    (tmp_path / "fanned.py").write_text(BOX.format(loops=loops, heavy_below=heavy_below))
    (tmp_path / "fanned.snet").write_text(NET)
    net = snet.load(str(tmp_path / "fanned.snet"))
    records = [{"x": i, "<t>": i % TAGS} for i in range(TAGS * PER_TAG)]
    expected = sorted((o["<t>"], o["x"]) for o in net.run(records, engine="reference"))

    def run(**options):
        outputs = list(net.run(records, engine="front", workers=2, **options))
        assert sorted((o["<t>"], o["x"]) for o in outputs) == expected

    sys.path.insert(0, str(tmp_path))  # the box module, for the hand-written pool (its processes too)
    try:
        work = importlib.import_module("fanned").work
        xs, ts = [r["x"] for r in records], [r["<t>"] for r in records]
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver")) as pool:
            def by_hand():
                assert sorted((o["<t>"], o["x"]) for o in pool.map(work, xs, ts, chunksize=48)) == expected

            # the fork server starts once, with snet's modules loaded (a server started before snet asked for
            # them would make each split process import them itself, about 85 ms a run here); the pool's
            # processes start from it too
            run(split_processes=2)
            by_hand()
            load_before = os.getloadavg()[0]
            ceilings = [cpu_ceiling()]
            result = paired(lambda: run(split_processes=2), run, rounds=3)
            pooled = paired(by_hand, run, rounds=3)
            ceilings.append(cpu_ceiling())
    finally:
        sys.path.remove(str(tmp_path))
    benchmark.pedantic(lambda: run(split_processes=2), rounds=1, iterations=1)
    report(speedup=1 / result["ratio"], threads_s=result["baseline_s"], processes_s=result["candidate_s"],
           pool_by_hand_s=pooled["candidate_s"], pool_by_hand_speedup=1 / pooled["ratio"],
           processes_over_pool=result["candidate_s"] / pooled["candidate_s"],
           calls=len(records), loops=loops, work_ms_per_full_call=WORK_MS, full_calls=heavy_below,
           ms_per_call_in_process=1000 * result["baseline_s"] / len(records),
           cpu_ceiling_before=ceilings[0], cpu_ceiling_after=ceilings[1], cores=os.cpu_count(),
           load_average_before=round(load_before, 2), load_average_after=round(os.getloadavg()[0], 2))


TRIVIAL = "def work(x, t):\n    return {'x': x, '<t>': t}\n"


def test_cost_per_record(benchmark, report, tmp_path):
    """What a record costs through the split processes: a trivial box, 20,000 records over 64 tags.

    Wall time and this process's CPU time per record (the processes' own
    CPU excluded), FRONT with two workers, in process and with
    ``split_processes=2``: the pickling, the pipe transfers and the
    bookkeeping that a split's box must outweigh.
    """
    (tmp_path / "fanned.py").write_text(TRIVIAL)
    (tmp_path / "fanned.snet").write_text(NET)
    net = snet.load(str(tmp_path / "fanned.snet"))
    records = [{"x": i, "<t>": i % TAGS} for i in range(20_000)]

    def run(**options):
        started, cpu = time.perf_counter(), time.process_time()
        assert sum(1 for _ in net.run(records, engine="front", workers=2, **options)) == len(records)
        return time.perf_counter() - started, time.process_time() - cpu

    run(split_processes=2)
    local = [run() for _ in range(3)]
    remote = [run(split_processes=2) for _ in range(3)]
    benchmark.pedantic(lambda: run(split_processes=2), rounds=1, iterations=1)
    per = 1e6 / len(records)
    report(in_process_us=per * min(w for w, _ in local), in_process_cpu_us=per * min(c for _, c in local),
           split_processes_us=per * min(w for w, _ in remote), split_processes_cpu_us=per * min(c for _, c in remote),
           load_average=round(os.getloadavg()[0], 2))


CHAINED = ("net chained {\n  box work((x, <t>) -> (x, <t>));\n  box post((x) -> (y));\n}"
           " connect (work ! <t>) .. post;\n")
POST = '''

def post(x):
    s = x
    for i in range(LOOPS // 4):
        s = (s * 31 + i) % 1000003
    return {"y": s}
'''


def test_auto_batch_sizes_let_outputs_flow(benchmark, report, tmp_path):
    """``(work ! <t>) .. post``: the 5 ms box in 2 split processes, then a 1.25 ms box in process; 384 records.

    Candidate: ``box_concurrency="auto"`` (``--box-concurrency auto``), whose
    batch sizes aim at 0.25 s a batch (``snet.splitexec.SplitBatchSizer``);
    baseline: the default before ``auto`` (``box_concurrency=2``, as many as
    the workers), whose batch is fixed at 1,024 (every record in one batch, so
    ``post`` starts when the last record has left the processes).  Both with
    FRONT, 2 workers, ``split_processes=2``; the whole run and its first
    output.  With free cores, ``post`` runs beside the next batch; on two
    cores the processes already take both.
    """
    loops = calibrated_loops()
    (tmp_path / "chained.py").write_text(BOX.format(loops=loops, heavy_below=TAGS * PER_TAG) + POST)
    (tmp_path / "chained.snet").write_text(CHAINED)
    net = snet.load(str(tmp_path / "chained.snet"))
    records = [{"x": i, "<t>": i % TAGS} for i in range(TAGS * PER_TAG)]
    expected = sorted(o["y"] for o in net.run(records, engine="reference"))
    firsts: dict[str, list[float]] = {"fixed": [], "auto": []}

    def run(name, **options):
        started, first, got = time.perf_counter(), None, []
        with net.run(records, engine="front", workers=2, split_processes=2, **options) as execution:
            for output in execution:
                first = first if first is not None else time.perf_counter() - started
                got.append(output["y"])
        assert sorted(got) == expected
        firsts[name].append(first)

    run("fixed", box_concurrency=2)  # the fork server starts once
    firsts["fixed"].clear()
    load_before = os.getloadavg()[0]
    result = paired(lambda: run("auto", box_concurrency="auto"), lambda: run("fixed", box_concurrency=2), rounds=3)
    benchmark.pedantic(lambda: run("auto", box_concurrency="auto"), rounds=1, iterations=1)
    report(speedup=1 / result["ratio"], fixed_s=result["baseline_s"], auto_s=result["candidate_s"],
           first_output_fixed_s=statistics.median(firsts["fixed"]),
           first_output_auto_s=statistics.median(firsts["auto"]), loops=loops, cores=os.cpu_count(),
           load_average_before=round(load_before, 2), load_average_after=round(os.getloadavg()[0], 2))
