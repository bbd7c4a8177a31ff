"""Statistics of a run: one typed snapshot, two formatters.

``Execution.stats()`` returns a :class:`RunStats`: what every engine
measures (records in and out, seconds, calls and seconds per box) as
attributes, and what only one engine measures in an optional part:
:class:`FrontStats` (entities, scheduling counters, one
:class:`WorkerStats` per worker), :class:`ReferenceStats`, and
:class:`SparkStats` when splits ran on Spark.  A snapshot is frozen; ask
again for newer figures (``--progress`` does, while the run goes on).

The engines count in their own loops and hand plain data over once per
snapshot; the ``from_*`` class methods turn that data into these classes,
so a counter an engine adds or renames fails here, in one place, rather
than in every reader.

Two formatters, used by ``snet run --stats``:

* :meth:`RunStats.format_table`: the summary a person reads;
* :meth:`RunStats.to_json`: nested plain data for the ``snet stats: {...}``
  line.  Its keys are the ones that line has always had: run-level keys
  at the top, FRONT's counters beside them (``workers`` there is the list
  of per-worker counters; the worker count is its length), the reference
  engine's ``instances``, and ``spark``.
"""

from __future__ import annotations

from typing import Any, Mapping

import attrs


@attrs.frozen
class BoxStats:
    """Calls of one box (all its instances) and the seconds spent in them."""

    calls: int = 0
    seconds: float = 0.0

    @property
    def seconds_per_call(self) -> float:
        return self.seconds / self.calls if self.calls else 0.0

    @classmethod
    def table(cls, entries: Mapping[str, Any]) -> dict[str, "BoxStats"]:
        """``{name: [calls, seconds]}`` or ``{name: {"calls": .., "seconds": ..}}``, sorted by name."""
        out = {}
        for name, entry in sorted(entries.items()):
            calls, seconds = (entry["calls"], entry["seconds"]) if isinstance(entry, Mapping) else entry
            out[name] = cls(calls, seconds)
        return out


@attrs.frozen
class EntityStats:
    """FRONT's entities (box, combinator and cell instances)."""

    created: int
    alive: int
    peak: int


@attrs.frozen
class WorkerStats:
    """One FRONT worker thread."""

    busy_seconds: float
    invocations: int
    continuations: int
    inputs: int  # input records this worker admitted
    licences_stolen: int


@attrs.frozen
class FrontStats:
    """The FRONT engine's scheduling counters (docs/runtime.md, Statistics)."""

    entities: EntityStats
    invocations: int
    continuations: int  # walk-the-record: a worker carried on with the record it produced
    steals: int
    licences_stolen: int
    records_moved_past_identities: int
    workers: tuple[WorkerStats, ...]


@attrs.frozen
class ReferenceStats:
    """The reference engine's counters."""

    instances: int  # instances of the instance tree built, replicas included


@attrs.frozen
class SplitStats:
    """One split whose replicas ran on Spark (docs/spark.md, Statistics)."""

    split: str  # the split's position, FILE:LINE:COL
    path: str  # the job path, "rdd" or "dataframe"
    partitions: int
    replicas: int  # replicas with state kept between batches
    batches: int
    records: int
    copies: int  # range copies made on the driver
    tasks: int
    seconds: float
    job_seconds: float
    max_batch_seconds: float
    seconds_per_batch: float
    executor_seconds: float
    bytes_out: int
    bytes_in: int
    boxes: Mapping[str, BoxStats]  # box calls on the executors

    @classmethod
    def from_runner(cls, data: Mapping[str, Any]) -> "SplitStats":
        """From a split runner's ``stats()`` dict."""
        return cls(**{**data, "boxes": BoxStats.table(data["boxes"])})


@attrs.frozen
class SparkStats:
    """The part of a run on Spark."""

    name = "spark"  # the RunStats field of this executor's part (see `executor_part`)

    master: str
    batch_size: int
    selected: tuple[str, ...]  # positions of the splits on Spark
    flushes: int
    seconds: float  # total time of the flushes
    splits: Mapping[str, SplitStats]  # by position

    @property
    def batches(self) -> int:
        return sum(s.batches for s in self.splits.values())

    @property
    def records(self) -> int:
        return sum(s.records for s in self.splits.values())


@attrs.frozen
class RunStats:
    """A snapshot of a run's statistics (see the module docstring)."""

    engine: str
    workers: int  # threads running the network
    seconds: float
    records_in: int
    records_out: int
    boxes: Mapping[str, BoxStats] = attrs.field(factory=dict)
    front: FrontStats | None = None
    reference: ReferenceStats | None = None
    spark: SparkStats | None = None
    failures: int = 0  # records skipped after an error (on_error other than "stop")

    @classmethod
    def from_front(cls, data: Mapping[str, Any], executor: Any = None) -> "RunStats":
        """From the dict of ``snet_front.runtime.Runtime.statistics()`` and the split executor's stats, if any."""
        workers = tuple(WorkerStats(**w) for w in data["workers"])
        front = FrontStats(
            entities=EntityStats(**data["entities"]),
            invocations=data["invocations"],
            continuations=data["continuations"],
            steals=data["steals"],
            licences_stolen=data["licences_stolen"],
            records_moved_past_identities=data["records_moved_past_identities"],
            workers=workers,
        )
        return cls(engine="front", workers=len(workers), seconds=data["seconds"], records_in=data["records_in"],
                   records_out=data["records_out"], boxes=BoxStats.table(data["boxes"]), front=front,
                   **executor_part(executor))

    # -- the two formatters ---------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Nested plain data with the keys of the ``snet stats:`` line (see the module docstring)."""
        data: dict[str, Any] = {"engine": self.engine, "seconds": self.seconds, "records_in": self.records_in,
                                "records_out": self.records_out, "boxes": _boxes_json(self.boxes)}
        if self.failures:
            data["failures"] = self.failures
        if self.front is not None:
            data.update(attrs.asdict(self.front))
        if self.reference is not None:
            data.update(attrs.asdict(self.reference))
        if self.spark is not None:
            data["spark"] = attrs.asdict(self.spark)
        return data

    def format_table(self) -> str:
        """The summary ``snet run --stats`` prints: one ``name: value`` line each, then a table of the boxes."""
        rows: list[tuple[str, Any]] = [("engine", self.engine), ("workers", self.workers),
                                       ("seconds", self.seconds), ("records_in", self.records_in),
                                       ("records_out", self.records_out)]
        front = self.front
        if front is not None:
            rows += [("entities", _pairs(front.entities)), ("invocations", front.invocations),
                     ("continuations", front.continuations), ("steals", front.steals),
                     ("licences_stolen", front.licences_stolen),
                     ("records_moved_past_identities", front.records_moved_past_identities)]
            rows += [(f"worker {i}", _pairs(w)) for i, w in enumerate(front.workers)]
        if self.reference is not None:
            rows.append(("instances", self.reference.instances))
        if self.spark is not None:
            rows.append(("spark", _pairs(self.spark, skip=("selected", "splits"))))
            rows += [(f"split {where}", _pairs(split, skip=("split", "boxes")))
                     for where, split in sorted(self.spark.splits.items())]
        lines = ["-- snet run statistics --"] + [f"{name:>22}: {_num(value)}" for name, value in rows]
        if self.boxes:
            lines.append(f"{'box':>22}  {'calls':>10}  {'seconds':>10}  {'us/call':>10}")
            for name, box in sorted(self.boxes.items()):
                lines.append(f"{name:>22}  {box.calls:>10}  {box.seconds:>10.4f}  {1e6 * box.seconds_per_call:>10.1f}")
        return "\n".join(lines)


def _boxes_json(boxes: Mapping[str, BoxStats]) -> dict[str, dict[str, Any]]:
    return {name: attrs.asdict(box) for name, box in sorted(boxes.items())}


def _pairs(part: Any, skip: tuple[str, ...] = ()) -> str:
    """``a=1, b=2.5``: the plain fields of an attrs instance, sorted by name."""
    values = attrs.asdict(part, recurse=False)
    return ", ".join(f"{k}={_num(v)}" for k, v in sorted(values.items()) if k not in skip)


def _num(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


__all__ = ["RunStats", "BoxStats", "FrontStats", "EntityStats", "WorkerStats", "ReferenceStats", "SparkStats",
           "SplitStats"]


def executor_part(executor_stats: Any) -> dict[str, Any]:
    """The RunStats keyword for a split executor's stats object (none for None): engines stay generic."""
    return {executor_stats.name: executor_stats} if executor_stats is not None else {}
