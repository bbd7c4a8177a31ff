"""A Python worker that dies in a whole-network task: find the box and the record.

The driver runs the partitions again as a *diagnosis* job (:func:`diagnose`)
whose tasks run their records in forked children with boxes that announce
their calls; a dead child gives one row (box, arguments, record, how), the
run's error (:func:`crash_error`).
"""

from __future__ import annotations

import functools

from snet import isolation
from snet.spark.tasks import dumps, plan_for, rows, run_plan

DIAGNOSIS_SCHEMA = "box string, arguments string, record string, how string"


def diagnose(network, df, *, order: str | None = None, shipped_only: bool = False, job_error: str = ""):
    """The :class:`~snet.errors.SNetRuntimeError` naming the box and record that kill a Python worker when
    the network runs over ``df`` as :func:`snet.spark.whole.dataframe.spark_apply` runs it; None when no
    task's child dies."""
    import uuid

    from snet.spark.cluster.shipping import shipped_context
    from snet.spark.failures import crash_summary
    from snet.spark.whole.dataframe import prepare

    mapped, _how, drop = prepare(network, df, None, order)
    context = shipped_context(df.sparkSession, network.graph, 0, network.boxes, shipped_only=shipped_only)
    function = functools.partial(diagnose_partition, uuid.uuid4().hex, context, drop)
    found = mapped.mapInArrow(function, DIAGNOSIS_SCHEMA).limit(1).collect()
    return crash_error(network.graph, found[0], crash_summary(job_error)) if found else None


def crash_error(graph, row, job_error: str):
    """The run's error for a diagnosis row (box, arguments, record, how)."""
    from snet.errors import SNetBoxError, SNetRuntimeError

    detail = (f"the input record: {row['record']}\n"
              f"the Spark job had failed: {job_error}\n"
              "(the partition ran again with its records in a child process of the Python worker, "
              "to find the box and the record)")
    if row["box"]:
        return SNetBoxError(f"box '{row['box']}' ended its Python worker ({row['how']}) on input "
                            f"({row['arguments']})", isolation.box_span(graph, row["box"]), detail)
    return SNetRuntimeError(f"a Python worker died ({row['how']}) on the input record {row['record']}",
                            None, detail)


def diagnose_partition(run_id: str, context: bytes, drop: tuple[str, ...], batches):
    """The diagnosis job's ``mapInArrow`` function: a row when the partition's child dies, else none."""
    import pyarrow as pa

    records = [record for batch in batches for record in rows(batch, drop)]
    plan = plan_for(run_id, context, isolation.announcing_table)

    def body() -> None:  # a Python error here is not what killed the worker: no crash in this partition
        def fed():
            for index, record in enumerate(records):
                isolation.send(isolation.Item(index))
                yield record

        for _ in run_plan(plan, fed(), "reference"):
            pass
        isolation.send(isolation.Done())

    child = isolation.Child(body, dumps=dumps)
    index, box, finished = None, None, False
    try:
        for message in child.messages():
            if isinstance(message, isolation.Item):
                index, box = message.key, None
            elif isinstance(message, isolation.BoxCall):
                box = message
            elif isinstance(message, (isolation.Done, isolation.Failed)):
                finished = True
    finally:
        status = child.end()
    if finished or index is None:
        return
    columns = {"box": box.name if box else None, "arguments": box.arguments if box else None,
               "record": isolation.shown(records[index], 300, record=True), "how": isolation.how(status)}
    yield pa.RecordBatch.from_pydict({k: [v] for k, v in columns.items()},
                                     schema=pa.schema([(k, pa.string()) for k in columns]))
