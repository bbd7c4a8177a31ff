"""``snet run NET.snet --spark MASTER -i SOURCE -o SINK`` with a Spark source and sink.

When the input and the output are in a format Spark reads and writes
(``parquet``, ``json``, ``csv``, ``orc``: from ``--format``,
``--input-format``/``--output-format``, the extension, or the files in a
directory), the run is *Spark-native*: ``spark.read`` makes a DataFrame of
the source, :func:`snet.spark.dataframe.spark_apply` runs the whole
network inside the tasks, and ``df.write`` writes the sink.  Records never
pass through the driver.  SOURCE may be a path, a glob or a URI (``file:``,
``hdfs:``, ``s3a:`` ...); SINK is a directory Spark writes its part files
into.

A network with state per tag value (a keyed split) sees each value's
records in the order of the source's files by path, rows in file order
(:func:`in_file_order`), as a run over the files one after the other would.

A network whose state cannot be partitioned (:mod:`snet.spark.distribute`)
stops with exit status 2 and the construct's position, unless
``--spark-driver-fallback`` is given: then the driver reads the source
(``toLocalIterator``, files by path, rows in file order), runs the network as ``snet run --spark`` always
does (its splits on Spark, the rest on the driver), and writes the outputs
with ``createDataFrame``: every record passes through the driver.

``--on-error skip`` and ``--errors`` are refused (exit status 2, before
Spark starts): the tasks have no driver to report skipped records to, and a
record that kills its Python worker would fail the job anyway.

The sink must not exist, as with Spark's default save mode; ``--spark-conf
snet.mode=overwrite`` (or ``append``) picks another save mode.  In any mode
a sink that is, holds or lies inside an input is refused before Spark starts
(:func:`check_paths`).  Before the job, the source's columns are checked
against the network's input type and every output column is typed
(:mod:`snet.spark.schema`).  A failed run leaves no ``_SUCCESS`` in the sink
(:func:`unmark`): what it holds then is partial output.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
import time

from snet.errors import SNetNotDistributable, SNetRuntimeError, SNetUsageError
from snet.records import format_labels
from snet.spark.crash import looks_like_crash

log = logging.getLogger("snet.spark")

SPARK_FORMATS = ("parquet", "json", "csv", "orc")
_EXTENSIONS = {".parquet": "parquet", ".json": "json", ".csv": "csv", ".orc": "orc"}
MODES = ("error", "errorifexists", "overwrite", "append", "ignore")
ORDER = "__snet_file_order"  # the input sequence of a keyed network: file path, block start, row


def spark_format(path: str | None, explicit: str | None) -> str | None:
    """The Spark format of ``path``, or None when it is a record file of the driver (JSON Lines, XML, stdio)."""
    if explicit is not None:
        return explicit if explicit in SPARK_FORMATS else None
    if path is None or path == "-":
        return None
    ext = os.path.splitext(path.rstrip("/"))[1].lower()
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    if os.path.isdir(path):  # a directory Spark wrote: the format of its part files
        found = {_EXTENSIONS.get(os.path.splitext(name)[1].lower())
                 for name in os.listdir(path) if not name.startswith(("_", "."))}
        found.discard(None)
        if len(found) == 1:
            return found.pop()
    return None


def native_formats(args) -> tuple[str, str] | None:
    """(input format, output format) when this run is Spark-native, else None; mixed sides are refused."""
    source = spark_format(args.input, args.input_format or args.format)
    sink = spark_format(args.output, args.output_format or args.format)
    if source is None and sink is None:
        return None
    explicit = {args.format, args.input_format, args.output_format} & set(SPARK_FORMATS)
    master = args.spark or os.environ.get("SNET_SPARK_MASTER")
    if not master and not explicit and (source is None or sink is None):
        return None  # one '.csv' name and no Spark: the record-file path says it cannot tell the format
    if source is None or sink is None:
        side, other = ("input", args.output) if source is None else ("output", args.input)
        raise SNetUsageError(f"a Spark-native run needs a Spark source and a Spark sink ({', '.join(SPARK_FORMATS)}), "
                             f"but the {side} is a record file of the driver; give both sides a Spark format "
                             f"(--input-format/--output-format), or neither ({other})")
    if not master:
        raise SNetUsageError(f"{source} input and {sink} output are read and written by Spark: give --spark MASTER")
    return source, sink


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


def _reader(session, fmt: str, path: str):
    reader = session.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    return reader.load(path)


def check_paths(source: str, sink: str, mode: str) -> None:
    """Mistakes in -i and -o that the local file system shows, before Spark starts (exit status 2)."""
    source_path, sink_path = local_path(source), local_path(sink)
    if source_path is not None and sink_path is not None:
        _check_overlap(source, source_path, sink, sink_path)
    if mode in ("error", "errorifexists") and sink_path is not None and os.path.exists(sink_path):
        raise SNetUsageError(f"the output {sink} exists; remove it, or give --spark-conf snet.mode=overwrite")
    if source_path is not None and not any(ch in source_path for ch in "*?[") and not os.path.exists(source_path):
        raise SNetUsageError(f"input not found: {source}")


def _check_overlap(source: str, source_path: str, sink: str, sink_path: str) -> None:
    """Refuse an output that is, holds or lies inside an input (every path a glob matches, symbolic links
    resolved), whatever the save mode: ``overwrite`` empties the output folder before the job reads its
    input, and any mode writes part files where the input's directory listing would find them."""
    import glob

    output = os.path.realpath(sink_path)
    pattern = any(ch in source_path for ch in "*?[")
    inputs = sorted(glob.glob(source_path)) if pattern else [source_path]
    for path in inputs:
        given = path if pattern else source
        path = os.path.realpath(path)
        if path == output:
            raise SNetUsageError(f"the output {sink} is the input{f' {given}' if pattern else ''}: writing it "
                                 "would destroy the input")
        if path.startswith(output.rstrip(os.sep) + os.sep):
            raise SNetUsageError(f"the output {sink} holds the input {given}: writing the output folder would "
                                 "destroy the input (give an output outside it)")
        if output.startswith(path.rstrip(os.sep) + os.sep):
            raise SNetUsageError(f"the output {sink} lies inside the input {given}: the run would read its own "
                                 "output (give an output outside it)")


def _analysis_error(error: Exception, source: str, sink: str) -> SNetUsageError | None:
    """Spark's analysis error, raised while the job is planned, before any task runs (exit status 2): a
    missing input or an existing output (an ``hdfs:`` URI, a glob) in snet's words, another in Spark's."""
    if "AnalysisException" not in type(error).__name__:
        return None
    text = str(error)
    if "PATH_ALREADY_EXISTS" in text:
        return SNetUsageError(f"the output {sink} exists; remove it, or give --spark-conf snet.mode=overwrite")
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__)
    if "PATH_NOT_FOUND" in text:
        first = next((line for line in text.splitlines() if "PATH_NOT_FOUND" in line), first).strip()
        return SNetUsageError(f"input not found: {source} ({first[:300]})")
    return SNetUsageError(f"Spark cannot plan the run ({source} in, {sink} out): {first[:500]}")


def in_file_order(df):
    """``df`` with a column giving its records' order in the source: files by path, rows in file order.

    A keyed network sees each tag value's records in this order.  Spark's own
    order of a directory's rows is not it: it packs files into partitions
    largest first, so ``monotonically_increasing_id`` alone would put a later
    part file's records before an earlier one's.  Rows of one file block are
    read in order within one partition, so (file path, block start, id) is
    the order of the files.  Returns (DataFrame, column) or (df, None) for a
    source without file metadata.
    """
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


SUCCESS = "_SUCCESS"  # the marker Hadoop's committer leaves in a folder whose write job succeeded
MARK_SUCCESS = "mapreduce.fileoutputcommitter.marksuccessfuljobs"


def write_sink(df, fmt: str, path: str, mode: str, complete: bool = True) -> None:
    """Write the sink; ``complete=False`` for the outputs of a failed run (the salvage job, the driver
    fallback's outputs before its failure): the folder gets no ``_SUCCESS``, which readers take for a
    complete output."""
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


def _failure(error: Exception) -> SNetRuntimeError:
    """A failed Spark job as one line: the snet error raised in a task when there is one, with its position
    and its own detail lines (a box's traceback), not the task's or the JVM's frames."""
    from snet.source import Source, Span

    text = str(error)
    lines = text.splitlines()
    for at, line in enumerate(lines):
        if "snet.errors.SNet" in line and ": " in line:
            message = line.split(": ", 1)[1].strip()
            # the error's own detail lines (a box's traceback), as a run on the driver prints them, up to
            # where the JVM's text goes on
            after = []
            for more in lines[at + 1:]:
                if more.lstrip().startswith(("at org.", "at java.", "at scala.", "Caused by:", "Driver stacktrace")):
                    break
                after.append(more)
            detail = "\n".join(after).strip()
            m = re.match(r"(.+):(\d+):(\d+): error: (.*)$", message)
            if m:  # the task's error, positioned: the same line as a run on the driver prints
                span = Span(Source(m.group(1), ""), int(m.group(2)), int(m.group(3)))
                return SNetRuntimeError(m.group(4), span, detail)
            return SNetRuntimeError(message.removeprefix("error: "), None, detail)
    return SNetRuntimeError(f"Spark job failed: {spark_reason(error)}")


def spark_reason(error: BaseException) -> str:
    """Spark's error in one line: its first ``SomeException: message`` line that is no stack frame, the
    exception's package left out (``SparkException: [FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] …``).  The
    whole text, the JVM's frames with it, goes to the ``snet.spark`` logger at DEBUG, not to the terminal."""
    from snet.spark.session import startup_cause

    log.debug("Spark's error: %s", error)
    short = functools.partial(re.sub, r"^(?:[a-z_$][\w$]*\.)+(?=[A-Z])", "")
    reason = short(startup_cause(error))
    header = "Traceback (most recent call last):"
    if reason.endswith(header):  # a Python error in a task: the last line of its traceback says what it is
        lines = str(error).splitlines()
        start = next(at for at, line in enumerate(lines) if line.endswith(header))
        last = next((line for line in lines[start + 1:] if line.strip() and not line[0].isspace()), "")
        reason = reason[:-len(header)] + last.strip()[:300] if last else reason
    causes = [line.strip()[len("Caused by:"):].strip() for line in str(error).splitlines()
              if line.strip().startswith("Caused by:") and not line.rstrip().endswith(header)]
    if causes and short(causes[-1]) not in reason:  # the innermost cause, which often says what is wrong
        reason += f" (caused by {short(causes[-1])[:300]})"
    return reason


def run_native(network, args, options, source: str, sink: str, stats_json=None) -> int:
    """The Spark-native run (see the module docstring); returns the exit status.  ``stats_json``: the open
    ``--stats-json`` file, written at the end (:func:`_report`)."""
    from snet.spark.dataframe import spark_apply
    from snet.spark.distribute import distribution
    from snet.spark.session import is_connect_session
    from snet.spark.shipping import shipped_only
    from snet.spark.splits import start_session

    if options.on_error != "stop" or getattr(args, "errors", None) is not None:
        flag = "--errors" if getattr(args, "errors", None) is not None else "--on-error skip"
        raise SNetUsageError(f"{flag} does not apply to a Spark-native run ({source} in, {sink} out): its tasks run "
                             "the network with no driver to report a skipped record to, so a failing box or a "
                             "crashed Python worker fails the Spark job; to skip failing records, read and write "
                             "JSON Lines (--spark then runs the splits on Spark and skips there)")
    conf = dict(options.spark_conf)
    mode = conf.pop("snet.mode", "errorifexists")
    if mode not in MODES:
        raise SNetUsageError(f"snet.mode must be one of {', '.join(MODES)}, not '{mode}'")
    boxes_shipped = shipped_only(conf.get("snet.boxes"))
    ignored = sorted(k for k in conf if k.startswith("snet.") and k != "snet.boxes")
    if ignored:
        raise SNetUsageError(f"--spark-conf {', '.join(ignored)} does not apply to a Spark-native run ({source} in, "
                             f"{sink} out): the snet keys it reads are snet.mode and snet.boxes (the tasks follow "
                             "the source's partitions)")
    keyed = False
    try:
        how = distribution(network.graph)
        keyed = how.key is not None
        fallback = False
    except SNetNotDistributable as e:
        if not getattr(args, "spark_driver_fallback", False):
            raise SNetNotDistributable(e.message.replace("run it on the driver instead", "give "
                                       "--spark-driver-fallback to run it on the driver"), e.span) from None
        fallback = True
    check_paths(args.input, args.output, mode)
    if not fallback:
        _warn_engine_options(args)
    watched = args.progress is not None or args.verbose
    if watched and "spark.ui.enabled" not in conf:  # the Spark UI, for a person watching
        conf["spark.ui.enabled"] = "true"
    session = start_session(options.spark_master, conf)
    if watched:
        from snet.spark.session import ui_address

        address = ui_address(session)
        if address:
            print(f"snet progress: Spark UI at {address}", file=sys.stderr)
    schema = getattr(args, "spark_schema", None)
    sink_existed = _exists(args.output)
    started = time.perf_counter()
    df, order = None, None
    jobs = _Jobs(session)
    outcome: dict = {}  # what a failed run wrote: "written", the records the salvage job wrote
    try:
        df = _reader(session, source, args.input)
        from snet.spark.dataframe import check_columns, output_schema
        from snet.spark.schema import check_source, driver_sample

        check_columns(df.schema)
        if keyed and how.key not in df.columns:  # (spark_apply says it of "the DataFrame")
            raise SNetUsageError(f"the split at {how.where} keeps state per {how.key}, so the input is "
                                 f"partitioned by its column {how.key}, which {args.input} lacks (columns: "
                                 f"{', '.join(df.columns)})")
        check_source(network.graph, df.columns, args.input)
        # every output column, typed before the job (``--spark-schema`` sets some of them): a label of an output
        # record that no column holds fails the run, never is dropped
        schema = output_schema(network.graph, df.schema, None, cli=True, boxes=network.boxes,
                               sample=driver_sample(network, df), override=schema)
        if fallback:
            log.warning("warning: the network cannot be partitioned over Spark tasks; it runs on the driver "
                        "(--spark-driver-fallback), every record passing through it")
            written = driver_run(network, session, df, sink, args, options, mode, schema)
        else:
            df, order = (in_file_order(df) if keyed else (df, None))
            counter = None if is_connect_session(session) else session.sparkContext.accumulator(0)
            out = spark_apply(network, df, schema, order=order, shipped_only=boxes_shipped,
                              task_warnings=not args.quiet, counter=counter, project=False)
            write_sink(out, sink, args.output, mode)
            written = counter.value if counter is not None else None
    except KeyboardInterrupt:
        _stop(jobs, args.output, sink_existed)
        jobs.close()
        raise
    except SNetUsageError:
        jobs.close()
        raise
    except SNetRuntimeError:  # the driver fallback's network failed: its outputs before the failure are written
        unmark(session, args.output)
        jobs.close()
        raise
    except Exception as e:
        if _interrupted(e):  # Ctrl-C in a py4j call, which py4j turned into an error of its own
            _stop(jobs, args.output, sink_existed)
            jobs.close()
            raise KeyboardInterrupt from None
        # (the driver fallback runs the network before it writes: a refused write there is a run-time failure)
        usage = _analysis_error(e, args.input, args.output) if df is None or not fallback else None
        if usage is None and df is None:  # the source's schema could not be read (a corrupt file): never started
            usage = SNetUsageError(f"cannot read the input {args.input}: {spark_reason(e)}")
        if usage is not None:
            jobs.close()
            raise usage from None
        failed = e
    else:
        failed = None
    if failed is not None:
        # Outside the except clause: the Spark job's error must not be the context of what the crash diagnosis
        # or the salvage job raises, as py4j formats that context when Ctrl-C interrupts its call, and getting
        # the text of a Spark error is a py4j call itself, which waits for the interrupted one: a hang.
        try:
            _failed(network, failed, df, order, fallback, boxes_shipped, schema, sink, args, mode, sink_existed,
                    outcome)
        except KeyboardInterrupt:  # during the crash diagnosis or the salvage job
            _stop(jobs, args.output, sink_existed)
            raise
        except SNetRuntimeError as error:
            unmark(session, args.output)
            # as a failed run on the driver prints its statistics, before the error
            written = getattr(error, "records_written", outcome.get("written"))
            _report(source, sink, args, fallback, written, True, time.perf_counter() - started, stats_json)
            raise
        finally:
            jobs.close()
    jobs.close()
    _report(source, sink, args, fallback, written, False, time.perf_counter() - started, stats_json)
    return 0


# The options of the driver's engine, which the tasks of a Spark-native run do not take.
ENGINE_OPTIONS = (("engine", "--engine"), ("workers", "-w/--workers"), ("throttle", "--throttle"),
                  ("box_concurrency", "--box-concurrency"), ("box_processes", "--box-processes"),
                  ("no_steal", "--no-steal"), ("seed", "--seed"), ("box_timeout", "--box-timeout"),
                  ("box_retries", "--box-retries"))


def _warn_engine_options(args) -> None:
    """Say that the engine options given do not apply: each task runs the network on its own engine."""
    given = [flag for name, flag in ENGINE_OPTIONS if _given(getattr(args, name, None))]
    if given:
        log.warning("warning: %s %s no effect on a Spark-native run: each Spark task runs the network on an "
                    "engine of its own (FRONT with one worker; the tasks are the parallelism); they apply with --spark-driver-fallback and "
                    "to runs over record files", ", ".join(given), "has" if len(given) == 1 else "have")


def _given(value) -> bool:
    """Whether an option's parsed value was given (``--seed 0`` was, though 0 == False)."""
    return value is not None and value is not False and value != []


def _report(source: str, sink: str, args, fallback: bool, written: int | None, failed: bool, seconds: float,
            stats_json) -> None:
    """``--stats`` (one line) and ``--stats-json`` (the same figures, as JSON) of a Spark-native run."""
    where = "on the driver" if fallback else "inside Spark tasks"
    if args.stats:
        what = ("failed, " if failed else "") + (f"{written} records written, " if written is not None else "")
        print(f"snet: {source} {args.input} -> {sink} {args.output}, the network {where}: {what}{seconds:.2f} s",
              file=sys.stderr)
    if stats_json is not None:
        import json

        with stats_json:
            json.dump({"run": "spark-native", "network": where, "source": {"format": source, "path": args.input},
                       "sink": {"format": sink, "path": args.output}, "failed": failed, "records_out": written,
                       "seconds": seconds}, stats_json, indent=2, sort_keys=True)
            stats_json.write("\n")


def _failed(network, e: Exception, df, order, fallback: bool, boxes_shipped: bool, schema, sink: str, args,
            mode: str, sink_existed: bool, outcome: dict):
    """Raise the failed run's error, after the crash diagnosis of a dead Python worker and the salvage job that
    writes the outputs made before a failure of the network."""
    outcome["written"] = 0  # until a salvage job writes some
    text = str(e)
    error = _failure(e)
    crashed = looks_like_crash(text)
    if df is not None and not fallback and crashed:
        error = _diagnosed(network, df, order, boxes_shipped, text) or error
    if not sink_existed:
        _remove_if_empty(args.output)
    if df is not None and not fallback and (crashed or _from_network(text, error)):
        note = _salvaged(network, df, order, boxes_shipped, schema, sink, args.output, mode, outcome)
        error.detail = f"{error.detail.rstrip()}\n{note}" if error.detail else note
        if not sink_existed:
            _remove_if_empty(args.output)
    raise error from e


def _diagnosed(network, df, order, shipped_only: bool, text: str):
    """The box and record that killed a Python worker (:mod:`snet.spark.taskcrash`), or None."""
    from snet.spark.taskcrash import diagnose

    log.warning("warning: a Python worker died; running the partitions again to find the box and the record")
    try:
        return diagnose(network, df, order=order, shipped_only=shipped_only, job_error=text)
    except Exception as e:  # the diagnosis failed too: the original error stands
        if _interrupted(e):
            raise KeyboardInterrupt from None
        log.debug("the crash diagnosis failed: %s", e)
        return None


def _from_network(text: str, error: SNetRuntimeError) -> bool:
    """Whether a failed job's error was raised by the network in a task (a box, a filter, a split ...),
    not by the writing of its outputs to rows (``spark_apply: ...``) or by Spark itself."""
    return "snet.errors.SNet" in text and not error.message.startswith("spark_apply:")


def _salvaged(network, df, order, shipped_only: bool, schema, fmt: str, path: str, mode: str,
              outcome: dict) -> str:
    """Write the outputs made before the failure (:mod:`snet.spark.salvage`); the line that says what was
    written; a KeyboardInterrupt, however py4j passed it on, when Ctrl-C stopped it."""
    from snet.spark.salvage import salvage

    log.warning("warning: the run failed; running the partitions again to write the outputs made before the "
                "failure")
    try:
        count = salvage(network, df, lambda out: write_sink(out, fmt, path, mode, complete=False), order=order,
                        shipped_only=shipped_only, schema=schema)
        outcome["written"] = count  # (None on Spark Connect: not counted)
    except Exception as e:  # the failure stands; say that nothing was written
        if _interrupted(e):
            raise KeyboardInterrupt from None
        log.debug("the salvage run failed: %s", e)
        why = _failure(e)  # the snet error raised in a task, when there is one, else Spark's first error line
        return f"nothing was written to {path} (the run to write the outputs made before the failure failed: " \
               f"{why.message[:500]})"
    if count is None:
        return f"the outputs made before the failure were written to {path}"
    return _written(count, path)


def _written(count: int, path: str) -> str:
    records, verb = ("output record", "was") if count == 1 else ("output records", "were")
    return f"{count} {records} made before the failure {verb} written to {path}"


class _Jobs:
    """The Spark jobs of this run, tagged so that Ctrl-C cancels them and no other user's jobs of a shared
    context (the tag is the calling thread's, as Spark's job tags are)."""

    def __init__(self, session):
        import uuid

        from snet.spark.session import is_connect_session

        self.session, self.tag = session, f"snet-run-{uuid.uuid4().hex}"
        self.connect = is_connect_session(session)
        try:
            if self.connect:
                session.addTag(self.tag)
            else:
                session.sparkContext.addJobTag(self.tag)
                session.sparkContext.setInterruptOnCancel(True)
        except Exception as e:  # an older Spark: Ctrl-C then leaves the jobs to end with the process
            log.debug("could not tag the run's Spark jobs: %s", e)

    def cancel(self, wait: float = 5.0) -> None:
        """Cancel the run's jobs, and wait up to ``wait`` seconds for the tasks to end (Spark kills their Python
        workers in about two): a context stopped under running tasks logs their errors after snet's line."""
        try:
            if self.connect:
                self.session.interruptTag(self.tag)
                return
            sc = self.session.sparkContext
            sc.cancelJobsWithTag(self.tag)
            tracker = sc.statusTracker()
            until = time.monotonic() + wait
            while time.monotonic() < until and any(e.numRunningTasks for e in tracker.getExecutorInfos()):
                time.sleep(0.1)
        except Exception as e:  # best effort: the process is stopping anyway
            log.debug("could not cancel the run's Spark jobs: %s", e)

    def close(self) -> None:
        try:
            if self.connect:
                self.session.removeTag(self.tag)
            else:
                self.session.sparkContext.removeJobTag(self.tag)
                self.session.sparkContext.setInterruptOnCancel(False)
        except Exception as e:
            log.debug("could not untag the run's Spark jobs: %s", e)


def _stop(jobs: _Jobs, output: str, sink_existed: bool) -> None:
    """Ctrl-C: cancel the run's Spark jobs; remove the output folder a cancelled write job left (when it did
    not exist before and holds no part files), and a ``_SUCCESS`` marker of a local folder (no py4j call
    now: one may be the interrupted one)."""
    jobs.cancel()
    if local_path(output) is not None:
        unmark(None, output)
    if not sink_existed:
        _remove_if_empty(output)


def _interrupted(error: BaseException) -> bool:
    """Whether ``error`` was raised while handling a KeyboardInterrupt (py4j turns Ctrl-C during a call into
    an error of its own, "Gateway must be connected to send cancel cmd", say)."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


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


def driver_run(network, session, df, sink: str, args, options, mode: str, schema) -> int:
    """``--spark-driver-fallback``: the records through the driver, the network's splits on Spark as usual."""
    ordered, order = in_file_order(df)  # the files by path, as a run over them one after the other
    if order is not None:
        df = ordered.orderBy(order).drop(order)
    out_schema = schema  # every output column (run_native)
    names = [f.name for f in out_schema.fields]

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
    write_sink(session.createDataFrame(rows, out_schema), sink, args.output, mode, complete=failure is None)
    if failure is not None:
        note = _written(len(rows), args.output)
        failure.records_written = len(rows)
        failure.detail = f"{failure.detail.rstrip()}\n{note}" if failure.detail else note
        raise failure
    return len(rows)
