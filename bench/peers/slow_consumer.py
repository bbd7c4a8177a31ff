"""Workload 6: memory while the consumer is slower than the pipeline.

A generator produces records of about 1 KB each, three cheap stages
transform them, and the consumer takes about 20 µs per record (it sleeps
2 ms every 100 records), so the pipeline could run ahead of it.  What
matters is how much the tool holds meanwhile: each contender runs in a
process of its own, and the table gives its peak resident memory above
the same process before the run (its imports and set-up done), with the
time.  (A process pool's workers are not counted: they hold a chunk each;
what piles up, piles up in the consuming process.)

    python bench/peers/slow_consumer.py [--records N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from common import missing

PAYLOAD = 1000
PAUSE_EVERY = 100
PAUSE_S = 0.002
LIMIT_S = 600  # seconds a contender may take


def produce(n: int):
    for i in range(n):
        yield {"i": i, "payload": f"{i:08d}" * (PAYLOAD // 8)}


def s1(r):
    return {"i": r["i"], "payload": r["payload"].upper()}


def s2(r):
    return {"i": r["i"] * 2, "payload": r["payload"]}


def s3(r):
    return {"i": r["i"] + 1, "size": len(r["payload"]), "payload": r["payload"]}


def consume(outputs) -> int:
    total = 0
    for n, r in enumerate(outputs, 1):
        total += r["size"] + r["i"] % 7
        if n % PAUSE_EVERY == 0:
            time.sleep(PAUSE_S)
    return total


def expected(n: int) -> int:
    return consume(s3(s2(s1(r))) for r in produce(n))


# -- the contenders, each run in a process of its own: setup (imports, building) first, then the run -------

def loop():
    return lambda n: consume(s3(s2(s1(r))) for r in produce(n))


def snet_net():
    import snet

    net = snet.load("box s1 ((i, payload) -> (i, payload)); box s2 ((i, payload) -> (i, payload)); "
                    "box s3 ((i, payload) -> (i, size, payload)); net p connect s1 .. s2 .. s3;",
                    boxes={"s1": lambda i, payload: s1({"i": i, "payload": payload}),
                           "s2": lambda i, payload: s2({"i": i, "payload": payload}),
                           "s3": lambda i, payload: s3({"i": i, "payload": payload})})
    list(net.run(produce(10)))  # the engine's first run (imports, the compiled runtime loaded)
    return lambda n: consume(net.run(produce(n)))


def _chain(r):
    return s3(s2(s1(r)))


def pool():
    import multiprocessing

    workers = multiprocessing.get_context("forkserver").Pool(2)
    workers.map(_chain, list(produce(10)))  # started
    return lambda n: consume(workers.imap(_chain, produce(n), chunksize=100))


def dask():
    import dask.bag as db

    return lambda n: consume(db.from_sequence(produce(n), npartitions=8).map(_chain).compute(scheduler="threads"))


def bytewax():
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.outputs import DynamicSink, StatelessSinkPartition
    from bytewax.testing import TestingSource, run_main

    total = [0, 0]

    class Slow(StatelessSinkPartition):
        def write_batch(self, items):
            for r in items:
                total[0] += r["size"] + r["i"] % 7
                total[1] += 1
                if total[1] % PAUSE_EVERY == 0:
                    time.sleep(PAUSE_S)

    class SlowSink(DynamicSink):
        def build(self, step_id, worker_index, worker_count):
            return Slow()

    def run(n: int) -> int:
        flow = Dataflow("slow")
        stream = op.input("in", flow, TestingSource(produce(n), batch_size=1000))
        stream = op.map("s3", op.map("s2", op.map("s1", stream, s1), s2), s3)
        op.output("out", stream, SlowSink())
        run_main(flow)
        return total[0]
    return run


def beam():
    import apache_beam as beam_

    import peers

    def run(n: int) -> int:
        key = object().__hash__()
        peers._SINKS[key] = [0, 0]
        with beam_.Pipeline(runner="DirectRunner") as p:
            (p | beam_.Create(list(produce(n)), reshuffle=False) | beam_.Map(_chain)
             | beam_.Map(peers.SlowConsumer(key, PAUSE_EVERY, PAUSE_S)))
        return peers._SINKS.pop(key)[0]
    return run


CONTENDERS = {
    "plain generator loop": (loop, None),
    "**snet `net.run`** (default workers)": (snet_net, None),
    "multiprocessing.Pool(2).imap, chunks of 100": (pool, None),
    "Dask bag, threads": (dask, "dask.bag"),
    "bytewax `run_main`, a slow sink, source batches of 1,000": (bytewax, "bytewax"),
    "Apache Beam DirectRunner, a slow `Map` as the consumer": (beam, "apache_beam"),
}


def child(name: str, n: int) -> None:
    setup, _ = CONTENDERS[name]
    run = setup()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    total = run(n)
    elapsed = time.perf_counter() - started
    print(json.dumps({"total": total, "seconds": elapsed, "before_kb": before,
                      "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


def parent(n: int) -> None:
    want = expected(n)
    load = os.getloadavg()
    rows = []
    for name, (_, module) in CONTENDERS.items():
        skip = missing(module) if module else None
        if skip:
            rows.append(f"| {name} | skipped: {skip} | |")
            continue
        try:
            done = subprocess.run([sys.executable, __file__, "--child", name, "--records", str(n)],
                                  capture_output=True, text=True, timeout=LIMIT_S)
        except subprocess.TimeoutExpired:
            rows.append(f"| {name} | did not finish within {LIMIT_S} s | |")
            continue
        if done.returncode != 0:
            rows.append(f"| {name} | failed: {done.stderr.strip().splitlines()[-1]} | |")
            continue
        got = json.loads(done.stdout.strip().splitlines()[-1])
        if got["total"] != want:
            rows.append(f"| {name} | skipped: its result differs from the plain loop's | |")
            continue
        extra = (got["peak_kb"] - got["before_kb"]) / 1024
        rows.append(f"| {name} | {extra:.1f} MB | {got['seconds']:.2f} s |")
    print("\n### 6. Memory with a slow consumer\n")
    print(f"{n:,} records of about {PAYLOAD:,} bytes, consumer about {1e6 * PAUSE_S / PAUSE_EVERY:.0f} µs per record; "
          f"each contender in a process of its own; load average {load[0]:.2f} at the start, on {os.cpu_count()} "
          f"cores\n")
    print("| contender | peak memory of the consuming process above its level before the run | time |")
    print("|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    if args.child:
        child(args.child, args.records)
    else:
        parent(args.records)
