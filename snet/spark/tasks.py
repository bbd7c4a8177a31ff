"""Running a plan inside a Spark task: the one core of every executor-side path.

A task builds the run's plan once per Python worker (:func:`plan_for`, cached
in :data:`RUNS` with the replica hosts) and runs records through an engine's
entry point (:func:`run_plan`) or, for a split's replicas, the reference
engine's ``replica``/``feed``; records come from Arrow batches (:func:`rows`).
"""

from __future__ import annotations

import functools
import os
import pickle
from typing import Any, Callable, TypeVar

T = TypeVar("T")
PROTOCOL = 5


class RunCache:
    """What a Python worker built for its latest runs (plans, replica hosts), by (what, run id)."""

    KEEP = 16

    def __init__(self, freeze: bool = False) -> None:
        self.entries: dict[tuple[str, str], Any] = {}
        self.freeze = freeze  # (a worker Spark reuses collects after every task: snet.gcpause.frozen_after)

    def get(self, what: str, run_id: str, build: Callable[[], T]) -> T:
        entry = self.entries.get((what, run_id))
        if entry is None:
            from snet.gcpause import frozen_after
            with frozen_after(self.freeze):
                entry = build()
                while len(self.entries) >= self.KEEP:
                    self.entries.pop(next(iter(self.entries)))
                self.entries[(what, run_id)] = entry
        return entry


RUNS = RunCache(freeze=os.environ.get("SPARK_REUSE_WORKER", "0") not in ("", "0"))  # (set by Spark: reused)


def cloudpickle_module():
    try:
        from pyspark import cloudpickle  # the copy every Spark worker has
    except ImportError:  # pragma: no cover - tests without pyspark
        import cloudpickle
    return cloudpickle


def dumps(obj: Any) -> bytes:
    """Pickle data; values that plain pickle refuses (lambdas in fields) go by cloudpickle."""
    try:
        return pickle.dumps(obj, protocol=PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return cloudpickle_module().dumps(obj, protocol=PROTOCOL)


loads = pickle.loads


def plan_for(run_id: str, context: bytes, wrap: Callable | None = None):
    """The run's plan in this Python worker (built on a miss); ``wrap(graph, table)`` changes the box table
    (:func:`snet.isolation.announcing_table`), such a plan cached apart."""
    def build():
        from snet.spg.lower import lower

        ctx = pickle.loads(context)
        table = ctx.bind()
        return lower(ctx.graph, wrap(ctx.graph, table) if wrap is not None else table)

    return RUNS.get("plan" if wrap is None else f"plan-{wrap.__name__}", run_id, build)


@functools.lru_cache(maxsize=1)
def front_imports() -> bool:
    try:
        import snet_front.runtime  # noqa: F401
    except (ImportError, ValueError):  # ValueError: another snet's runtime on the executor ("size changed")
        return False
    return True


def run_plan(plan, records, engine: str = "front"):
    """The execution of ``plan`` over ``records`` (its ``warnings`` complete once it has ended): FRONT where its
    compiled runtime imports and ``engine`` is ``"front"``, else the reference engine.  FRONT has one worker
    (Spark runs a task per core already) and one call at a time (no tuner: nothing to choose), so it keeps the
    input order, as the reference engine does."""
    import importlib

    from snet.options import ENGINES, RunOptions

    engine = "front" if engine == "front" and front_imports() else "reference"
    module, name = ENGINES[engine].split(":")  # the engine registry (snet.backends.engine's)
    found = getattr(importlib.import_module(module), name)  # an snet.execution.Engine
    return found.start(plan, records, RunOptions.from_keywords(engine=engine, workers=1, box_concurrency=1))


def rows(batch, drop: tuple[str, ...] = ()) -> list[dict]:
    """The records of one Arrow batch: a dict per row, nulls (absent labels) and ``drop`` columns left out."""
    names = batch.schema.names
    if drop and any(n in drop for n in names):
        batch = batch.select([n for n in names if n not in drop])
        names = batch.schema.names
    found = batch.to_pylist()  # one conversion per column, the dicts built in C
    for name in names:
        if batch.column(name).null_count:
            for row in found:
                if row[name] is None:
                    del row[name]
    return found


def rdd_payloads(function: Callable, broadcast, payloads):
    """``mapPartitions`` function of a split job (classic Spark): ``function(context(), payload)`` per payload."""
    for payload in payloads:
        yield function(lambda: broadcast.value, payload)


def arrow_payloads(function: Callable, context: bytes, batches):
    """``mapInArrow`` function of a split job's DataFrame path (Spark Connect): the context in the closure."""
    import pyarrow as pa

    for batch in batches:
        column = batch.column(batch.schema.get_field_index("payload")).to_pylist()
        out = [function(lambda: context, p) for p in column]
        yield pa.RecordBatch.from_arrays([pa.array(out, type=pa.binary())], names=["payload"])
