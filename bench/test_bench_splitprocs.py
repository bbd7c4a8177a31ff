"""Split processes: a pure-Python box in an index split, in two processes against two threads.

``work ! <t>`` over 64 tag values, 6 records each (384 calls), the box a
fixed amount of pure-Python arithmetic: a loop whose length is calibrated
once, when the benchmark starts, to take about ``WORK_MS`` on this machine,
then written into a box file (``fanned.py``) and loaded from there as users'
boxes are.  Each call does the same work whatever else runs (it is not a
loop that runs until a time has passed).

Candidate: FRONT, two workers, ``split_processes=2`` (``snet run
--split-processes 2``); baseline: FRONT, two workers, the split in process
(``snet run -w 2``), where the GIL runs one call at a time.  Rounds
alternate (``bench/conftest.py: paired``); the candidate's times include
starting its two processes.  Reported with the load average and the CPU
ceiling (how many cores two CPU-bound processes get meanwhile: 2.0 on an
idle two-core machine, the most two split processes can gain).

    python3 -m pytest bench/test_bench_splitprocs.py --benchmark-only -s
"""

from __future__ import annotations

import os
import time

import snet

from conftest import paired
from test_bench_processes import cpu_ceiling

NET = "net fanned {\n  box work((x, <t>) -> (x, <t>));\n} connect work ! <t>;\n"
WORK_MS = 5
TAGS = 64
PER_TAG = 6

BOX = '''
LOOPS = {loops}


def work(x, t):
    s = x
    for i in range(LOOPS):
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


def test_split_processes_against_threads(benchmark, report, tmp_path):
    loops = calibrated_loops()
    (tmp_path / "fanned.py").write_text(BOX.format(loops=loops))
    (tmp_path / "fanned.snet").write_text(NET)
    net = snet.load(str(tmp_path / "fanned.snet"))
    records = [{"x": i, "<t>": i % TAGS} for i in range(TAGS * PER_TAG)]
    expected = sorted((o["<t>"], o["x"]) for o in net.run(records, engine="reference"))

    def run(**options):
        outputs = list(net.run(records, engine="front", workers=2, **options))
        assert sorted((o["<t>"], o["x"]) for o in outputs) == expected

    run(split_processes=2)  # the fork server starts once
    load_before = os.getloadavg()[0]
    ceilings = [cpu_ceiling()]
    result = paired(lambda: run(split_processes=2), run, rounds=3)
    ceilings.append(cpu_ceiling())
    benchmark.pedantic(lambda: run(split_processes=2), rounds=1, iterations=1)
    report(speedup=1 / result["ratio"], threads_s=result["baseline_s"], processes_s=result["candidate_s"],
           calls=len(records), loops=loops, work_ms_per_call=WORK_MS,
           # the boxes' CPU (WORK_MS a call) over the wall time: the cores each run had
           cores_used_threads=len(records) * WORK_MS / 1000 / result["baseline_s"],
           cores_used_processes=len(records) * WORK_MS / 1000 / result["candidate_s"],
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
