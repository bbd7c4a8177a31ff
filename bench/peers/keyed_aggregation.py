"""Workload 5: per-key work and a per-key sum over 64 keys (snet: ``score ! <k>``).

Each record ``{v, <k>}`` is scored by a small function and the scores are
summed per key; the result is the 64 sums.  S-Net boxes keep no state, so
the snet network does the per-key work (``score ! <k>``: a replica of the
box per tag value, each key's records in order) and the caller sums the
output stream, as an snet user would; the peers use their keyed
aggregations (Dask ``foldby``, bytewax ``reduce_final``, Beam
``CombinePerKey``).

    python bench/peers/keyed_aggregation.py [--records N] [--rounds R]
"""

from __future__ import annotations

import multiprocessing
import operator
from collections import defaultdict

from common import Contender, arguments, main, missing

import snet

KEYS = 64


def score(v):
    return (v * v + 17) % 1009


def loop(records: list) -> list:
    sums: dict = defaultdict(int)
    for r in records:
        sums[r["k"]] += score(r["v"])
    return sorted(sums.items())


NET = "box score ((v, <k>) -> (s, <k>)); net keyed connect score ! <k>;"


def snet_run(workers: int) -> Contender:
    net = snet.load(NET, boxes={"score": lambda v, k: {"s": score(v), "<k>": k}})

    def run(records: list) -> list:
        sums: dict = defaultdict(int)
        for out in net.run(({"v": r["v"], "<k>": r["k"]} for r in records), workers=workers):
            sums[out["<k>"]] += out["s"]
        return sorted(sums.items())
    return Contender(f"**snet `net.run`, {workers} worker{'s' if workers > 1 else ''}**, sums taken from the "
                     f"output", run)


def _partial(chunk: list) -> dict:
    sums: dict = defaultdict(int)
    for r in chunk:
        sums[r["k"]] += score(r["v"])
    return sums


def pool_by_hand() -> Contender:
    pool = multiprocessing.get_context("forkserver").Pool(2)

    def run(records: list) -> list:
        size = max(1, len(records) // 16)
        total: dict = defaultdict(int)
        for part in pool.imap_unordered(_partial, [records[i:i + size] for i in range(0, len(records), size)]):
            for k, s in part.items():
                total[k] += s
        return sorted(total.items())
    return Contender("multiprocessing.Pool(2), partial sums per chunk, by hand", run)


def dask_bag(scheduler: str) -> Contender:
    skip = missing("dask.bag")
    if skip:
        return Contender(f"Dask bag, {scheduler}", skip=skip)
    import dask.bag as db

    def run(records: list) -> list:
        bag = db.from_sequence(records, npartitions=8).map(lambda r: (r["k"], score(r["v"])))
        return sorted(bag.foldby(operator.itemgetter(0), lambda acc, kv: acc + kv[1], 0, operator.add, 0)
                      .compute(scheduler=scheduler))
    return Contender(f"Dask bag `foldby`, {scheduler}", run)


def bytewax() -> Contender:
    skip = missing("bytewax")
    if skip:
        return Contender("bytewax", skip=skip)
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSink, TestingSource, run_main

    def run(records: list) -> list:
        out: list = []
        flow = Dataflow("keyed")
        stream = op.input("in", flow, TestingSource(records, batch_size=1000))
        keyed = op.key_on("key", stream, lambda r: str(r["k"]))
        scored = op.map_value("score", keyed, lambda r: score(r["v"]))
        op.output("out", op.reduce_final("sum", scored, operator.add), TestingSink(out))
        run_main(flow)
        return sorted((int(k), s) for k, s in out)
    return Contender("bytewax `run_main`, `reduce_final`, source batches of 1,000", run)


def beam() -> Contender:
    skip = missing("apache_beam")
    if skip:
        return Contender("Apache Beam DirectRunner", skip=skip)
    import apache_beam as beam_

    import peers

    def run(records: list) -> list:
        key = object().__hash__()
        peers._SINKS[key] = []
        with beam_.Pipeline(runner="DirectRunner") as p:
            (p | beam_.Create(records, reshuffle=False) | beam_.Map(lambda r: (r["k"], score(r["v"])))
             | beam_.CombinePerKey(sum) | beam_.Map(peers.Collect(key)))
        return sorted(peers._SINKS.pop(key))
    return Contender("Apache Beam DirectRunner, `CombinePerKey(sum)`", run)


def contenders() -> list[Contender]:
    return [Contender("plain loop", loop), snet_run(1), snet_run(2), bytewax(), pool_by_hand(),
            dask_bag("threads"), dask_bag("processes"), beam()]


if __name__ == "__main__":
    args = arguments(__doc__.splitlines()[0], 200_000)
    records = [{"k": i % KEYS, "v": i} for i in range(args.records)]
    main("5. Keyed aggregation, 64 keys", contenders(), records, args.records, args.rounds, args.only)
