"""Pure-Python boxes on two cores: 2 workers against 1 on a free-threaded CPython, and on this one.

A pipeline of a pure-Python box that computes for about 5 ms per call and a
trivial box, 200 records.  On a CPython with the GIL the two workers take
turns (ratio about 1); on a free-threaded build (3.13t, ``PYTHON_GIL=0``)
they run at once.  The free-threaded interpreter is the one
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
import json, sys, time
import snet

def burn(n):
    deadline = time.thread_time() + 0.005
    s = 0
    while time.thread_time() < deadline:
        s += n
    return {"n": n, "s": s}

net = snet.load("box f ((n) -> (n, s)); box g ((s) -> (t)); net p connect f .. g;",
                boxes={"f": burn, "g": lambda s: {"t": s}})
records = [{"n": i} for i in range(200)]

def best(workers):
    times = []
    for _ in range(3):
        t = time.perf_counter()
        assert len(list(net.run(records, workers=workers))) == 200
        times.append(time.perf_counter() - t)
    return min(times)

one, two = best(1), best(2)
print(json.dumps({"gil": getattr(sys, "_is_gil_enabled", lambda: True)(), "one_s": one, "two_s": two}))
'''


def measure(python: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHON_GIL": "0"}
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
    report(free_threaded_ratio=free["one_s"] / free["two_s"], free_threaded_one_s=free["one_s"],
           free_threaded_two_s=free["two_s"], gil_build_ratio=here["one_s"] / here["two_s"])
