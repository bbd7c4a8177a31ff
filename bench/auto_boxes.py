"""Boxes of the automatic box concurrency benchmarks (bench/test_bench_auto.py): fixed work per call.

``step`` is a cheap pure-Python stage; ``wait`` releases the GIL for
``WAIT_S`` (as a call into I/O or a C library that drops the GIL does);
``crunch`` holds the GIL for a fixed count of Python operations.
"""

import time

WAIT_S = 0.0005
CRUNCH_LOOPS = 4000


def step(a):
    return {"a": a + 1}


def wait(a):
    time.sleep(WAIT_S)
    return {"a": a + 1}


def crunch(a):
    s = 0
    for i in range(CRUNCH_LOOPS):
        s += i
    return {"a": a + 1 + (s & 0)}
