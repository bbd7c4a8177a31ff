"""A Spark-native run that failed: write the outputs made before the failure.

Spark commits a write job only when every task succeeded, so the driver runs
the network again as a *salvage* write job (:func:`salvage`) whose tasks run
their partitions in forked children (:class:`snet.isolation.Child`), records
fed as read, outputs yielded as made, stopping at the failure: the job
commits every output made before it.
"""

from __future__ import annotations

import functools
import logging
import os
import pickle
import select

from snet import isolation

log = logging.getLogger("snet.spark")


def salvage(network, df, write, *, order: str | None, shipped_only: bool, schema) -> int | None:
    """Run the salvage write job: ``write(DataFrame)`` writes the outputs (the sink's own writer); the count of
    records written, when the session can count them (None on Spark Connect, which has no accumulators)."""
    from snet.spark.cluster.session import is_connect_session
    from snet.spark.whole.dataframe import map_network

    session = df.sparkSession
    counter = None if is_connect_session(session) else session.sparkContext.accumulator(0)

    def task(context: bytes, drop: tuple[str, ...], out_json: str, project: bool):
        return functools.partial(salvage_partition, context, drop, out_json, project, counter)

    # (the run's schema has every output column: a label outside it fails the salvage task as it failed the run)
    write(map_network(network, df, task, schema, order=order, shipped_only=shipped_only, project=False))
    return counter.value if counter is not None else None


def _frames(batches, drop: tuple[str, ...]):
    """The partition's records, a framed list of rows per Arrow batch, as the child reads them."""
    from snet.spark.tasks import rows

    for batch in batches:
        yield isolation.frame(rows(batch, drop))


def salvage_partition(context: bytes, drop: tuple[str, ...], schema_json: str, project: bool, counter, batches):
    """The salvage job's ``mapInArrow`` function: the outputs this partition makes before a failure (one loop
    waits on both pipes; after the child has ended, the rest of the partition is read and dropped)."""
    from snet.spg.lower import lower
    from snet.spark.tasks import dumps, run_plan
    from snet.spark.whole.dataframe import OUT_BATCH, Writer

    ctx = pickle.loads(context)
    plan = lower(ctx.graph, ctx.bind())
    writer = Writer(schema_json, project)

    def body(in_fd: int) -> None:  # a Python error is sent as isolation.Failed
        def records():
            for found in isolation.messages(in_fd):
                yield from found

        for out in run_plan(plan, records(), "reference"):
            isolation.send(isolation.Output(out))
        isolation.send(isolation.Done())

    child = isolation.Child(body, feed=True, dumps=dumps)
    os.set_blocking(child.feed_fd, False)
    frames = _frames(batches, drop)
    pending: list[dict] = []
    written = 0
    unsent = b""
    ended = False
    try:
        messages = child.messages()
        while True:
            if child.feed_fd >= 0 and not unsent:
                unsent = next(frames, b"")
                if not unsent:
                    child.close_feed()
            feeding = [child.feed_fd] if child.feed_fd >= 0 else []
            readable, writable, _ = select.select([child.read_fd], feeding, [])
            if writable:
                try:
                    unsent = unsent[os.write(child.feed_fd, unsent):]
                except BlockingIOError:
                    pass
                except OSError:  # the child has ended: it reads no more
                    child.close_feed()
                    unsent = b""
            if not readable:
                continue
            message = next(messages, None)  # (the pipe is readable: this reads at least once)
            if message is None:  # the child has ended
                break
            if isinstance(message, isolation.Output):
                pending.append(message.record)
                if len(pending) >= OUT_BATCH:
                    yield writer.batch(pending)
                    written += len(pending)
                    pending = []
            elif isinstance(message, isolation.Failed):
                log.debug("the salvage run of a partition stopped: %s", message.traceback)
        ended = True
    finally:
        child.end(kill=not ended)  # the job stopped this task early: the child may be in a long box call
    for _ in batches:  # the rest of the partition, unread by the child that ended
        pass
    if pending:
        yield writer.batch(pending)
        written += len(pending)
    if counter is not None:
        counter.add(written)
