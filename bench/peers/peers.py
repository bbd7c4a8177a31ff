"""The peers' runners, each written as that tool's documentation shows: a list in, a list out.

Every runner takes the stages (functions of one record) and the input
list, and returns the output list, so that each workload script only
says what its stages are.  A runner of a tool that is not installed is
never imported: the workload gets a skipped contender with the reason.
"""

from __future__ import annotations

import multiprocessing
import os
from functools import reduce
from typing import Any, Callable, Sequence

from common import Contender, missing

Stage = Callable[[Any], Any]


def compose(stages: Sequence[Stage]) -> Stage:
    """The stages as one function (what a plain loop or a pool by hand applies per record)."""
    def chain(record: Any) -> Any:
        return reduce(lambda r, f: f(r), stages, record)
    return chain


class Chain:
    """The stages as one picklable callable (a closure cannot travel to a process pool)."""

    def __init__(self, stages: Sequence[Stage]):
        self.stages = tuple(stages)

    def __call__(self, record: Any) -> Any:
        for stage in self.stages:
            record = stage(record)
        return record


_SINKS: dict = {}  # Beam's in-process runner unpickles its functions: outputs are collected by key here


class Collect:
    """A picklable sink for Beam's in-process runner: appends to ``_SINKS[key]`` of this module."""

    def __init__(self, key: int):
        self.key = key

    def __call__(self, record: Any) -> None:
        _SINKS[self.key].append(record)


class SlowConsumer:
    """A consumer for Beam's in-process runner: ``pause`` seconds every ``every`` records, sums into ``_SINKS[key]``.

    (Beam unpickles its functions: one defined in a script's ``__main__``
    would count into a copy.)
    """

    def __init__(self, key: int, every: int, pause: float):
        self.key, self.every, self.pause = key, every, pause

    def __call__(self, record: Any) -> None:
        import time

        total = _SINKS[self.key]
        total[0] += record["size"] + record["i"] % 7
        total[1] += 1
        if total[1] % self.every == 0:
            time.sleep(self.pause)


def plain_loop(stages: Sequence[Stage]) -> Callable[[list], list]:
    if len(stages) == 1:
        (only,) = stages
        return lambda records: [only(r) for r in records]

    def run(records: list) -> list:
        out = []
        append = out.append
        for r in records:
            for f in stages:
                r = f(r)
            append(r)
        return out
    return run


def pool_by_hand(stages: Sequence[Stage], processes: int = 2, chunksize: int | None = None) -> Contender:
    """``multiprocessing.Pool.imap`` over the composed stages, in chunks (the pool started once, outside the timing)."""
    context = multiprocessing.get_context("forkserver")
    pool = context.Pool(processes)
    chain = Chain(stages)

    def run(records: list) -> list:
        size = chunksize or max(1, len(records) // (processes * 8))
        return list(pool.imap(chain, records, chunksize=size))
    run.pool = pool  # type: ignore[attr-defined]
    return Contender(f"multiprocessing.Pool({processes}).imap, by hand", run,
                     note=f"chunks of {chunksize}" if chunksize else "chunks of n/16")


def dask_bag(stages: Sequence[Stage], scheduler: str, partitions: int = 8) -> Contender:
    skip = missing("dask.bag")
    if skip:
        return Contender(f"Dask bag, {scheduler}", skip=skip)
    import dask.bag as db

    def run(records: list) -> list:
        bag = db.from_sequence(records, npartitions=partitions)
        for f in stages:
            bag = bag.map(f)
        return bag.compute(scheduler=scheduler)
    return Contender(f"Dask bag, {scheduler}", run, note=f"{partitions} partitions")


def bytewax(stages: Sequence[Stage], batch: int) -> Contender:
    skip = missing("bytewax")
    if skip:
        return Contender(f"bytewax, source batches of {batch}", skip=skip)
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSink, TestingSource, run_main

    def run(records: list) -> list:
        out: list = []
        flow = Dataflow("pipeline")
        stream = op.input("in", flow, TestingSource(records, batch_size=batch))
        for i, f in enumerate(stages):
            stream = op.map(f"s{i}", stream, f)
        op.output("out", stream, TestingSink(out))
        run_main(flow)
        return out
    return Contender(f"bytewax `run_main`, source batches of {batch:,}", run)


def beam(stages: Sequence[Stage], note: str = "") -> Contender:
    skip = missing("apache_beam")
    if skip:
        return Contender("Apache Beam DirectRunner", skip=skip)
    import apache_beam as beam_
    from apache_beam.options.pipeline_options import PipelineOptions

    def run(records: list) -> list:
        key = object().__hash__()
        _SINKS[key] = []
        with beam_.Pipeline(runner="DirectRunner", options=PipelineOptions([])) as p:
            stream = p | beam_.Create(records, reshuffle=False)
            for i, f in enumerate(stages):
                stream = stream | f"s{i}" >> beam_.Map(f)
            stream | beam_.Map(Collect(key))
        return _SINKS.pop(key)
    return Contender("Apache Beam DirectRunner", run, ordered=False, note=note)


def ray_data(stages: Sequence[Stage]) -> Contender:
    skip = missing("ray", "peers-ray")
    if skip:
        return Contender("Ray", skip=skip)
    import ray

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)

    @ray.remote
    def chunk(rows: list) -> list:
        return [Chain(stages)(r) for r in rows]

    def run(records: list) -> list:
        size = max(1, len(records) // 16)
        parts = [chunk.remote(records[i:i + size]) for i in range(0, len(records), size)]
        return [r for part in ray.get(parts) for r in part]
    return Contender("Ray tasks, 16 chunks", run)


__all__ = ["Chain", "bytewax", "beam", "compose", "dask_bag", "plain_loop", "pool_by_hand", "ray_data"]
