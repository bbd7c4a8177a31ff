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

Only networks whose records are independent run as a stream: a network that
keeps state across records (a split whose replicas hold a synchro-cell, a
stateful star or feedback loop) is refused with the construct's position,
since a micro-batch's tasks start with fresh state (docs/spark.md).
"""

from __future__ import annotations

import logging
import signal
import time
from typing import Any, Callable

import attrs

from snet.errors import SNetNotDistributable, SNetRuntimeError, SNetUsageError
from snet.options import RunOptions
from snet.spark.failures import interrupted, reason, task_error

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


def check_streamable(network) -> None:
    """Refuse a network whose records are not independent: its state would not outlive a micro-batch."""
    from snet.spark.whole.distribute import distribution

    try:
        how = distribution(network.graph)
    except SNetNotDistributable as e:
        raise SNetUsageError(f"--stream: {e.message.split(';')[0]}; a stream's micro-batches start with fresh "
                             f"state, so only networks whose records are independent run as a stream",
                             e.span) from None
    if how.key is not None:
        raise SNetUsageError(f"--stream: the split at {how.where} keeps state per {how.key} across records; a "
                             f"stream's micro-batches start with fresh state, so per-tag state in a stream is "
                             f"not supported yet (run the folder as a batch, without --stream)")


class StreamRun:
    """One streaming query, from the request to its end."""

    def __init__(self, network, request: StreamRequest):
        if not request.options.spark_master:
            raise SNetUsageError("--stream runs the network on Spark: give --spark MASTER")
        self.network, self.request = network, request
        self.master: str = request.options.spark_master
        self.conf = dict(request.options.spark_conf)
        ignored = sorted(k for k in self.conf if k.startswith("snet.") and k != "snet.boxes")
        if ignored:
            raise SNetUsageError(f"--spark-conf {', '.join(ignored)} does not apply to --stream: the snet key it "
                                 "reads is snet.boxes (the sink is appended to; the checkpoint says what is in it)")
        check_streamable(network)
        self.query: Any = None  # the StreamingQuery, once started
        self.counter: Any = None  # an accumulator of the output records (None on Spark Connect)

    def run(self) -> StreamOutcome:
        from snet.spark.cluster.session import start_session, ui_address

        request = self.request
        session = start_session(self.master, self.conf)
        if request.show_ui is not None:
            address = ui_address(session)
            if address:
                request.show_ui(address)
        started = time.perf_counter()
        self.query = self._start(session)
        stopped = False
        previous = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _interrupt)  # what service managers send: a stop like Ctrl-C's
        try:
            try:
                self._wait()
            except KeyboardInterrupt:
                stopped = True
                self._stop()
            except Exception as e:
                if not interrupted(e):
                    raise
                stopped = True
                self._stop()
        finally:
            signal.signal(signal.SIGTERM, previous)
        error = self.query.exception()
        if error is not None:
            raise _stream_error(error)
        batches, rows_in = _totals(self.query.recentProgress)
        rows_out = self.counter.value if self.counter is not None else None
        return StreamOutcome(batches, rows_in, rows_out, time.perf_counter() - started, stopped)

    def _start(self, session):
        """Read the source's schema and a sample, then start the query."""
        from snet.spark.cluster.session import is_connect_session
        from snet.spark.cluster.shipping import shipped_only
        from snet.spark.whole.dataframe import check_columns, output_schema, spark_apply
        from snet.spark.whole.schema import check_source, driver_sample

        request, network = self.request, self.network
        try:
            files = _reader(session.read, request.source).load(request.input)
            schema = files.schema
        except Exception as e:
            if interrupted(e):
                raise KeyboardInterrupt from None
            raise SNetUsageError(f"cannot read the input {request.input}: {reason(e)}; a stream takes its schema "
                                 f"from the files there when it starts, so put a first file there") from None
        if not schema.fields:
            raise SNetUsageError(f"the input {request.input} holds no {request.source} file yet; a stream takes its "
                                 "schema from the files there when it starts, so put a first file there")
        check_columns(schema)
        check_source(network.graph, [f.name for f in schema.fields], request.input)
        out = output_schema(network.graph, schema, None, cli=True, boxes=network.boxes,
                            sample=driver_sample(network, files), override=request.schema)
        stream = _reader(session.readStream, request.source).schema(schema).load(request.input)
        self.counter = None if is_connect_session(session) else session.sparkContext.accumulator(0)
        outputs = spark_apply(network, stream, out, shipped_only=shipped_only(self.conf.get("snet.boxes")),
                              task_warnings=request.task_warnings, counter=self.counter, project=False)
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
        """Until the query ends (``--available-now``) or Ctrl-C; each micro-batch logged (``-v``)."""
        seen = -1
        while True:
            time.sleep(POLL_S)  # (Ctrl-C lands here, not inside a py4j call)
            active = self.query.isActive
            progress = self.query.lastProgress
            if progress is not None and progress["batchId"] != seen:
                seen = progress["batchId"]
                log.info("info: micro-batch %d: %d input rows", seen, progress["numInputRows"])
            if not active:
                return

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


def _reader(reader, fmt: str):
    reader = reader.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    return reader


def _totals(progress: list) -> tuple[int, int]:
    """(micro-batches, input rows) over the query's progress reports (Spark keeps the last 100)."""
    batches = {p["batchId"]: p for p in progress if p["numInputRows"] or p["batchId"] == 0}
    return len(batches), sum(p["numInputRows"] for p in batches.values())


def _stream_error(error) -> SNetRuntimeError:
    """The query's failure as the error of a run (the snet error a task raised, when there is one)."""
    failed = Exception(str(error))
    found = task_error(failed)
    found.__cause__ = None
    return found
