"""Blocks allocated per record by FRONT runs of networks, printed as JSON (tests/runtime/test_allocations.py).

    python measure.py COUNTING.so < networks.json

Reads ``[[name, source, fuse], ...]``; runs each network with one worker
over n and then 2n records and prints ``{name: blocks per record}``: the
difference between the two runs' counts over n, so what a run costs once
(its entities, threads, first calls) drops out.  The records are made before
the count starts.
"""

import ctypes
import gc
import json
import sys
import warnings

counting = ctypes.PyDLL(sys.argv[1])
counting.count.restype = ctypes.c_ulonglong
counting.install()

import snet  # noqa: E402 (after the allocator is in place: what snet makes at import is counted too, and drops out)

N = 20_000


def ident(a):
    return {"a": a}


def other(z):
    return {"z": z}


def listed(a):
    return [{"a": a}]


BOXES = {**{f"b{i}": ident for i in range(10)}, "c0": other, "l0": listed}


def records(n):
    return [{"a": i, "id": i, "<k>": i % 64} for i in range(n)]


def blocks_per_record(net, fuse):
    def run(recs):
        with net.run(recs, engine="front", workers=1, fuse=fuse) as execution:
            return len(list(execution))

    run(records(100))
    small, large = records(N), records(2 * N)
    gc.disable()  # (a collection's own allocations would fall into one run or the other)
    try:
        c0 = counting.count()
        assert run(small) == N
        c1 = counting.count()
        assert run(large) == 2 * N
        c2 = counting.count()
    finally:
        gc.enable()
    return ((c2 - c1) - (c1 - c0)) / N


warnings.simplefilter("ignore")  # (the networks' unreachable branches are on purpose)
out = {name: blocks_per_record(snet.load(source, boxes=BOXES), fuse) for name, source, fuse in json.load(sys.stdin)}
print(json.dumps(out))
