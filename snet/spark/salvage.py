"""A Spark-native run that failed: write the outputs made before the failure.

A Spark-native ``snet run`` (:mod:`snet.spark.native`) writes its sink with
one Spark write job, and Spark commits a write job's files only when every
task has succeeded.  So a box that raises on one record, or a record that
kills its Python worker, would leave the sink without the outputs that the
other records, and the records before it in its partition, had made.

After such a failure the driver runs the network once more as a *salvage*
write job (:func:`salvage`): the same source, partitioned and ordered as
for the run, mapped by :func:`salvage_partition`.  Each task runs its
partition's records through the network in a child process forked from the
Python worker, with the reference engine (one input record at a time, depth
first: the records are taken in the run's order, and every output of a
record is out before the next record is taken).  The task gives the child
its records a batch at a time as it reads them, and the child sends each
output over a pipe as it is made, so a task holds about one batch of each,
whatever the size of its partition.  When the child fails (a box raises) or
dies (``os._exit``, a signal), the task stops taking records and yields the
outputs it received, so the task itself succeeds and the job commits: the
sink holds every output made before the failure, in every partition, and
nothing from the failing record on in the partition where it failed.  The
run still ends with the failure's error and exit status 1; the error's last
line says how many records were written.

A box's Python error is the same on the salvage run as on the run (boxes
are functions of their arguments: a retried Spark task runs them again
too).  A failure that does not come from the network (an output value that
does not fit its column, an executor lost) is not salvaged: running again
would fail the same way or not say anything new.
"""

from __future__ import annotations

import functools
import logging
import os
import pickle
import signal

log = logging.getLogger("snet.spark")


def salvage(network, df, write, *, order: str | None, shipped_only: bool, schema) -> int | None:
    """Run the salvage write job (see the module docstring): ``write(DataFrame)`` writes the outputs (the sink's
    own writer, :func:`snet.spark.native.write_sink`); the count of records written, when the session can count
    them (None on Spark Connect, which has no accumulators)."""
    from snet.spark.dataframe import map_network
    from snet.spark.session import is_connect_session

    session = df.sparkSession
    counter = None if is_connect_session(session) else session.sparkContext.accumulator(0)

    def task(context: bytes, drop: tuple[str, ...], out_json: str, project: bool):
        return functools.partial(salvage_partition, context, drop, out_json, project, counter)

    # (the run's schema has every output column: a label outside it fails the salvage task as it failed the run)
    write(map_network(network, df, task, schema, order=order, shipped_only=shipped_only, project=False))
    return counter.value if counter is not None else None


# -- on the executors ----------------------------------------------------------

def _child(plan, in_fd: int, fd: int, parent: int) -> None:
    """The forked child: the records read from ``in_fd`` through the reference engine, each output sent as it
    is made; never returns (a Python error is sent as ``("fail", traceback)``:
    :func:`snet.spark.crash.child_main`)."""
    from snet.reference import ReferenceEngine
    from snet.spark.crash import _read_messages, child_main

    def records():
        for rows in _read_messages(in_fd):
            yield from rows

    def body(channel) -> None:
        for out in ReferenceEngine(plan).run(records()):
            channel.send("out", out)
        channel.send("done")

    child_main(fd, body, parent)


def _frames(batches, drop: tuple[str, ...]):
    """The partition's records, a pickled list of rows per Arrow batch, each framed as the child reads it."""
    from snet.spark.crash import _HEADER
    from snet.spark.dataframe import _rows

    for batch in batches:
        data = pickle.dumps(_rows(batch, drop), protocol=pickle.HIGHEST_PROTOCOL)
        yield _HEADER.pack(len(data)) + data


def salvage_partition(context: bytes, drop: tuple[str, ...], schema_json: str, project: bool, counter, batches):
    """The salvage job's ``mapInArrow`` function: the outputs this partition makes before a failure.

    The records go to the child as they are read, a batch at a time, and its
    outputs come back as they are made (one loop waits on both pipes), so
    a task holds about one input batch and one output batch, whatever the
    size of its partition.  After the child has ended, the rest of the
    partition is read and dropped, as a task's input must be.
    """
    import select

    from snet.spg.lower import lower
    from snet.spark.crash import _read_messages
    from snet.spark.dataframe import OUT_BATCH, _Writer

    ctx = pickle.loads(context)
    plan = lower(ctx.graph, ctx.bind())
    writer = _Writer(schema_json, project)
    in_read, in_write = os.pipe()
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
        os.close(in_write)
        os.close(read_fd)
        _child(plan, in_read, write_fd, parent)
    os.close(in_read)
    os.close(write_fd)
    os.set_blocking(in_write, False)
    frames = _frames(batches, drop)
    pending: list[dict] = []
    written = 0
    unsent = b""
    inputs_open, ended = True, False
    try:
        messages = _read_messages(read_fd)
        while True:
            if inputs_open and not unsent:
                unsent = next(frames, b"")
                if not unsent:
                    os.close(in_write)
                    inputs_open = False
            readable, writable, _ = select.select([read_fd], [in_write] if inputs_open else [], [])
            if writable:
                try:
                    unsent = unsent[os.write(in_write, unsent):]
                except BlockingIOError:
                    pass
                except OSError:  # the child has ended: it reads no more
                    os.close(in_write)
                    inputs_open, unsent = False, b""
            if not readable:
                continue
            message = next(messages, None)  # (the pipe is readable: this reads at least once)
            if message is None:  # the child has ended
                break
            if message[0] == "out":
                pending.append(message[1])
                if len(pending) >= OUT_BATCH:
                    yield writer.batch(pending)
                    written += len(pending)
                    pending = []
            elif message[0] == "fail":
                log.debug("the salvage run of a partition stopped: %s", message[1])
        ended = True
    finally:
        if inputs_open:
            os.close(in_write)
        os.close(read_fd)
        if not ended:  # the job stopped this task early: the child may be in a box call for a while yet
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    for _ in batches:  # the rest of the partition, unread by the child that ended
        pass
    if pending:
        yield writer.batch(pending)
        written += len(pending)
    if counter is not None:
        counter.add(written)
