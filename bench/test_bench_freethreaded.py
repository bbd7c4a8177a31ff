"""Pure-Python boxes on two cores: 2 workers against 1 on a free-threaded CPython, and on this one.

1. A pipeline of a pure-Python box that does a fixed amount of work per
   call (about 5 ms here: 90,000 turns of ``acc = (acc * 31 + i + x) %
   1_000_003``) and a trivial box, 200 records, the boxes written in
   ``NET.py`` beside ``NET.snet`` and loaded by ``snet.load`` as users'
   are.  On a CPython with the GIL the two workers take turns (ratio
   about 1); on a free-threaded build (``PYTHON_GIL=0``) they run at once,
   if nothing the calls share is contended (docs/cores.md).
2. The runtime's own cost on each interpreter: ten trivial boxes in a
   pipeline (bench/test_bench_front.py's first network: each record also
   carries a label the boxes inherit), 20,000 records, at 1 and 2 workers, with the process's user and system CPU; reported as
   the free-threaded time over the GIL build's.  The free-threaded interpreter is the one
``.ci/freethreaded`` builds; give its path in ``SNET_FT_PYTHON`` (the
benchmark runs it as a child process, with this checkout on its path):

    SNET_FT_PYTHON=/var/cache/snet-ft/venv-cpython-3.13.5-t/bin/python \\
        python3 -m pytest bench/test_bench_freethreaded.py --benchmark-only -s
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MEASURE = r'''
import json, os, sys, tempfile, time
import snet

BOXES = """
def f(n):
    acc = n
    for i in range(90_000):
        acc = (acc * 31 + i + n) % 1_000_003
    return {"n": n, "s": acc}


def g(s):
    return {"t": s}
"""
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "NET.snet"), "w") as out:
    out.write("box f ((n) -> (n, s)); box g ((s) -> (t)); net p connect f .. g;\n")
with open(os.path.join(folder, "NET.py"), "w") as out:
    out.write(BOXES)
net = snet.load(os.path.join(folder, "NET.snet"))  # (its boxes: NET.py beside it)
records = [{"n": i} for i in range(200)]

def best(workers):
    times = []
    for _ in range(3):
        t = time.perf_counter()
        assert len(list(net.run(records, workers=workers))) == 200
        times.append(time.perf_counter() - t)
    return min(times)

one, two = best(1), best(2)

STAGES = 10
pipe = snet.load("".join(f"box b{i} ((a) -> (a));" for i in range(STAGES))
                 + "net pipe connect " + " .. ".join(f"b{i}" for i in range(STAGES)) + ";",
                 boxes={f"b{i}": (lambda a: {"a": a + 1}) for i in range(STAGES)})
many = [{"a": i, "id": i} for i in range(20000)]  # "id" is inherited: every box copies the record

def pipeline(workers):
    best = None
    for _ in range(3):
        cpu, t = os.times(), time.perf_counter()
        assert len(list(pipe.run(many, workers=workers))) == len(many)
        wall, after = time.perf_counter() - t, os.times()
        if best is None or wall < best[0]:
            best = (wall, after.user - cpu.user, after.system - cpu.system)
    return best

pipes = {w: pipeline(w) for w in (1, 2)}
print(json.dumps({"gil": getattr(sys, "_is_gil_enabled", lambda: True)(), "one_s": one, "two_s": two,
                  "pipe": {str(w): list(v) for w, v in pipes.items()}}))
'''


def measure(python: str) -> dict:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "PYTHON_GIL": "0"}
    done = subprocess.run([python, "-c", MEASURE], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_two_workers_against_one(benchmark, report):
    here = measure(sys.executable)
    python = os.environ.get("SNET_FT_PYTHON")
    if not python:
        pytest.skip("set SNET_FT_PYTHON to a free-threaded CPython (.ci/freethreaded builds one)")
    free = measure(python)
    assert free["gil"] is False, "the free-threaded interpreter re-enabled the GIL"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    pipe = {}
    for w in ("1", "2"):
        (ft_wall, ft_user, ft_sys), (gil_wall, gil_user, gil_sys) = free["pipe"][w], here["pipe"][w]
        pipe.update({f"pipeline_w{w}_ft_over_gil": ft_wall / gil_wall, f"pipeline_w{w}_ft_s": ft_wall,
                     f"pipeline_w{w}_ft_user_s": ft_user, f"pipeline_w{w}_ft_sys_s": ft_sys,
                     f"pipeline_w{w}_gil_s": gil_wall, f"pipeline_w{w}_gil_user_s": gil_user,
                     f"pipeline_w{w}_gil_sys_s": gil_sys})
    report(free_threaded_ratio=free["one_s"] / free["two_s"], free_threaded_one_s=free["one_s"],
           free_threaded_two_s=free["two_s"], gil_build_ratio=here["one_s"] / here["two_s"], **pipe)
