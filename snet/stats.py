"""Statistics of a run: one typed snapshot, two formatters.

``Execution.stats()`` returns a :class:`RunStats`: what every engine
measures (records in and out, seconds, calls and seconds per box, and the
retries and timeouts of boxes given them) as
attributes, and what only one engine measures in an optional part:
:class:`FrontStats` (entities, scheduling counters, one
:class:`WorkerStats` per worker), :class:`ReferenceStats`, and
:class:`SparkStats` when splits ran on Spark,
:class:`SplitProcessStats` when they ran in split processes.  A snapshot is frozen; ask
again for newer figures (``--progress`` does, while the run goes on).

The engines count in their own loops and hand plain data over once per
snapshot; the ``from_*`` class methods turn that data into these classes,
so a counter an engine adds or renames fails here, in one place, rather
than in every reader.

Two formatters:

* :meth:`RunStats.summary`: what ``snet run --stats`` prints, in words a
  user knows (time, records, per box calls, time and share, records held in
  synchro-cells, peak entities);
* :meth:`RunStats.to_json`: nested plain data with every counter, what
  ``snet run --stats-json FILE`` writes: run-level keys at the top, FRONT's
  counters beside them (``workers`` there is the list of per-worker
  counters; the worker count is its length), the reference engine's
  ``instances``, ``spark`` or ``split_processes``, and ``held_in_cells``.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Any, Mapping

import attrs

from snet.statsview import format_duration, html_table, rich_table

if TYPE_CHECKING:
    from snet.splitexec import ExecutorStats


# The buckets of the call-time histogram every engine keeps per box: a call of
# ``t`` seconds counts in the first bucket whose bound is at least ``t``.  The
# bounds go 1, 1.5, 2, 3, 4, 6 ... µs, two to an octave, up to 2**25 µs (about
# 33.6 s), and a last bucket takes the longer calls.  Fixed bounds let the
# engines place a call with one ``frexp`` and no lock (FRONT: ``time_call`` in
# snet_front/runtime.pxd), add the workers' counts up, and serve them as the
# ``snet_box_seconds`` histogram unchanged; two to an octave keep a quantile
# read from them within a third of the true figure.
LATENCY_BOUNDS: tuple[float, ...] = tuple(sorted([2.0 ** k * 1e-6 for k in range(26)]
                                                 + [1.5 * 2.0 ** k * 1e-6 for k in range(25)]))
LATENCY_BUCKETS = len(LATENCY_BOUNDS) + 1  # the last bucket: longer than the last bound


def latency_bucket(seconds: float) -> int:
    """The histogram bucket of a call of ``seconds`` (the rule of :data:`LATENCY_BOUNDS`: the first bound at
    least ``seconds``, one C call; FRONT's ``time_call`` computes the same with ``frexp``)."""
    return bisect_left(LATENCY_BOUNDS, seconds)


@attrs.frozen
class BoxStats:
    """Calls of one box (all its instances) and the seconds spent in them.

    ``histogram``: the calls counted per bucket of :data:`LATENCY_BOUNDS`
    (empty when the engine keeps none); a sampled call (FRONT samples the
    calls of a fast box) counts as many times as its time does.
    ``queued`` and ``limit`` are live figures of the engines that have them
    (FRONT): records waiting in the box's inboxes now, and how many calls
    of one instance may run at once.
    """

    calls: int = 0
    seconds: float = 0.0
    # calls tried again, and calls abandoned past the timeout: for a box given a timeout or retries, else None
    retries: int | None = None
    timeouts: int | None = None
    histogram: tuple[int, ...] = ()
    queued: int | None = None
    limit: int | None = None
    # the level the box settled at under box concurrency auto (its highest over its instances), else None
    concurrency: int | None = None

    @property
    def seconds_per_call(self) -> float:
        return self.seconds / self.calls if self.calls else 0.0

    def quantile(self, q: float) -> float | None:
        """The call time below which a share ``q`` of the calls took, from the histogram (None: no histogram).

        Interpolated within the bucket that holds it (so good to a factor
        of two at worst); a quantile in the last, unbounded bucket is given
        as that bucket's lower bound.
        """
        total = sum(self.histogram)
        if not total:
            return None
        rank = q * total
        seen = 0
        for i, count in enumerate(self.histogram):
            if count and seen + count >= rank:
                if i >= len(LATENCY_BOUNDS):
                    return LATENCY_BOUNDS[-1]
                low = LATENCY_BOUNDS[i - 1] if i else 0.0
                return low + (LATENCY_BOUNDS[i] - low) * max(rank - seen, 0.0) / count
            seen += count
        return LATENCY_BOUNDS[-1]

    @property
    def p99(self) -> float | None:
        """The 99th percentile of the call time (see :meth:`quantile`)."""
        return self.quantile(0.99)

    @classmethod
    def table(cls, entries: Mapping[str, Any]) -> dict[str, "BoxStats"]:
        """``{name: [calls, seconds]}`` or ``{name: {"calls": .., "seconds": .., ...}}``, sorted by name.

        A mapping may also give ``histogram``, ``queued``, ``limit``, ``retries`` and ``timeouts``.
        """
        out = {}
        for name, entry in sorted(entries.items()):
            if isinstance(entry, Mapping):
                out[name] = cls(entry["calls"], entry["seconds"], histogram=tuple(entry.get("histogram", ())),
                                queued=entry.get("queued"), limit=entry.get("limit"), retries=entry.get("retries"),
                                timeouts=entry.get("timeouts"))
            else:  # [calls, seconds] or [calls, seconds, histogram]
                out[name] = cls(entry[0], entry[1], histogram=tuple(entry[2]) if len(entry) > 2 else ())
        return out


@attrs.frozen
class EntityStats:
    """FRONT's entities (box, combinator and cell instances)."""

    created: int
    alive: int
    peak: int
    reclaimed: int = 0  # dropped with split replicas that were back in their fresh state


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
class AutoStats:
    """What box concurrency auto settled at (snet.autoconc); the levels per box are in ``boxes``."""

    workers: int  # workers active at the end
    max_workers: int  # the workers the run may use (the cores and the highest level)
    changes: int  # changes of a level or of the worker count that stayed
    trials: int  # raises and worker counts tried
    settled_seconds: float  # when the last change that stayed was made, from the start of the run
    started: int  # the workers whose threads started: the most that were active at once


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
    batch_sizes: tuple[int, ...] = ()  # the batch sizes set in turn where chosen (SplitBatchSizer.chosen)

    @property
    def batches(self) -> int:
        return sum(s.batches for s in self.splits.values())

    @property
    def records(self) -> int:
        return sum(s.records for s in self.splits.values())


@attrs.frozen
class SplitProcessStats:
    """The part of a run whose splits ran in split processes (``--split-processes``, snet.splitproc)."""

    name = "split_processes"  # the RunStats field of this executor's part (see `executor_part`)

    processes: int
    batch_size: int
    selected: tuple[str, ...]  # positions of the splits run in the processes
    flushes: int  # batches
    seconds: float  # total time of the flushes
    records: int  # records sent to the processes (a range split's copies counted)
    replicas: int  # replicas with state, alive in the processes
    boxes: Mapping[str, BoxStats]  # box calls in the processes
    batch_sizes: tuple[int, ...] = ()  # the batch sizes set in turn where chosen (SplitBatchSizer.chosen)


def _batches(count: int) -> str:
    return f"{count:,} batch{'es' if count != 1 else ''}"


def _guarded(box: BoxStats) -> str:
    """``4 retries, 1 timeout``: the attempts a guarded box (snet.core.guard) made again, and those abandoned."""
    retries, timeouts = box.retries or 0, box.timeouts or 0
    return f"{retries:,} retr{'ies' if retries != 1 else 'y'}, {timeouts:,} timeout{'s' if timeouts != 1 else ''}"


def _guarded_after(box: BoxStats) -> str:
    """``, 4 retries, 1 timeout`` for a guarded box, to follow its calls; nothing for another."""
    return f", {_guarded(box)}" if box.retries is not None else ""


def _chosen(sizes: tuple[int, ...]) -> str:
    """``; batch sizes chosen 64 → 8,192`` (the first batch's, then each change; the latest eight), or nothing."""
    shown = " → ".join(f"{size:,}" for size in sizes[-8:])
    return f"; batch sizes chosen {'… → ' if len(sizes) > 8 else ''}{shown}" if sizes else ""


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
    split_processes: SplitProcessStats | None = None
    failures: int = 0  # records skipped after an error (on_error other than "stop")
    # patterns filled in synchro-cells that have not fired (None: the engine does not say)
    held_in_cells: int | None = None
    # the process's resident memory when the snapshot was taken (None: not measured)
    resident_bytes: int | None = None
    auto: AutoStats | None = None  # box concurrency auto: where the controller settled

    @classmethod
    def from_front(cls, data: Mapping[str, Any], executor: Any = None,
                   held_in_cells: int | None = None, resident_bytes: int | None = None) -> "RunStats":
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
                   held_in_cells=held_in_cells, resident_bytes=resident_bytes, **executor_part(executor))

    def with_guards(self, table: Mapping[str, tuple[int, int]]) -> "RunStats":
        """These statistics with the retries and timeouts of the boxes given them (``{name: (retries, timeouts)}``),
        counted in this process: a box called only in split processes or on Spark has its own there
        (``split_processes``, ``spark``)."""
        boxes = dict(self.boxes)
        elsewhere = set(self.split_processes.boxes) if self.split_processes is not None else set()
        if self.spark is not None:
            elsewhere.update(name for split in self.spark.splits.values() for name in split.boxes)
        for name, (retries, timeouts) in table.items():
            here = boxes.get(name, BoxStats())
            if not (here.calls or retries or timeouts) and name in elsewhere:
                continue
            boxes[name] = attrs.evolve(here, retries=retries, timeouts=timeouts)
        return attrs.evolve(self, boxes=boxes)

    def with_auto(self, summary: Mapping[str, Any]) -> "RunStats":
        """These statistics with box concurrency auto's settled state (``Controller.summary()``)."""
        boxes = dict(self.boxes)
        for name, level in summary["levels"].items():
            boxes[name] = attrs.evolve(boxes.get(name, BoxStats()), concurrency=level)
        auto = AutoStats(**{k: v for k, v in summary.items() if k != "levels"})
        return attrs.evolve(self, boxes=boxes, auto=auto)

    # -- the two formatters ---------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Nested plain data with every counter, as ``--stats-json`` writes it (see the module docstring)."""
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
        if self.split_processes is not None:
            data["split_processes"] = attrs.asdict(self.split_processes)
        if self.held_in_cells is not None:
            data["held_in_cells"] = self.held_in_cells
        if self.resident_bytes is not None:
            data["resident_bytes"] = self.resident_bytes
        if any(box.histogram for box in self.boxes.values()):
            data["latency_bounds"] = list(LATENCY_BOUNDS)  # the upper bounds of each box's "histogram" buckets
        if self.auto is not None:
            data["auto"] = attrs.asdict(self.auto)
        return data

    def summary(self) -> str:
        """What ``snet run --stats`` prints: the run in words a user knows (``to_json`` has every counter)."""
        lines = ["snet run statistics:",
                 f"  {format_duration(self.seconds)} on the {self.engine} engine"
                 + (f" with {'up to ' if self.auto and self.workers > 1 else ''}{self.workers} "
                    f"worker{'s' if self.workers != 1 else ''}"
                    if self.engine == "front" else ""),
                 f"  records: {self.records_in} read, {self.records_out} written"
                 + (f" ({self.records_out / self.seconds:,.0f} per second)" if self.seconds > 0 else "")]
        if self.boxes:
            total = sum(box.seconds for box in self.boxes.values())
            width = max(len("box"), *(len(name) for name in self.boxes))
            lines.append(f"  {'box':<{width}}  {'calls':>10}  {'time in box':>11}  {'per call':>9}  {'share':>5}")
            for name, box in sorted(self.boxes.items(), key=lambda item: (-item[1].seconds, item[0])):
                share = f"{100 * box.seconds / total:.0f}%" if total > 0 else "-"
                lines.append(f"  {name:<{width}}  {box.calls:>10,}  {format_duration(box.seconds):>11}  "
                             f"{format_duration(box.seconds_per_call):>9}  {share:>5}")
            lines.append("  (share: of all the time spent in boxes)")
            for name, box in sorted(self.boxes.items()):
                if box.retries is not None:
                    lines.append(f"  box {name}: {_guarded(box)}")
        if self.auto is not None:
            auto = self.auto
            levels = ", ".join(f"{name} {box.concurrency}" for name, box in sorted(self.boxes.items())
                               if box.concurrency is not None)
            lines.append(f"  box concurrency auto: {auto.workers} of {auto.max_workers} workers active; "
                         f"levels {levels}; settled after {format_duration(auto.settled_seconds)} "
                         f"({auto.changes} change{'s' if auto.changes != 1 else ''}, {auto.trials} tried)")
        if self.failures:
            lines.append(f"  records that failed and were skipped: {self.failures}")
        if self.held_in_cells is not None:
            lines.append(f"  records held in synchro-cells that never fired: {self.held_in_cells}")
        front = self.front
        if front is not None:
            lines.append(f"  peak entities (box, combinator and cell instances alive at once): "
                         f"{front.entities.peak:,} ({front.entities.created:,} made in all)")
            lines.append(f"  entities at the end: {front.entities.alive:,} alive, "
                         f"{front.entities.reclaimed:,} reclaimed with fresh split replicas")
            if self.seconds > 0 and front.workers:
                busy = sum(w.busy_seconds for w in front.workers) / (self.seconds * len(front.workers))
                lines.append(f"  workers busy {100 * min(busy, 1.0):.0f}% of the time")
        spark = self.spark
        if spark is not None:
            lines.append(f"  on Spark ({spark.master}): {_batches(spark.batches)}, {spark.records:,} records, "
                         f"{format_duration(spark.seconds)}{_chosen(spark.batch_sizes)}")
            for where, split in sorted(spark.splits.items()):
                lines.append(f"    split at {where}: {_batches(split.batches)}, {split.records:,} records, "
                             f"{split.tasks} tasks, {format_duration(split.seconds)}")
                lines.extend(f"      box {name}: {box.calls:,} calls, {format_duration(box.seconds)} in the tasks"
                             f"{_guarded_after(box)}" for name, box in sorted(split.boxes.items()))
        local = self.split_processes
        if local is not None:
            lines.append(f"  in {local.processes} split processes: {_batches(local.flushes)}, "
                         f"{local.records:,} records, {format_duration(local.seconds)}; "
                         f"{local.replicas:,} replicas with state{_chosen(local.batch_sizes)}")
            for name, box in sorted(local.boxes.items()):
                lines.append(f"    box {name}: {box.calls:,} calls, {format_duration(box.seconds)} in the processes"
                             f"{_guarded_after(box)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The per-box table of ``snet run --top`` as HTML: what a notebook shows for a snapshot."""
        return html_table(self)

    def __rich__(self) -> Any:
        """The per-box table of ``snet run --top`` (``rich.print(session.stats())``); needs rich."""
        return rich_table(self)


def _boxes_json(boxes: Mapping[str, BoxStats]) -> dict[str, dict[str, Any]]:
    # retries and timeouts only for the boxes given them; the histogram, the queue and the limit where known
    return {name: attrs.asdict(box, filter=lambda _, v: v is not None and v != ())
            for name, box in sorted(boxes.items())}


__all__ = ["LATENCY_BOUNDS", "LATENCY_BUCKETS", "latency_bucket", "box_entry", "add_box_calls", "RunStats", "AutoStats",
           "BoxStats", "FrontStats", "EntityStats", "WorkerStats", "ReferenceStats", "SparkStats", "SplitStats",
           "SplitProcessStats"]


def add_guard_counts(into: Mapping[str, tuple[int, int]], counts: Mapping[str, tuple[int, int]]
                     ) -> dict[str, tuple[int, int]]:
    """``into`` with ``counts`` added, box by box (``{name: (retries, timeouts)}``): the figures of guarded boxes
    (snet.core.guard) called elsewhere, summed; a new dict, so that another thread may read the old one."""
    out = dict(into)
    for name, (retries, timeouts) in counts.items():
        before = out.get(name, (0, 0))
        out[name] = (before[0] + retries, before[1] + timeouts)
    return out


def box_entries(calls: Mapping[str, Any], guards: Mapping[str, tuple[int, int]]) -> dict[str, dict[str, Any]]:
    """The entries of :meth:`BoxStats.table` for the boxes of a split run elsewhere: their ``[calls, seconds,
    histogram]`` (``add_box_calls``) and the retries and timeouts of those given a guard (``add_guard_counts``)."""
    out: dict[str, dict[str, Any]] = {}
    for name, entry in calls.items():
        out[name] = dict(zip(("calls", "seconds", "histogram"), entry))
        if name in guards:
            out[name]["retries"], out[name]["timeouts"] = guards[name]
    return out


def box_entry(table: dict[str, list[Any]], name: str) -> list[Any]:
    """Box ``name``'s entry ``[calls, seconds, histogram counts]`` in an engine's per-box table, made if new."""
    entry = table.get(name)
    if entry is None:
        entry = table[name] = [0, 0.0, [0] * LATENCY_BUCKETS]
    return entry


def add_box_calls(into: dict[str, list[Any]], entries: Mapping[str, Any]) -> None:
    """Add an engine's per-box entries (``[calls, seconds]`` or ``[calls, seconds, histogram]``, as the
    reference engine keeps them) to ``into``'s: the figures of replicas run elsewhere, summed."""
    for name, (calls, seconds, *histogram) in entries.items():
        entry = box_entry(into, name)
        entry[0] += calls
        entry[1] += seconds
        if histogram:
            entry[2] = [a + b for a, b in zip(entry[2], histogram[0])]


def executor_part(executor_stats: ExecutorStats | None) -> dict[str, Any]:
    """The RunStats keyword for a split executor's stats object (none for None): engines stay generic."""
    return {executor_stats.name: executor_stats} if executor_stats is not None else {}
