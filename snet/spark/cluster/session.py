"""Getting a Spark session for a master URL (``local[...]``, ``spark://``, ``yarn``, ``k8s://``, ``sc://``).

An active session is reused whatever master was asked for (a JVM holds one
SparkContext, 5-8 s to start; only runtime settings take effect), and snet
never stops one.  A new one starts after :mod:`~.preflight`'s checks.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

from snet.spark.failures import first_cause

log = logging.getLogger("snet.spark")

DEFAULT_CONF = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.sql.shuffle.partitions": "4", "spark.sql.execution.arrow.pyspark.enabled": "true"}

_LOCK = threading.Lock()


def is_connect_session(session) -> bool:
    """True for a Spark Connect session (no SparkContext, no RDD API)."""
    return type(session).__module__.startswith("pyspark.sql.connect")


def prepare_environment(master: str) -> None:
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYTHONHASHSEED", "0")


def start_session(master: str, conf: dict[str, str] | None = None):
    """Check ``master``'s URL and start or reuse its session, ``snet.*`` keys left out."""
    from snet.spark.cluster.preflight import addresses

    addresses(master)  # a malformed URL is an error even when a session is running already
    return get_session(master, {k: v for k, v in (conf or {}).items() if not k.startswith("snet.")})


def run_settings(options, what: str, reads: tuple[str, ...], why: str) -> tuple[str, dict[str, str]]:
    """(master, settings) of ``what``, a run on Spark (exit status 2 without a master, or for an ``snet.*``
    setting it does not read: ``reads`` are those it does, ``why`` says why the others do not apply)."""
    from snet.errors import SNetUsageError

    if not options.spark_master:
        raise SNetUsageError(f"{what} needs a Spark master: give --spark MASTER")
    conf = dict(options.spark_conf)
    ignored = sorted(k for k in conf if k.startswith("snet.") and k not in reads)
    if ignored:
        keys = f"keys it reads are {' and '.join(reads)}" if len(reads) > 1 else f"key it reads is {reads[0]}"
        raise SNetUsageError(f"--spark-conf {', '.join(ignored)} does not apply to {what}: the snet {keys} ({why})")
    return options.spark_master, conf


def watched_session(master: str, conf: dict[str, str], show_ui=None):
    """:func:`start_session`, and ``show_ui(address)`` told the Spark UI's address when there is one."""
    session = start_session(master, conf)
    address = ui_address(session) if show_ui is not None else None
    if address:
        show_ui(address)
    return session


def get_session(master: str, conf: dict[str, str] | None = None):
    """The SparkSession to use for ``master`` (created, or the active one reused)."""
    from snet.errors import SNetUsageError

    try:
        from pyspark.sql import SparkSession
    except ImportError as e:  # pragma: no cover - the spark extra is missing
        raise SNetUsageError("--spark needs pyspark (the spark extra: pip install -e '.[spark]' in a checkout): "
                             f"{e}") from e
    conf = dict(conf or {})
    with _LOCK:
        prepare_environment(master)
        active = SparkSession.getActiveSession()
        if active is not None:
            _apply_runtime_conf(active, conf)
            return active
        from snet.spark.cluster.preflight import check_master

        check_master(master)  # seconds, not a minute, for a master that is not there
        builder = SparkSession.builder.appName("snet")
        if master.startswith("sc://"):  # Spark Connect
            builder = builder.remote(master)
            options = dict(conf)
        else:
            builder = builder.master(master)
            options = {**{k: v for k, v in DEFAULT_CONF.items() if k not in conf}, **conf}
        for key, value in options.items():
            builder = builder.config(key, value)
        handler = _sigint_handler()
        try:
            if master.strip().startswith("spark://"):
                _check_endpoint(master, options)
            session = builder.getOrCreate()
        except SNetUsageError:
            raise
        except Exception as e:
            log.debug("Spark did not start: %s", e)
            cause = first_cause(e)
            if master.startswith("spark://") and "stopped SparkContext" in cause:
                cause = ("the master's address answers, but no Spark master registered the application "
                         "(another program on that port, or a master of another Spark version?)")
            raise SNetUsageError(f"cannot start Spark for master '{master}': {cause}") from e
        finally:
            _restore_sigint(handler)
        if not is_connect_session(session):
            session.sparkContext.setLogLevel("ERROR")
            _quiet_task_failures(session)
        return session


def _check_endpoint(master: str, options: dict[str, str]) -> None:
    """Start the JVM as the session will (with its settings: ``spark.driver.memory`` counts only at the JVM's
    start), and check that ``master`` has a master's endpoint."""
    from pyspark import SparkConf, SparkContext

    from snet.spark.cluster.preflight import check_master_endpoint

    conf = SparkConf().setMaster(master).setAppName("snet")
    for key, value in options.items():
        conf.set(key, value)
    SparkContext._ensure_initialized(conf=conf)
    check_master_endpoint(SparkContext._jvm, master)


# Loggers whose ERROR lines repeat, as JVM stack traces, a failed task that snet reports itself in one line.
TASK_FAILURE_LOGGERS = ("org.apache.spark.executor.Executor", "org.apache.spark.scheduler.TaskSetManager",
                        "org.apache.spark.api.python.PythonRunner",
                        # a failed task and job of a Spark-native run's write ("Aborting task", "Aborting job")
                        "org.apache.spark.util.Utils", "org.apache.spark.sql.execution.datasources.FileFormatWriter")


def _quiet_task_failures(session) -> None:
    try:
        jvm = session.sparkContext._jvm
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        fatal = jvm.org.apache.logging.log4j.Level.FATAL
        for name in TASK_FAILURE_LOGGERS:
            configurator.setLevel(name, fatal)
    except Exception:  # another logging back end: Spark's lines stay
        log.debug("could not quiet Spark's task failure logs", exc_info=True)


def _sigint_handler():
    """The SIGINT handler now (None off the main thread, where none can be set)."""
    return signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None


def _restore_sigint(handler) -> None:
    """Put back the SIGINT handler a new SparkContext replaced: PySpark's makes py4j calls inside the handler,
    which fail with py4j's traceback while the main thread waits in one; snet cancels its own (tagged) jobs."""
    if handler is not None:
        signal.signal(signal.SIGINT, handler)


def _apply_runtime_conf(session, conf: dict[str, str]) -> None:
    for key, value in conf.items():
        try:
            if session.conf.get(key, None) == value:
                continue  # set when the session started (an earlier split of this run, say)
        except Exception:
            pass
        try:
            session.conf.set(key, value)
        except Exception:  # a static setting: only effective at session start
            log.warning("Spark setting %s=%s ignored: the session is already running", key, value)


def ui_address(session) -> str | None:
    """The address of the Spark UI of ``session`` (None when the UI is off, or on Spark Connect)."""
    try:
        return session.sparkContext.uiWebUrl or None
    except Exception:
        return None


def parallelism(session, default: int = 2) -> int:
    """How many tasks a job should have: the cluster's default parallelism."""
    try:
        return max(1, int(session.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect: no SparkContext
        try:
            value = session.conf.get("spark.default.parallelism", None)
            return max(1, int(value)) if value else default
        except Exception:
            return default
