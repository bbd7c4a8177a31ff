"""The driver side of one split on Spark: a batch in, outputs per input out, one Spark job per batch.

:class:`SparkSplitRunner` groups a batch by (split instance, tag value) and
packs the groups into at most ``partitions`` tasks of one single-stage job
(no shuffle: each group carries its records in order); an operand without
state is cut into equal chunks of its records instead, sent without keys.  The RDD path on classic Spark, the
DataFrame path (``mapInArrow``) on Spark Connect or with ``snet.path=dataframe``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
import uuid
from typing import Any, Callable, Iterator

from snet.core.compiled import SplitKeys
from snet.errors import SNetRuntimeError, SNetUsageError
from snet.records import Record
from snet.spark.failures import crash_summary, interrupt_in, looks_like_crash, reason
from snet.spark.splits import crash
from snet.spark.splits.replicas import Group, GroupResult, TaskInput, TaskOutput, run_payload
from snet.spark.tasks import arrow_payloads, dumps, loads, rdd_payloads
from snet.splitexec import SplitFailure, SplitOutputs, SplitRunner, aligned_outputs, fold_outputs
from snet.stats import add_box_calls, add_guard_counts, box_entries
from snet.spg.nodes import PropertyGraph, SplitNode

log = logging.getLogger("snet.spark")

# Settings read by snet itself, not passed to Spark.
SNET_KEYS = ("snet.path", "snet.partitions", "snet.boxes", "snet.mode")


class SparkSplitRunner(SplitRunner):
    """Runs the replicas of one split node on Spark; ``conf`` holds Spark's settings and snet's (``snet.path``,
    ``snet.partitions``, ``snet.boxes``).  Instances of the node share one runner, state per (instance, value)."""

    def __init__(self, graph: PropertyGraph, split_node_id: int, boxes: dict[str, Callable], master: str,
                 conf: dict[str, str] | None = None, skip_errors: bool = False, guards: dict | None = None):
        from snet.spark.cluster.jobs import RunJobs
        from snet.spark.cluster.session import get_session, is_connect_session, parallelism
        from snet.spark.cluster.shipping import shipped_context, shipped_only

        node = graph.nodes[split_node_id]
        if not isinstance(node, SplitNode):
            raise SNetUsageError(f"node {split_node_id} is a {node.kind}, not a split")
        conf = dict(conf or {})
        own = {k: conf.pop(k) for k in SNET_KEYS if k in conf}
        self.node, self.keys, self.master = node, SplitKeys(node), master
        self.where = node.span.location if node.span is not None else f"node {node.id}"
        self.stateful = node.operand.holds_state  # replicas differ: per-replica state bytes
        self.session = get_session(master, conf)
        self.connect = is_connect_session(self.session)
        path = own.get("snet.path", "dataframe" if self.connect else "rdd")
        if path not in ("rdd", "dataframe") or (self.connect and path == "rdd"):
            raise SNetUsageError(f"snet.path must be 'rdd' (classic Spark only) or 'dataframe', not '{path}'")
        self.path = path
        self.partitions = int(own.get("snet.partitions") or parallelism(self.session))
        self.run_id = uuid.uuid4().hex
        self.failures: list[tuple] = []  # (seq, error record, ErrorReport) of records skipped on the executors
        self.parked: list[tuple] = []  # (node id, span, record) kept for ever in the replicas (SplitRunner.stuck)
        self.context_bytes = shipped_context(self.session, graph, split_node_id, boxes, skip_errors,
                                             shipped_only(own.get("snet.boxes")), guards)
        self.jobs = RunJobs(self.session, f"snet-split-{self.run_id}")
        self._broadcast = self.session.sparkContext.broadcast(self.context_bytes) if self.path == "rdd" else None
        self.states: dict[tuple[int, int], bytes] = {}  # (instance, value) -> its bytes after its last batch
        self.pending_warnings: dict[tuple[int, int], list[str]] = {}
        self.box_calls: dict[str, list] = {}
        self.guard_counts: dict[str, tuple[int, int]] = {}  # box -> (retries, timeouts) on the executors
        self._stats = {**dict.fromkeys(("batches", "records", "copies", "tasks", "bytes_out", "bytes_in"), 0),
                       **dict.fromkeys(("seconds", "job_seconds", "max_batch_seconds", "executor_seconds"), 0.0)}
        self._closed, self._replicas_at_close = False, 0

    def process_columns(self, instances: list[int], seqs: list[int], records: list[Record]) -> list[SplitOutputs]:
        """A batch's outputs per input, in order (its instances, rising sequence numbers and records); SplitFailure
        for the first error by (seq, instance).  A stateless operand: equal chunks of bare records (docs/spark.md)."""
        if self._closed:
            raise SNetUsageError("the Spark split runner is closed")
        if self.stateful:
            return self._replicas(list(zip(instances, seqs, records)))
        started, ranged = time.perf_counter(), self.keys.hi_tag is not None
        if ranged:  # a copy for each value, their outputs joined (fold_outputs)
            copies = [item for item in zip(instances, seqs, records) for _ in self.keys.values(item[2])]
            instances, seqs, records = (list(column) for column in zip(*copies)) if copies else ([], [], [])
        n = len(records)
        size = -(-n // max(1, min(self.partitions, n))) or 1
        payloads = self._payloads([[Group(-1, at, None, records[at:at + size], True)] for at in range(0, n, size)])
        raw, job_seconds = self._run_job(payloads)
        done: list = [None] * n
        errors = []  # (seq, instance, place, ErrorReport)
        for result in self._results(raw):
            at = result.value or 0
            if result.aligned:
                done[at:at + len(result.outputs)] = result.outputs
            else:  # the crash diagnosis's: keyed by (place,)
                for (place,), outputs in result.outputs:
                    done[at + place] = outputs
            self.failures.extend((seqs[at + place], record, report) for place, record, report in result.failures)
            if result.error is not None:  # (no key: a process died before the group's first record)
                j = at + (result.error.key[0] if result.error.key else 0)
                errors.append((seqs[j], instances[j], j, result.error))
        self._account(len(set(seqs)) if ranged else n, n, payloads, started, job_seconds)
        if not errors and not ranged:
            return aligned_outputs(instances, seqs, done)
        seq, instance, _, first = min(errors, key=lambda e: e[:3]) if errors else (n and seqs[-1] + 1, 0, 0, None)
        outputs = fold_outputs([((q, i, 0), o) for i, q, o in zip(instances, seqs, done) if (q, i) < (seq, instance)])
        if first is not None:
            raise SplitFailure(first.rebuild(), seq, outputs)
        return outputs

    def _replicas(self, batch: list[tuple[int, int, Record]]) -> list[SplitOutputs]:
        """A stateful operand's ``[(instance, seq, record)]``: a group per replica, its state bytes there and back."""
        started = time.perf_counter()
        groups, copies = self._group(batch)
        payloads = self._payloads(self._pack(groups))
        raw, job_seconds = self._run_job(payloads)
        keyed: list[tuple[tuple, list[Record]]] = []
        errors = []
        for result in self._results(raw):
            keyed.extend(result.outputs)
            self.failures.extend(result.failures)
            if result.error is not None:
                errors.append(result.error)
            else:  # a group is one replica (a tag value), handed back with its state
                assert result.value is not None and result.state is not None, "a replica group without state"
                self.states[replica := (result.instance, result.value)] = result.state
                self.pending_warnings[replica] = result.warnings  # (none: an empty list)
        keyed.sort(key=lambda item: item[0])
        self._account(len(batch), copies, payloads, started, job_seconds)
        if errors:
            first = min(errors, key=lambda e: e.key)
            raise SplitFailure(first.rebuild(), first.key[0],
                               fold_outputs([item for item in keyed if item[0] < first.key]))
        return fold_outputs(keyed)

    def _payloads(self, tasks: list[list[Group]]) -> list[bytes]:
        try:
            return [dumps(TaskInput(self.run_id, groups)) for groups in tasks]
        except Exception as e:
            raise SNetRuntimeError(f"a record that entered the split cannot be pickled for Spark: "
                                   f"{type(e).__name__}: {e}", self.node.span) from e

    def _results(self, raw: list[bytes]) -> Iterator[GroupResult]:
        """The groups' results of a job's tasks, their figures added to the run's."""
        for data in raw:
            out: TaskOutput = loads(data)
            self._stats["executor_seconds"] += out.seconds
            self._stats["bytes_in"] += len(data)
            add_box_calls(self.box_calls, out.box_calls)
            self.guard_counts = add_guard_counts(self.guard_counts, out.guards)
            for result in out.results:
                self.parked.extend(result.parked)
                yield result

    def _account(self, records: int, copies: int, payloads: list[bytes], started: float, job_seconds: float) -> None:
        seconds = time.perf_counter() - started
        s = self._stats
        for key, value in (("batches", 1), ("records", records), ("copies", copies), ("tasks", len(payloads)),
                           ("seconds", seconds), ("job_seconds", job_seconds), ("bytes_out", sum(map(len, payloads)))):
            s[key] += value
        s["max_batch_seconds"] = max(s["max_batch_seconds"], seconds)
        log.info("spark split %s: batch %d, %d records, %d tasks, %.3f s", self.where, s["batches"],
                 records, len(payloads), seconds)

    def bytes_moved(self) -> int:
        return int(self._stats["bytes_out"] + self._stats["bytes_in"])

    def take_failures(self) -> list[tuple]:
        failures, self.failures = self.failures, []
        return [(seq, record, report.rebuild()) for seq, record, report in sorted(failures, key=lambda f: f[0])]

    def _group(self, batch: list[tuple[int, int, Record]]) -> tuple[list[Group], int]:
        """Items per replica: ``key = (seq, instance, value)``, ``fire`` for a new replica."""
        groups: dict[tuple[int, int], Group] = {}
        for instance, seq, record in batch:
            for value in self.keys.values(record):
                replica = (instance, value)
                group = groups.get(replica)
                fire = group is None and replica not in self.states  # a new replica's first record
                if group is None:
                    group = groups[replica] = Group(instance, value, self.states.get(replica), [])
                group.items.append(((seq, instance, value), record, fire))
        return list(groups.values()), sum(len(group.items) for group in groups.values())

    def _pack(self, groups: list[Group]) -> list[list[Group]]:
        """At most ``partitions`` tasks, balanced by record count (largest group first)."""
        n = max(1, min(self.partitions, len(groups)))
        tasks: list[list[Group]] = [[] for _ in range(n)]
        loads_ = [0] * n
        for group in sorted(groups, key=lambda g: len(g.items), reverse=True):
            i = loads_.index(min(loads_))
            tasks[i].append(group)
            loads_[i] += len(group.items)
        return [t for t in tasks if t]

    def _run_job(self, payloads: list[bytes]) -> tuple[list[bytes], float]:  # (the results, the job's seconds)
        started = time.perf_counter()
        if not payloads:
            return [], 0.0
        description = f"snet split {self.where} batch {self._stats['batches'] + 1}"
        try:
            raw = self._job(functools.partial(run_payload, self.run_id), description, payloads)
            return raw, time.perf_counter() - started
        except Exception as e:
            failure = SNetRuntimeError(f"Spark job of the split failed: {reason(e)[:500]}",
                                       self.node.span, str(e)[:4000])
            if not looks_like_crash(str(e)):
                raise failure from e
            error = e
        rerun = self._diagnose(payloads, description, crash_summary(str(error)))
        if rerun is None:
            raise failure from error
        return rerun, time.perf_counter() - started

    def _job(self, function, description: str, payloads: list[bytes]) -> list[bytes]:
        """One job mapping ``function(context(), payload)`` over ``payloads`` (tagged: Ctrl-C cancels it)."""
        try:
            with self.jobs.tagged(description):
                if self.path == "rdd":
                    rdd = self.session.sparkContext.parallelize(payloads, len(payloads))
                    return rdd.mapPartitions(functools.partial(rdd_payloads, function, self._broadcast)).collect()
                df = self.session.createDataFrame([(p,) for p in payloads], "payload binary")
                fn = functools.partial(arrow_payloads, function, self.context_bytes)
                return [bytes(row[0]) for row in df.mapInArrow(fn, "payload binary").collect()]
        except BaseException as e:
            if (interrupt := interrupt_in(e)) is None:
                raise
            self.cancel()  # Ctrl-C (SIGTERM), or an error py4j raised while it handled one
            raise interrupt from None

    def _diagnose(self, payloads: list[bytes], description: str, job_error: str) -> list[bytes] | None:
        """The batch again, each task's groups in child processes (:mod:`snet.spark.splits.crash`); None if that
        fails too."""
        log.warning("spark split %s: a Python worker died; running the batch again to find the box and the record",
                    self.where)
        function = functools.partial(crash.run_payload, self.run_id, job_error)
        try:
            raw = self._job(function, description + " (crash diagnosis)", payloads)
        except Exception as e:
            log.debug("the crash diagnosis failed too: %s", e)
            return None
        if not any(result.error is not None or any(report.crash for _seq, _record, report in result.failures)
                   for data in raw for result in loads(data).results):
            log.warning("spark split %s: the batch ran again and completed: its results are used", self.where)
        return raw

    def cancel(self) -> None:
        """Stop this run's Spark jobs (Ctrl-C while a batch runs)."""
        self.jobs.cancel()

    def warnings(self) -> list[str]:
        """Termination warnings: synchro-cells in replicas that hold records but never fired."""
        return [w for key in sorted(self.pending_warnings) for w in self.pending_warnings[key]]

    def stats(self) -> dict[str, Any]:
        s: dict[str, Any] = {**self._stats, "split": self.where, "path": self.path, "partitions": self.partitions,
                             "replicas": len(self.states) if not self._closed else self._replicas_at_close,
                             "boxes": box_entries(self.box_calls, self.guard_counts)}
        s["seconds_per_batch"] = s["seconds"] / s["batches"] if s["batches"] else 0.0
        return s

    def close(self) -> None:
        """Release the run's broadcast; the session stays up for later runs."""
        if self._closed:
            return
        self._closed = True
        self._replicas_at_close = len(self.states)
        if self._broadcast is not None:
            with contextlib.suppress(Exception):  # the session may be gone at interpreter exit
                self._broadcast.unpersist()
        self.states.clear()

