"""``snet run NET.snet --spark MASTER --stream [--available-now] -i SOURCE -o SINK --checkpoint DIR``.

The network runs as a Spark Structured Streaming query: ``readStream`` over
the SOURCE folder (or glob) that files keep arriving in, the network mapped
over each micro-batch by the same task as a Spark-native batch run
(:func:`~snet.spark.whole.dataframe.spark_apply`, ``mapInArrow``), and
``writeStream`` of the outputs into the SINK folder, with DIR as the query's
checkpoint location.  Spark's file source and file sink give the
guarantee: each micro-batch's input files and its output files are recorded
in DIR (the source's offset log, the sink's ``_spark_metadata`` log), so a
query stopped or killed and started again with the same DIR goes on with
the files it has not processed, and each input record's outputs are in the
sink exactly once (as Spark and every reader that honours
``_spark_metadata`` see it).

``--available-now`` processes the files there now and stops (Spark's
``availableNow`` trigger); otherwise the query runs until Ctrl-C or SIGTERM,
which wait for the micro-batch in progress to be committed, then stop the
query (exit status 0).

A network whose records are independent runs each micro-batch as a batch
run's ``mapInArrow`` tasks.  A network whose state is kept per tag value (a
split ``X ! <t>`` or ``X !! <t>`` whose replicas hold a synchro-cell, a
stateful star or feedback loop: what a batch run partitions by the tag
column) keeps each tag value's state in Spark's state store
(``applyInPandasWithState``, :func:`keyed`): each micro-batch groups its
records by the tag, and a group's records run, in the order they arrived,
from the state the tag's earlier records left (restored and exported as a
checkpoint's, :func:`snet.checkpoint.api.run_with_state`), so a synchro-cell
pairs records that came in different micro-batches, and the state survives
restarts (it is in DIR) and lost executors.  A network whose state no tag
partitions is refused with the construct's position.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import Any, Callable, Iterator

import attrs

from snet.errors import SNetNotDistributable, SNetRuntimeError, SNetUsageError
from snet.options import RunOptions
from snet.spark.failures import interrupt_in, reason, task_error

log = logging.getLogger("snet.spark")

STOP_WAIT_S = 120.0  # how long a stop waits for the micro-batch in progress before it stops the query anyway
POLL_S = 0.2  # the driver's look at the query: its progress, whether it ended


@attrs.frozen
class StreamRequest:
    """A streaming run as the command line asks for it (``source``/``sink``: the Spark formats)."""

    source: str
    sink: str
    input: str
    output: str
    checkpoint: str
    options: RunOptions
    available_now: bool = False
    schema: str | None = None
    task_warnings: bool = True
    show_ui: Callable[[str], None] | None = None


@attrs.frozen
class StreamOutcome:
    """What a streaming run did: micro-batches, input rows and output rows over them (None: not counted, on
    Spark Connect), seconds, how it ended."""

    batches: int
    rows_in: int
    rows_out: int | None
    seconds: float
    stopped: bool  # by Ctrl-C or SIGTERM (else: --available-now found nothing more)


def stream_distribution(network):
    """How a stream partitions the network (:func:`snet.spark.whole.distribute.distribution`: ``key`` the tag
    column its state follows, None when its records are independent, ``where`` the split); a network whose state
    no key partitions is refused with the construct's position."""
    from snet.spark.whole.distribute import distribution

    try:
        return distribution(network.graph)
    except SNetNotDistributable as e:
        raise SNetNotDistributable(f"{e.message.split(';')[0]}; a stream (--stream) keeps state per tag value "
                                   f"only (a split's replicas)", e.span) from None


class StreamRun:
    """One streaming query, from the request to its end."""

    def __init__(self, network, request: StreamRequest):
        from snet.spark.cluster.session import run_settings

        self.network, self.request = network, request
        self.master, self.conf = run_settings(request.options, "--stream", ("snet.boxes",),
                                              "the sink is appended to; the checkpoint says what is in it")
        how = stream_distribution(network)
        self.key, self.split_at = how.key, how.where
        self.query: Any = None  # the StreamingQuery, once started
        self.counter: Any = None  # an accumulator of the output records (None on Spark Connect)
        self.rows_in: dict[int, int] = {}  # input rows by micro-batch, for the batches that had records

    def run(self) -> StreamOutcome:
        from snet.spark.cluster.session import watched_session

        request = self.request
        session = watched_session(self.master, self.conf, request.show_ui)
        started = time.perf_counter()
        self.query = self._start(session)
        stopped = False
        previous = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _interrupt)  # what service managers send: a stop like Ctrl-C's
        try:
            try:
                self._wait()
            except BaseException as e:  # Ctrl-C (SIGTERM), or an error py4j raised while it handled one
                if interrupt_in(e) is None:
                    raise
                stopped = True
                self._stop()
        finally:
            signal.signal(signal.SIGTERM, previous)
        error = self.query.exception()
        if error is not None:
            raise _stream_error(error)
        self._tally()
        rows_out = self.counter.value if self.counter is not None else None
        return StreamOutcome(len(self.rows_in), sum(self.rows_in.values()), rows_out,
                             time.perf_counter() - started, stopped)

    def _start(self, session):
        """Read the source's schema and a sample, then start the query."""
        from snet.spark.cluster.session import is_connect_session
        from snet.spark.cluster.shipping import shipped_only
        from snet.spark.whole.dataframe import checked_schema, spark_apply
        from snet.spark.whole.native import source_reader

        request, network = self.request, self.network
        try:
            files = source_reader(session.read, request.source).load(request.input)
            schema = files.schema
        except Exception as e:
            if interrupt_in(e) is not None:
                raise KeyboardInterrupt from None
            raise SNetUsageError(f"cannot read the input {request.input}: {reason(e)}; a stream takes its schema "
                                 f"from the files there when it starts, so put a first file there") from None
        if not schema.fields:
            raise SNetUsageError(f"the input {request.input} holds no {request.source} file yet; a stream takes its "
                                 "schema from the files there when it starts, so put a first file there")
        out = checked_schema(network, files, request.input, request.schema, self.key, self.split_at)
        stream = source_reader(session.readStream, request.source).schema(schema).load(request.input)
        self.counter = None if is_connect_session(session) else session.sparkContext.accumulator(0)
        shipped = shipped_only(self.conf.get("snet.boxes"))
        if self.key is None:
            outputs = spark_apply(network, stream, out, shipped_only=shipped, task_warnings=request.task_warnings,
                                  counter=self.counter, project=False)
        else:
            outputs = keyed(network, stream, out, self.key, shipped, self.counter)
        writer = outputs.writeStream.format(request.sink).outputMode("append") \
            .option("checkpointLocation", request.checkpoint).option("path", request.output)
        if request.sink == "csv":
            writer = writer.option("header", "true")
        if request.available_now:
            writer = writer.trigger(availableNow=True)
        log.info("info: streaming %s %s -> %s %s, checkpoint location %s%s", request.source, request.input,
                 request.sink, request.output, request.checkpoint,
                 " (available now: what is there, then stop)" if request.available_now else "")
        return writer.start()

    def _wait(self) -> None:
        """Until the query ends (``--available-now``) or Ctrl-C."""
        while True:
            time.sleep(POLL_S)  # (Ctrl-C lands here, not inside a py4j call)
            active = self.query.isActive
            self._tally()
            if not active:
                return

    def _tally(self) -> None:
        """Count (and log, ``-v``) each micro-batch with records once, as its progress report comes: Spark
        keeps only the last 100 reports, so they are taken while the query runs."""
        for progress in self.query.recentProgress:
            batch, rows = progress["batchId"], progress["numInputRows"]
            if rows and batch not in self.rows_in:
                self.rows_in[batch] = rows
                log.info("info: micro-batch %d: %d input rows", batch, rows)

    def _stop(self) -> None:
        """Let the micro-batch in progress commit, then stop the query."""
        log.warning("warning: stopping the stream after the micro-batch in progress (Ctrl-C again to force)")
        deadline = time.monotonic() + STOP_WAIT_S
        try:
            while self.query.isActive and self.query.status["isTriggerActive"] and time.monotonic() < deadline:
                time.sleep(POLL_S)
        finally:
            self.query.stop()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _stream_error(error) -> SNetRuntimeError:
    """The query's failure as the error of a run (the snet error a task raised, when there is one)."""
    failed = Exception(str(error))
    found = task_error(failed)
    found.__cause__ = None
    return found


# The order of a keyed stream's records within a micro-batch: the file, the block in it, the row (docs/spark.md).
ORDER = ("__snet_file", "__snet_block", "__snet_row")


def spark_apply_stream(network, df, schema=None):
    """``Network.spark_apply`` of a streaming DataFrame: a keyed network's state in Spark's state store."""
    from snet.spark.whole.dataframe import check_columns, output_schema, spark_apply

    key = stream_distribution(network).key
    if key is None:
        return spark_apply(network, df, schema)
    check_columns(df.schema)
    return keyed(network, df, output_schema(network.graph, df.schema, schema, boxes=network.boxes), key, False)


def keyed(network, stream, out, key: str, shipped: bool, counter=None):
    """The outputs of a keyed network over ``stream``: each tag value's state in Spark's state store."""
    import functools
    import uuid

    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    from snet.spark.cluster.shipping import shipped_context

    context = shipped_context(stream.sparkSession, network.graph, 0, network.boxes, shipped_only=shipped)
    try:  # a file source's rows: by file and block
        located = stream.select("*", F.col("_metadata.file_path").alias(ORDER[0]),
                                F.col("_metadata.file_block_start").alias(ORDER[1]))
    except Exception:  # (AnalysisException) another source: in the order each task reads them
        located = stream.select("*", F.lit("").alias(ORDER[0]), F.lit(0).cast("long").alias(ORDER[1]))
    numbered = StructType(located.schema.fields + [StructField(ORDER[2], LongType(), False)])
    ordered = located.mapInArrow(number_rows, numbered)  # (monotonically_increasing_id is no streaming expression)
    group = functools.partial(run_group, uuid.uuid4().hex, context, stream.schema.json(), out.json(),
                              counter)
    return ordered.groupBy(F.col(f"`{key}`")).applyInPandasWithState(group, out, "state binary", "append",
                                                                       "NoTimeout")


def number_rows(batches) -> Iterator:
    """A task's rows numbered in the order it reads them: with the file and the block, their order in the
    source."""
    import pyarrow as pa

    n = 0
    for batch in batches:
        yield pa.RecordBatch.from_arrays([*batch.columns, pa.array(range(n, n + batch.num_rows), pa.int64())],
                                         names=[*batch.schema.names, ORDER[2]])
        n += batch.num_rows


def run_group(run_id: str, context: bytes, in_json: str, out_json: str, counter, key, frames, state) -> Iterator:
    """One tag value's records of one micro-batch, run from its saved state; the state saved again."""
    import json
    import math
    import pickle

    import pandas as pd

    from snet.checkpoint.api import run_with_state
    from snet.spark.tasks import plan_for, run_plan
    from snet.spark.whole.dataframe import Writer

    integral = {f["name"] for f in json.loads(in_json)["fields"]
                if f["type"] in ("byte", "short", "integer", "long")}
    frame = pd.concat(list(frames), ignore_index=True).sort_values(list(ORDER), kind="stable")
    records = []
    for row in frame.drop(columns=list(ORDER)).to_dict("records"):
        record = {}
        for label, value in row.items():
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue  # an absent label
            record[label] = int(value) if label in integral and isinstance(value, float) else value
        records.append(record)
    plan = plan_for(run_id, context)
    saved = pickle.loads(state.get[0]) if state.exists else None
    outputs, after = run_with_state(lambda gate: run_plan(plan, gate), records, saved)
    state.update((pickle.dumps(after, protocol=pickle.HIGHEST_PROTOCOL),))
    if outputs:
        yield Writer(out_json, False).batch(outputs).to_pandas()
    if counter is not None:
        counter.add(len(outputs))
