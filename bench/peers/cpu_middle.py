"""Workload 2: three stages, the middle one about 2 ms of pure-Python work per record (fixed work, not a time budget).

The middle stage runs the same loop for every record, so a faster or
slower machine changes its time, never how much it does.  On a CPython
with the GIL only processes run it on more than one core: snet with box
processes for that one box, a process pool by hand, Dask's process
scheduler, Beam's multi-process direct runner.

    python bench/peers/cpu_middle.py [--records N] [--rounds R]
"""

from __future__ import annotations

import os

import peers
from common import Contender, arguments, main, missing

import snet

WORK = 45_000  # loop iterations of the middle stage: about 2 ms of CPU on this machine (1.15 ms for 25,000)


def work(v: int) -> int:
    acc = 0
    for i in range(WORK):
        acc = (acc * 31 + i + v) % 1_000_003
    return acc


def parse(r):
    return {"v": r["x"] * 7 + 1}


def crunch(r):
    return {"v": r["v"], "h": work(r["v"])}


def label(r):
    return {"x": r["v"], "label": f"{r['h']:x}"}


STAGES = (parse, crunch, label)

NET = """
box parse ((x) -> (v)); box crunch ((v) -> (v, h)); box label ((v, h) -> (x, label));
net pipeline connect parse .. crunch .. label;
"""


def snet_parse(x):
    return {"v": x * 7 + 1}


def snet_crunch(v):
    return {"v": v, "h": work(v)}


def snet_label(v, h):
    return {"x": v, "label": f"{h:x}"}


BOXES = {"parse": snet_parse, "crunch": snet_crunch, "label": snet_label}


def snet_run(**options) -> Contender:
    net = snet.load(NET, boxes=BOXES)
    shown = ", ".join(f"{k}={v}" for k, v in options.items())
    return Contender(f"**snet `net.run`, {shown}**", lambda records: list(net.run(records, **options)))


def beam_processes() -> Contender:
    skip = missing("apache_beam")
    if skip:
        return Contender("Apache Beam DirectRunner, 2 processes", skip=skip)
    import apache_beam as beam

    from apache_beam.options.pipeline_options import PipelineOptions

    def run(records: list) -> list:
        import tempfile

        folder = tempfile.mkdtemp(prefix="snet-peers-beam-")
        options = PipelineOptions(["--direct_num_workers=2", "--direct_running_mode=multi_processing"])
        with beam.Pipeline(runner="DirectRunner", options=options) as p:
            (p | beam.Create(records, reshuffle=False) | beam.Map(parse) | beam.Map(crunch) | beam.Map(label)
             | beam.Map(repr) | beam.io.WriteToText(os.path.join(folder, "out")))
        import ast
        import glob

        out = []
        for name in sorted(glob.glob(os.path.join(folder, "out*"))):
            with open(name) as f:
                out += [ast.literal_eval(line) for line in f]
        return out
    return Contender("Apache Beam DirectRunner, 2 processes", run, ordered=False, note="results through files")


def contenders() -> list[Contender]:
    return [Contender("plain loop", peers.plain_loop(STAGES)),
            snet_run(workers=2, processes={"crunch": 2}), snet_run(workers=1),
            peers.pool_by_hand(STAGES, 2, chunksize=4),
            peers.dask_bag(STAGES, "processes", partitions=16), peers.dask_bag(STAGES, "threads"),
            peers.bytewax(STAGES, 10), peers.beam(STAGES), beam_processes(), peers.ray_data(STAGES)]


if __name__ == "__main__":
    args = arguments(__doc__.splitlines()[0], 400, rounds=3)
    records = [{"x": i} for i in range(args.records)]
    main("2. A 2 ms pure-Python middle stage", contenders(), records, args.records, args.rounds, args.only)
