"""A Python worker that dies in a split's task: find the box and the record, keep the outputs before it.

The driver runs the batch again as a *diagnosis* job whose tasks run their
groups in forked children (:class:`snet.isolation.Child`) that say which
record and box call they are in; a dead child becomes its group's
:class:`~snet.splitexec.ErrorReport`, or under ``on_error``
"skip" a skipped record (:func:`without`).  See docs/architecture.md, "Spark".
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, Callable

from snet import isolation
from snet.errorpolicy import error_record
from snet.spark.splits.replicas import Group, GroupResult, Out, ReplicaHost, TaskInput, TaskOutput, host_for, keyed
from snet.splitexec import ErrorReport
from snet.spark.tasks import dumps, loads
from snet.stats import add_box_calls


@dataclass(frozen=True, slots=True)
class GroupStart:  # the child's messages besides isolation's: a group starts ...
    index: int


@dataclass(frozen=True, slots=True)
class GroupDone:  # ... and ends with its GroupResult
    index: int
    result: GroupResult
    box_calls: dict


def _run_groups(host: ReplicaHost, groups: list, first: int) -> None:
    """The child's work: run ``groups[first:]``, reporting as it goes."""
    host.observer = isolation.send
    host.engine.box_calls = {}
    for index in range(first, len(groups)):
        isolation.send(GroupStart(index))
        result = host.run_group(groups[index])  # a run-time error of the network is a result
        isolation.send(GroupDone(index, result, host.engine.box_calls))
        host.engine.box_calls = {}


def run_isolated(host: ReplicaHost, task: TaskInput, job_error: str = "") -> TaskOutput:
    """Run ``task``'s groups in forked children; a child's death becomes the crashed group's error (or, with
    ``host.skip_errors``, a skipped record)."""
    started = time.perf_counter()
    groups = list(task.groups)
    results: list[GroupResult] = []
    box_calls: dict[str, list] = {}
    kept: dict[int, tuple[list, list]] = {}  # group index -> (outputs, failures) of runs a skipped crash cut
    index = 0
    while index < len(groups):
        child = isolation.Child(functools.partial(_run_groups, host, groups, index), dumps=dumps)
        current, key, box = index, None, None
        outputs: list[tuple[Any, list]] = []  # (key, outputs) per item of the current group
        failures: list[tuple] = []  # (seq, error record, ErrorReport) of the records it skipped
        failed = None
        try:
            for message in child.messages():
                if isinstance(message, GroupStart):
                    current, key, box, outputs, failures = message.index, None, None, [], []
                elif isinstance(message, isolation.Item):
                    key, box = message.key, None
                elif isinstance(message, isolation.BoxCall):
                    box = message
                elif isinstance(message, Out):
                    outputs.append((message.key, message.outputs))
                    failures.extend(message.failures)
                elif isinstance(message, GroupDone):
                    result = message.result
                    if message.index in kept:
                        earlier_outputs, earlier_failures = kept.pop(message.index)
                        result.outputs[:0] = earlier_outputs
                        result.failures[:0] = earlier_failures
                    results.append(result)
                    add_box_calls(box_calls, message.box_calls)
                    current = message.index + 1
                elif isinstance(message, isolation.Failed):
                    failed = message.traceback
        finally:
            status = child.end()
        if failed is not None:
            raise RuntimeError(f"the crash diagnosis of a split's batch failed:\n{failed}")
        if current >= len(groups):
            break
        group = groups[current]
        record = next((r for k, r, _fire in group.items if k == key), None)
        report = _report(host, key, record, box, isolation.how(status), job_error)
        if host.skip_errors and key is not None and record is not None:
            # skipped: the group runs again without the record, in a new child
            earlier_outputs, earlier_failures = kept.get(current, ([], []))
            skipped = (key[0], error_record(report.rebuild(), record, box.name if box else None), report)
            # the skipped input has no outputs (engines wait for every input's entry)
            none: list[tuple[Any, list]] = [(key, [])]
            if host.stateful:  # the replica's state after the records before it died with the child: run them again
                kept[current] = (earlier_outputs + none, earlier_failures + [skipped])
                groups[current] = without(group, key, 0)
            else:  # no state: the outputs so far stand, the group goes on after the record
                kept[current] = (earlier_outputs + outputs + none, earlier_failures + failures + [skipped])
                groups[current] = without(group, key, [k for k, _r, _f in group.items].index(key))
            index = current
            continue
        earlier_outputs, _ = kept.pop(current, ([], []))
        results.append(GroupResult(group.instance, group.value, earlier_outputs + outputs, None, [], error=report))
        index = current + 1
    return TaskOutput(results, box_calls, time.perf_counter() - started)


def without(group: Group, key, start: int) -> Group:
    """``group`` from item ``start`` on, without the item of ``key``; when that item made its replica (its
    initialisers fired), the next one makes it, as in a run without that record."""
    items = group.items[start:]
    at = next(i for i, item in enumerate(items) if item[0] == key)
    fire = items[at][2]
    items = items[:at] + items[at + 1:]
    if fire and at < len(items):
        next_key, next_record, _ = items[at]
        items[at] = (next_key, next_record, True)
    return Group(group.instance, group.value, group.state, items)


def _report(host: ReplicaHost, key, record, box: isolation.BoxCall | None, how: str, job_error: str) -> ErrorReport:
    shown = isolation.shown(record, 300, record=True)
    detail = (f"the split's input record: {shown}\n"
              f"the Spark job had failed: {job_error}\n"
              "(the batch ran again with each task's groups in a child process of the Python worker, "
              "to find the box and the record)")
    if box is not None:
        return ErrorReport("SNetBoxError", f"box '{box.name}' ended its Python worker ({how}) on input "
                           f"({box.arguments})", isolation.box_span(host.graph, box.name), detail, key, crash=True)
    span = host.graph.nodes[host.split_id].span
    return ErrorReport("SNetRuntimeError", f"a Python worker of the split died ({how}) on its input record "
                       f"{shown}", span, detail, key, crash=True)


def run_payload(run_id: str, job_error: str, context: Callable[[], bytes], payload: bytes) -> bytes:
    """One task of the diagnosis job (the split job's payloads, see :mod:`snet.spark.tasks`)."""
    task = loads(payload)
    task.groups = [keyed(g) if g.bare else g for g in task.groups]
    return dumps(run_isolated(host_for(run_id, context, announcing=True), task, job_error))
