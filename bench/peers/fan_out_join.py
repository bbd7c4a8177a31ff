"""Workload 4: fan out each record to two branches and join their results again (snet: a synchro-cell).

Each record ``{x}`` goes to a left and a right stage; the record's two
results are joined into one output ``{y}``.  In S-Net a box emits the two
parts, a parallel composition routes them by type, and the synchro-cell
star ``[| {l}, {r} |] * {l, r}`` joins the i-th left with the i-th right
result (each branch keeps its order); the peers join on the record's key.

    python bench/peers/fan_out_join.py [--records N] [--rounds R]
"""

from __future__ import annotations

import multiprocessing

from common import Contender, arguments, main, missing

import snet


def left(a):
    return a * 2


def right(b):
    return b + 7


def join(l, r):
    return {"y": l * 1000 + r}


def loop(records: list) -> list:
    return [join(left(r["x"]), right(r["x"])) for r in records]


NET = """
box fan ((x) -> (a) | (b));
box left ((a) -> (l));
box right ((b) -> (r));
box join ((l, r) -> (y));
net fanjoin connect fan .. (left || right) .. ([| {l}, {r} |] * {l, r}) .. join;
"""
BOXES = {"fan": lambda x: [{"a": x}, {"b": x}], "left": lambda a: {"l": left(a)},
         "right": lambda b: {"r": right(b)}, "join": join}


def snet_run(workers: int) -> Contender:
    net = snet.load(NET, boxes=BOXES)
    return Contender(f"**snet `net.run`, {workers} worker{'s' if workers > 1 else ''}**",
                     lambda records: list(net.run(records, workers=workers)))


def _left_of(r):
    return left(r["x"])


def _right_of(r):
    return right(r["x"])


def pool_by_hand() -> Contender:
    pool = multiprocessing.get_context("forkserver").Pool(2)

    def run(records: list) -> list:
        size = max(1, len(records) // 16)
        ls = pool.imap(_left_of, records, chunksize=size)
        rs = pool.imap(_right_of, records, chunksize=size)
        return [join(l, r) for l, r in zip(ls, rs)]
    return Contender("multiprocessing.Pool(2), two imaps zipped, by hand", run)


def dask_bag(scheduler: str) -> Contender:
    skip = missing("dask.bag")
    if skip:
        return Contender(f"Dask bag, {scheduler}", skip=skip)
    import dask.bag as db

    def run(records: list) -> list:
        bag = db.from_sequence(records, npartitions=8)
        return db.zip(bag.map(_left_of), bag.map(_right_of)).starmap(join).compute(scheduler=scheduler)
    return Contender(f"Dask bag, {scheduler}, zip of two maps", run)


def bytewax() -> Contender:
    skip = missing("bytewax")
    if skip:
        return Contender("bytewax", skip=skip)
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSink, TestingSource, run_main

    def run(records: list) -> list:
        out: list = []
        flow = Dataflow("fan_out_join")
        stream = op.input("in", flow, TestingSource(records, batch_size=1000))
        parts = op.flat_map("fan", stream, lambda r: [("a", r["x"]), ("b", r["x"])])
        split = op.branch("route", parts, lambda p: p[0] == "a")
        ls = op.key_on("lk", op.map("left", split.trues, lambda p: (p[1], left(p[1]))), lambda kv: str(kv[0]))
        rs = op.key_on("rk", op.map("right", split.falses, lambda p: (p[1], right(p[1]))), lambda kv: str(kv[0]))
        joined = op.join("join", ls, rs)
        op.output("out", op.map("y", joined, lambda kv: join(kv[1][0][1], kv[1][1][1])), TestingSink(out))
        run_main(flow)
        return out
    return Contender("bytewax `run_main`, branch + keyed join, source batches of 1,000", run, ordered=False)


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
            keyed = p | beam_.Create(records, reshuffle=False) | beam_.Map(lambda r: (r["x"], r["x"]))
            ls = keyed | "left" >> beam_.MapTuple(lambda k, v: (k, left(v)))
            rs = keyed | "right" >> beam_.MapTuple(lambda k, v: (k, right(v)))
            ({"l": ls, "r": rs} | beam_.CoGroupByKey()
             | beam_.MapTuple(lambda k, g: join(g["l"][0], g["r"][0])) | beam_.Map(peers.Collect(key)))
        return peers._SINKS.pop(key)
    return Contender("Apache Beam DirectRunner, CoGroupByKey", run, ordered=False)


def contenders() -> list[Contender]:
    return [Contender("plain loop", loop), snet_run(1), snet_run(2), bytewax(), pool_by_hand(),
            dask_bag("threads"), dask_bag("processes"), beam()]


if __name__ == "__main__":
    args = arguments(__doc__.splitlines()[0], 50_000)
    records = [{"x": i} for i in range(args.records)]
    main("4. Fan-out and join", contenders(), records, args.records, args.rounds, args.only)
