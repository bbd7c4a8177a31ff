"""``snet run NET.snet --spark MASTER -i SOURCE -o SINK`` with a Spark source and sink (a Spark-native run).

``spark.read``, :func:`~snet.spark.whole.dataframe.spark_apply`, ``df.write``:
records never pass through the driver, unless the network cannot be
partitioned and ``--spark-driver-fallback`` is given (:func:`driver_run`).
The command line gives a :class:`NativeRequest` and reports the
:class:`NativeOutcome` (:mod:`snet.commands.sparknative`).  After a failed
job a dead worker is diagnosed (:mod:`~snet.spark.whole.taskcrash`), the
outputs made before the failure written (:mod:`~snet.spark.whole.salvage`).
"""

from __future__ import annotations

import copy
import logging
import os
import re
import time
from typing import Callable

import attrs

from snet.errors import SNetNotDistributable, SNetRuntimeError, SNetUsageError
from snet.options import RunOptions
from snet.records import format_labels
from snet.spark.failures import analysis_error, interrupt_in, looks_like_crash, reason, task_error

log = logging.getLogger("snet.spark")

MODES = ("error", "errorifexists", "overwrite", "append", "ignore")
ORDER = "__snet_file_order"  # the input sequence of a keyed network: file path, block start, row


def local_path(path: str) -> str | None:
    """The local file system path of ``path``, a plain path or a ``file:`` URI; None for another URI
    (``hdfs:``, ``s3a:`` ...), which only Spark can look at."""
    if path.startswith("file:"):
        rest = path[len("file:"):]
        if rest.startswith("//"):
            host, _, rest = rest[2:].partition("/")
            if host not in ("", "localhost"):
                return None
            rest = "/" + rest
        return rest
    if re.match(r"[A-Za-z][\w+.-]*:", path):
        return None
    return path


def in_file_order(df):
    """``(df with a column of its records' order in the source, the column)``: files by path, rows in file
    order, which Spark's own order is not (it packs files largest first); (df, None) without file metadata."""
    from pyspark.sql import functions as F

    if "_metadata" in df.columns or ORDER in df.columns:
        return df, None
    try:
        column = F.struct(F.col("_metadata.file_path"), F.col("_metadata.file_block_start"),
                          F.monotonically_increasing_id())
        return df.select("*", column.alias(ORDER)), ORDER
    except Exception as e:  # a source that is not a file source has no _metadata
        log.debug("no file order for the source: %s", e)
        return df, None


def source_reader(reader, fmt: str):
    """``reader`` (``session.read`` or ``session.readStream``) for the source format ``fmt``: a CSV file's
    first line names its columns, whose types are inferred."""
    reader = reader.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    return reader


SUCCESS = "_SUCCESS"  # the marker Hadoop's committer leaves in a folder whose write job succeeded
MARK_SUCCESS = "mapreduce.fileoutputcommitter.marksuccessfuljobs"


def write_sink(df, fmt: str, path: str, mode: str, complete: bool = True) -> None:
    """Write the sink; ``complete=False`` for the outputs of a failed run: no ``_SUCCESS``, which readers take
    for a complete output."""
    writer = df.write.format(fmt).mode(mode)
    if fmt == "csv":
        writer = writer.option("header", "true")
    if not complete:  # (a write option reaches the job's Hadoop configuration, and so its committer)
        writer = writer.option(MARK_SUCCESS, "false")
    writer.save(path)


def unmark(session, path: str) -> None:
    """Remove the ``_SUCCESS`` marker from the sink of a failed run (an earlier run's, under
    ``snet.mode=append``): a folder with the outputs made before a failure is no complete output."""
    local = local_path(path)
    if local is not None:
        for name in (SUCCESS, f".{SUCCESS}.crc"):
            try:
                os.remove(os.path.join(local, name))
            except FileNotFoundError:
                pass
            except OSError as e:
                log.warning("warning: could not remove %s from %s after the failure: %s", name, path, e)
        return
    try:  # another file system (hdfs:, s3a: ...): Hadoop's, through the JVM
        jvm = session.sparkContext._jvm
        marker = jvm.org.apache.hadoop.fs.Path(path.rstrip("/") + "/" + SUCCESS)
        marker.getFileSystem(session.sparkContext._jsc.hadoopConfiguration()).delete(marker, False)
    except Exception as e:  # Spark Connect has no JVM here: the salvage job wrote no marker, an earlier may stay
        log.debug("could not remove %s from %s: %s", SUCCESS, path, e)


@attrs.frozen
class NativeRequest:
    """A Spark-native run as the command line asks for it: ``source``/``sink`` the Spark formats of
    ``input``/``output``, ``schema`` ``--spark-schema``; ``watched``: the Spark UI on, ``show_ui(address)`` told."""

    source: str
    sink: str
    input: str
    output: str
    options: RunOptions
    schema: str | None = None
    driver_fallback: bool = False
    task_warnings: bool = True
    watched: bool = False
    show_ui: Callable[[str], None] | None = None


@attrs.frozen
class NativeOutcome:
    """What a Spark-native run did: records written (None: not counted), seconds, its error (None: done)."""

    fallback: bool
    written: int | None
    seconds: float
    error: SNetRuntimeError | None = None

    @property
    def where(self) -> str:
        return "on the driver" if self.fallback else "inside Spark tasks"


class NativeRun:
    """One Spark-native run: made, it has checked the settings and the partitioning (``mode``, ``fallback``)."""

    def __init__(self, network, request: NativeRequest):
        from snet.spark.cluster.session import run_settings
        from snet.spark.cluster.shipping import shipped_only
        from snet.spark.whole.distribute import distribution

        self.network, self.request = network, request
        self.master, self.conf = run_settings(request.options, f"a Spark-native run ({request.source} in, "
                                              f"{request.sink} out)", ("snet.mode", "snet.boxes"),
                                              "the tasks follow the source's partitions")
        self.mode = self.conf.pop("snet.mode", "errorifexists")
        if self.mode not in MODES:
            raise SNetUsageError(f"snet.mode must be one of {', '.join(MODES)}, not '{self.mode}'")
        self.shipped = shipped_only(self.conf.get("snet.boxes"))
        self.key, self.split_at, self.fallback = None, "", False
        try:
            how = distribution(network.graph)
            self.key, self.split_at = how.key, how.where
        except SNetNotDistributable as e:
            if not request.driver_fallback:
                raise SNetNotDistributable(e.message.replace("run it on the driver instead", "give "
                                           "--spark-driver-fallback to run it on the driver"), e.span) from None
            self.fallback = True
        self.df, self.order, self.schema = None, None, None
        self.written: int | None = 0  # records written (None: not counted, as on Spark Connect)

    def run(self) -> NativeOutcome:
        """Run it: a run-time failure is the outcome's error; a usage error and Ctrl-C are raised."""
        from snet.spark.cluster.jobs import RunJobs
        from snet.spark.cluster.session import watched_session

        request = self.request
        if request.watched and "spark.ui.enabled" not in self.conf:  # the Spark UI, for a person watching
            self.conf["spark.ui.enabled"] = "true"
        self.session = watched_session(self.master, self.conf, request.show_ui if request.watched else None)
        self.sink_existed = _exists(request.output)
        started = time.perf_counter()
        self.jobs = RunJobs(self.session)
        self.jobs.add()
        try:
            failed = self._attempt()
            error = self._failed(failed) if failed is not None else None
        finally:
            self.jobs.remove()
        if error is not None:
            unmark(self.session, request.output)
        return NativeOutcome(self.fallback, self.written, time.perf_counter() - started, error)

    def _attempt(self) -> Exception | None:
        """Read, run and write; the Spark failure to look into, None when the run completed."""
        request = self.request
        try:
            self._write()
        except KeyboardInterrupt:
            self._stop()
            raise
        except SNetUsageError:
            raise
        except SNetRuntimeError:  # the driver fallback's network failed: its outputs before it are written
            unmark(self.session, request.output)
            raise
        except Exception as e:
            if interrupt_in(e) is not None:  # Ctrl-C in a py4j call, which py4j turned into an error of its own
                self._stop()
                raise KeyboardInterrupt from None
            # (the driver fallback runs the network before it writes: a refused write there is a run-time failure)
            usage = analysis_error(e, request.input, request.output) if self.df is None or not self.fallback \
                else None
            if usage is None and self.df is None:  # the source's schema could not be read: never started
                usage = SNetUsageError(f"cannot read the input {request.input}: {reason(e)}")
            if usage is not None:
                raise usage from None
            return e
        return None

    def _write(self) -> None:
        from snet.spark.cluster.session import is_connect_session
        from snet.spark.whole.dataframe import checked_schema, spark_apply

        request, network, session = self.request, self.network, self.session
        df = self.df = source_reader(session.read, request.source).load(request.input)
        # every output column, typed before the job (--spark-schema sets some): a label no column holds fails
        self.schema = checked_schema(network, df, request.input, request.schema, self.key, self.split_at)
        if self.fallback:
            log.warning("warning: the network cannot be partitioned over Spark tasks; it runs on the driver "
                        "(--spark-driver-fallback), every record passing through it")
            self.written, failure = driver_run(network, session, df, request.sink, request.output,
                                               request.options, self.mode, self.schema)
            if failure is not None:
                raise failure
            return
        if self.key is not None:
            self.df, self.order = in_file_order(df)
        counter = None if is_connect_session(session) else session.sparkContext.accumulator(0)
        out = spark_apply(network, self.df, self.schema, order=self.order, shipped_only=self.shipped,
                          task_warnings=request.task_warnings, counter=counter, project=False)
        write_sink(out, request.sink, request.output, self.mode)
        self.written = counter.value if counter is not None else None

    def _failed(self, failed: Exception) -> SNetRuntimeError:
        """The failed run's error, after the crash diagnosis and the salvage job (outside the except clause: a
        Spark error as the context of what they raise is formatted by py4j when Ctrl-C interrupts them, a hang)."""
        try:
            text = str(failed)
            error = task_error(failed)
            crashed = looks_like_crash(text)
            ran = self.df is not None and not self.fallback
            if ran and crashed:
                error = self._diagnosed(text) or error
            if not self.sink_existed:
                _remove_if_empty(self.request.output)
            if ran and (crashed or ("snet.errors.SNet" in text and not error.message.startswith("spark_apply:"))):
                error = with_note(error, self._salvaged())
                if not self.sink_existed:
                    _remove_if_empty(self.request.output)
        except KeyboardInterrupt:  # during the crash diagnosis or the salvage job
            self._stop()
            raise
        error.__cause__ = failed
        return error

    def _diagnosed(self, text: str) -> SNetRuntimeError | None:
        """The box and record that killed a Python worker (:mod:`snet.spark.whole.taskcrash`), or None."""
        from snet.spark.whole.taskcrash import diagnose

        log.warning("warning: a Python worker died; running the partitions again to find the box and the record")
        try:
            return diagnose(self.network, self.df, order=self.order, shipped_only=self.shipped, job_error=text)
        except Exception as e:  # the diagnosis failed too: the original error stands
            if interrupt_in(e) is not None:
                raise KeyboardInterrupt from None
            log.debug("the crash diagnosis failed: %s", e)
            return None

    def _salvaged(self) -> str:
        """Write the outputs made before the failure (:mod:`snet.spark.whole.salvage`); the line that says what
        was written."""
        from snet.spark.whole.salvage import salvage

        path = self.request.output
        log.warning("warning: the run failed; running the partitions again to write the outputs made before the "
                    "failure")
        try:
            count = salvage(self.network, self.df,
                            lambda out: write_sink(out, self.request.sink, path, self.mode, complete=False),
                            order=self.order, shipped_only=self.shipped, schema=self.schema)
            self.written = count  # (None on Spark Connect: not counted)
        except Exception as e:  # the failure stands; say that nothing was written
            if interrupt_in(e) is not None:
                raise KeyboardInterrupt from None
            log.debug("the salvage run failed: %s", e)
            why = task_error(e)  # the snet error raised in a task, when there is one, else Spark's first line
            return f"nothing was written to {path} (the run to write the outputs made before the failure failed: " \
                   f"{why.message[:500]})"
        return f"the outputs made before the failure were written to {path}" if count is None \
            else _written(count, path)

    def _stop(self) -> None:
        """Ctrl-C: cancel the run's jobs; remove the output folder a cancelled write left empty and a local
        ``_SUCCESS`` (no py4j call now: one may be the interrupted one)."""
        self.jobs.cancel(wait=5.0)
        output = self.request.output
        if local_path(output) is not None:
            unmark(None, output)
        if not self.sink_existed:
            _remove_if_empty(output)


def with_note(error: SNetRuntimeError, note: str) -> SNetRuntimeError:
    """A copy of ``error`` whose detail ends with ``note``."""
    noted = copy.copy(error)
    noted.detail = f"{error.detail.rstrip()}\n{note}" if error.detail else note
    return noted


def _written(count: int, path: str) -> str:
    records, verb = ("output record", "was") if count == 1 else ("output records", "were")
    return f"{count} {records} made before the failure {verb} written to {path}"


def _exists(path: str) -> bool:
    local = local_path(path)
    return local is None or os.path.exists(local)  # another URI: taken as there, never removed


def _remove_if_empty(path: str) -> None:
    """Remove the sink folder a failed write job left without part files (Spark creates it first)."""
    folder = local_path(path)
    if folder is None:
        return
    try:
        if os.path.isdir(folder) and not any(not n.startswith((".", "_")) for n in os.listdir(folder)):
            import shutil

            shutil.rmtree(folder)
    except OSError as e:
        log.debug("could not remove %s: %s", folder, e)


def driver_run(network, session, df, fmt: str, path: str, options, mode: str, schema):
    """``--spark-driver-fallback``: the records through the driver, the network's splits on Spark as usual;
    (records written, the failure that stopped the run or None)."""
    ordered, order = in_file_order(df)  # the files by path, as a run over them one after the other
    if order is not None:
        df = ordered.orderBy(order).drop(order)
    names = [f.name for f in schema.fields]  # every output column (NativeRun)

    def records():
        for row in df.toLocalIterator():
            yield {k: v for k, v in row.asDict().items() if v is not None}

    execution = iter(network.execute(records(), options))
    rows = []
    failure = None
    while True:
        try:
            record = next(execution)
        except StopIteration:
            break
        except SNetRuntimeError as e:  # the network failed: the outputs it made before are written, as a
            failure = e                # run over record files writes them
            break
        extra = record.keys() - set(names)
        if extra:  # (a run-time failure: the outputs before it are written, as a failing box's are)
            failure = SNetRuntimeError(f"the output record {format_labels(record)} has label(s) "
                                       f"{', '.join(sorted(extra))}, which no output column holds (columns: "
                                       f"{', '.join(names)}); give it a column with --spark-schema: "
                                       f"{repr(record)[:300]}")
            break
        rows.append(tuple(record.get(n) for n in names))
    write_sink(session.createDataFrame(rows, schema), fmt, path, mode, complete=failure is None)
    return len(rows), with_note(failure, _written(len(rows), path)) if failure is not None else None
