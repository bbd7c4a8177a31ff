"""What one split replica costs on FRONT: objects, bytes and microseconds to build.

    PYTHONPATH=$PWD python3 bench/replica_cost.py [N]

Runs ``([| {<v>}, {<w>} |] * {<v>, <w>}) ! <k>`` (the Fibonacci network's
join) on one worker with N records ``{<k>: i, <v>: 1}``: each builds a
replica whose synchro-cell star keeps the record in a new cell, so no
replica is fresh and none is reclaimed.  The same N records with one tag
(one replica) are the baseline: the differences, per record, are the cost
of a replica (its entities, contexts, instance, inbox and cell, with the
stored record's share of the cell).  Bytes are from tracemalloc, objects
from the garbage collector; both are taken while the finished run still
holds its entities.
"""

from __future__ import annotations

import gc
import logging
import sys
import time
import tracemalloc

import snet

SOURCE = "net t connect ([| {<v>}, {<w>} |] * {<v>, <w>}) ! <k>;"


def measure(net, records):
    gc.collect()
    objects0 = len(gc.get_objects())
    tracemalloc.start()
    t = time.perf_counter()
    execution = net.run(records, engine="front", workers=1)
    list(execution)
    seconds = time.perf_counter() - t
    gc.collect()
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    objects = len(gc.get_objects()) - objects0
    execution.close()
    return seconds, size, objects, execution


def main(n: int = 20000) -> None:
    logging.getLogger("snet").setLevel(logging.ERROR)  # the cells that never fire are the point
    net = snet.load(SOURCE)
    distinct = [{"<k>": i, "<v>": 1} for i in range(n)]
    same = [{"<k>": 0, "<v>": 1} for _ in range(n)]
    measure(net, distinct[:100])  # warm up
    runs = []
    for _ in range(3):
        s1, b1, o1, e1 = measure(net, same)
        s2, b2, o2, e2 = measure(net, distinct)
        ent = e2.stats().front.entities
        assert ent.reclaimed == 0 and ent.alive >= n, ent
        runs.append(((s2 - s1) / n * 1e6, (b2 - b1) / n, (o2 - o1) / n))
        del e1, e2
    us, size, objects = sorted(runs)[len(runs) // 2]
    print(f"one replica of {SOURCE[14:-1]}: {objects:.1f} objects, {size:,.0f} bytes, {us:.2f} us to build "
          f"(N = {n:,}, median of 3)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
