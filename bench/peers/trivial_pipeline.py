"""Workload 1: a pipeline of five trivial stages over 200,000 records, from a list to a list.

Each stage reads one field and returns a new record, so the time is what
each tool costs per record and stage (scheduling, hand-offs, records).

    python bench/peers/trivial_pipeline.py [--records N] [--rounds R]
"""

from __future__ import annotations

import os

import peers
from common import Contender, arguments, main

import snet


def s1(r):
    return {"x": r["x"] + 1}


def s2(r):
    return {"x": r["x"] * 3}


def s3(r):
    return {"x": r["x"] - 2}


def s4(r):
    return {"x": r["x"] // 2}


def s5(r):
    return {"x": r["x"] ^ 5}


STAGES = (s1, s2, s3, s4, s5)

NET = """
box s1 ((x) -> (x)); box s2 ((x) -> (x)); box s3 ((x) -> (x)); box s4 ((x) -> (x)); box s5 ((x) -> (x));
net pipeline connect s1 .. s2 .. s3 .. s4 .. s5;
"""
# snet's boxes take the label's value (the box signature binds it) and return the output record
BOXES = {"s1": lambda x: {"x": x + 1}, "s2": lambda x: {"x": x * 3}, "s3": lambda x: {"x": x - 2},
         "s4": lambda x: {"x": x // 2}, "s5": lambda x: {"x": x ^ 5}}


def snet_run(workers: int) -> Contender:
    net = snet.load(NET, boxes=BOXES)
    default = " (the default: the core count)" if workers == os.cpu_count() else ""
    return Contender(f"**snet `net.run`, {workers} worker{'s' if workers > 1 else ''}**{default}",
                     lambda records: list(net.run(records, workers=workers)))


def contenders() -> list[Contender]:
    return [Contender("plain loop", peers.plain_loop(STAGES)),
            snet_run(1), snet_run(os.cpu_count() or 2),
            peers.bytewax(STAGES, 1000), peers.bytewax(STAGES, 1),
            peers.pool_by_hand(STAGES, 2),
            peers.dask_bag(STAGES, "threads"), peers.dask_bag(STAGES, "processes"),
            peers.beam(STAGES), peers.ray_data(STAGES)]


if __name__ == "__main__":
    args = arguments(__doc__.splitlines()[0], 200_000)
    records = [{"x": i} for i in range(args.records)]
    main("1. Five trivial stages", contenders(), records, args.records, args.rounds, args.only)
