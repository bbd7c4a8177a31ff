"""A Python worker that dies in a whole-network task: find the box and the record.

A Spark-native ``snet run`` (:mod:`snet.spark.native`) runs the whole
network inside ``mapInArrow`` tasks.  A box that calls ``os._exit``,
segfaults in an extension or is killed for memory takes the task's Python
worker with it; Spark retries the task, then fails the write job with
"Python worker exited unexpectedly (crashed)" among a page of JVM frames,
naming neither box nor record.

So when such a job fails and the text looks like a dead worker
(:func:`snet.spark.crash.looks_like_crash`), the driver runs the same
partitions once more as a *diagnosis* job (:func:`diagnose`): the
DataFrame prepared as for the run (the same partitioning by the split tag,
the same order within each partition), mapped by
:func:`diagnose_partition`.  Each task reads its partition's records, then
runs them through the network in a child process forked from the Python
worker, with the reference engine (one input record at a time, depth
first, so the record last taken is the one running) and box functions that
announce each call with its arguments over a pipe
(:func:`snet.spark.crash._announcing`).  The outputs are thrown away.
When the child dies, the worker, still alive, returns one row: the box, its
arguments, the record and how the child ended.  The driver reports the
first such row as the run's error (exit status 1):

    net.snet:2:7: error: box 'f' ended its Python worker (exit status 3) on input (x=777)

When no child dies (the worker was killed from outside), the original
failure is reported.  Either way the failed job wrote nothing (Spark
commits a write job's files only when every task has succeeded); the
outputs made before the failure are written afterwards by the salvage job
of :mod:`snet.spark.salvage`.
"""

from __future__ import annotations

import functools
import logging
import os
import pickle

log = logging.getLogger("snet.spark")

DIAGNOSIS_SCHEMA = "box string, arguments string, record string, how string"


def diagnose(network, df, *, order: str | None = None, shipped_only: bool = False, job_error: str = ""):
    """The :class:`~snet.errors.SNetRuntimeError` naming the box and record that kill a Python worker when
    the network runs over ``df`` as :func:`snet.spark.dataframe.spark_apply` runs it; None when no task's
    child dies."""
    from snet.spark.crash import crash_summary
    from snet.spark.dataframe import prepare
    from snet.spark.runner import ship
    from snet.spark.session import is_connect_session
    from snet.spark.shipping import dump_context, make_context

    mapped, _how, drop = prepare(network, df, None, order)
    if order is not None:
        drop = (order,)
    session = df.sparkSession
    context = make_context(network.graph, 0, network.boxes, shipped_only=shipped_only)
    ship(session, context, is_connect_session(session))
    function = functools.partial(diagnose_partition, dump_context(context), drop)
    rows = mapped.mapInArrow(function, DIAGNOSIS_SCHEMA).limit(1).collect()
    if not rows:
        return None
    return crash_error(network.graph, rows[0], crash_summary(job_error))


def crash_error(graph, row, job_error: str):
    """The run's error for a diagnosis row (box, arguments, record, how)."""
    from snet.errors import SNetBoxError, SNetRuntimeError
    from snet.spg.nodes import BoxNode

    detail = (f"the input record: {row['record']}\n"
              f"the Spark job had failed: {job_error}\n"
              "(the partition ran again with its records in a child process of the Python worker, "
              "to find the box and the record)")
    if row["box"]:
        span = next((n.span for n in graph.nodes if isinstance(n, BoxNode) and n.name == row["box"]), None)
        return SNetBoxError(f"box '{row['box']}' ended its Python worker ({row['how']}) on input "
                            f"({row['arguments']})", span, detail)
    return SNetRuntimeError(f"a Python worker died ({row['how']}) on the input record {row['record']}",
                            None, detail)


# -- on the executors ----------------------------------------------------------

def _child(plan, records: list, fd: int, parent: int) -> None:
    """The forked child: the records through the reference engine, saying which one runs; never returns.

    A Python error here is not what killed the worker: no crash is found in this partition."""
    from snet.reference import ReferenceEngine
    from snet.spark.crash import child_main

    def body(channel) -> None:
        def fed():
            for index, record in enumerate(records):
                channel.send("item", index)
                yield record

        for _ in ReferenceEngine(plan).run(fed()):
            pass
        channel.send("done")

    child_main(fd, body, parent)


def diagnose_partition(context: bytes, drop: tuple[str, ...], batches):
    """The diagnosis job's ``mapInArrow`` function: a row when the partition's child dies, else none."""
    import pyarrow as pa

    from snet.spg.lower import lower
    from snet.recordio.jsonl import format_record_jsonl
    from snet.spark.crash import _announcing, _how, _read_messages, _shown
    from snet.spark.dataframe import _rows
    from snet.spg.nodes import BoxNode

    records = [record for batch in batches for record in _rows(batch, drop)]
    ctx = pickle.loads(context)
    labels = {n.name: n.arguments for n in ctx.graph.nodes if isinstance(n, BoxNode)}
    table = {name: _announcing(name, labels.get(name, ()), f) for name, f in ctx.bind().items()}
    plan = lower(ctx.graph, table)
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
        os.close(read_fd)
        _child(plan, records, write_fd, parent)
    os.close(write_fd)
    index, box, finished = None, None, False
    try:
        for message in _read_messages(read_fd):
            if message[0] == "item":
                index, box = message[1], None
            elif message[0] == "box":
                box = (message[1], message[2])
            elif message[0] in ("done", "fail"):
                finished = True
    finally:
        os.close(read_fd)
        _, status = os.waitpid(pid, 0)
    if finished or index is None:
        return
    try:
        shown = format_record_jsonl(records[index])
    except Exception:
        shown = _shown(records[index], 300)
    if len(shown) > 300:
        shown = shown[:297] + "..."
    columns = {"box": box[0] if box else None, "arguments": box[1] if box else None, "record": shown,
               "how": _how(status)}
    yield pa.RecordBatch.from_pydict({k: [v] for k, v in columns.items()},
                                     schema=pa.schema([(k, pa.string()) for k in columns]))
