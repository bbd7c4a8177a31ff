"""Spark's error texts, read: what failed, in one line (:func:`reason`, :func:`task_error`,
:func:`analysis_error`), and whether a Python worker died (:func:`looks_like_crash`).  The whole text goes to
the ``snet.spark`` logger at DEBUG, not to the terminal."""

from __future__ import annotations

import logging
import re

from snet.errors import SNetRuntimeError, SNetUsageError

log = logging.getLogger("snet.spark")

# Texts of Spark's errors when a Python worker or its executor died (not a Python exception in the task).
CRASH_MARKERS = ("Python worker exited unexpectedly", "crashed", "EOFException", "ExecutorLostFailure",
                 "Connection reset", "worker lost", "SIGSEGV", "SIGKILL")
_HEADER = "Traceback (most recent call last):"
_PACKAGE = re.compile(r"^(?:[a-z_$][\w$]*\.)+(?=[A-Z])")


def looks_like_crash(text: str) -> bool:
    """True for a job failure caused by a dead Python worker or executor."""
    return any(marker in text for marker in CRASH_MARKERS)


def crash_summary(text: str) -> str:
    """The part of Spark's failure text that says what died (for the error's detail)."""
    for line in text.splitlines():
        for marker in CRASH_MARKERS:
            at = line.find(marker)
            if at >= 0:
                start = line.rfind(": ", 0, at)
                end = line.find(". ", at)
                return line[start + 2 if start >= 0 else 0:end if end >= 0 else len(line)].strip()[:300]
    return text.strip().splitlines()[0][:300] if text.strip() else ""


def first_cause(error: BaseException) -> str:
    """The line that says why, among JVM frames: the first ``SomeException: message`` (or ``Error``) line
    that is no stack frame, from the exception's name on; else the first line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("at ", "...", "File ", "Traceback")):
            continue
        m = re.search(r"[\w.$]*(?:Exception|Error): .*", line)
        if m:
            return m.group(0)[:300]
    return f"{type(error).__name__}: {lines[0][:300]}" if lines else type(error).__name__


def reason(error: BaseException) -> str:
    """Spark's error in one line (``SparkException: [FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] …``): the first
    cause without its package, the last line of a task's Python traceback, the innermost ``Caused by``."""
    log.debug("Spark's error: %s", error)
    text = str(error)
    found = _PACKAGE.sub("", first_cause(error))
    if found.endswith(_HEADER):  # a Python error in a task: the last line of its traceback says what it is
        lines = text.splitlines()
        start = next(at for at, line in enumerate(lines) if line.endswith(_HEADER))
        last = next((line for line in lines[start + 1:] if line.strip() and not line[0].isspace()), "")
        found = found[:-len(_HEADER)] + last.strip()[:300] if last else found
    causes = [line.strip()[len("Caused by:"):].strip() for line in text.splitlines()
              if line.strip().startswith("Caused by:") and not line.rstrip().endswith(_HEADER)]
    if causes and _PACKAGE.sub("", causes[-1]) not in found:  # the innermost cause often says what is wrong
        found += f" (caused by {_PACKAGE.sub('', causes[-1])[:300]})"
    return found


def task_error(error: Exception) -> SNetRuntimeError:
    """A failed Spark job as one line: the snet error raised in a task when there is one, with its position
    and its own detail lines (a box's traceback), not the task's or the JVM's frames."""
    from snet.source import Source, Span

    lines = str(error).splitlines()
    for at, line in enumerate(lines):
        if "snet.errors.SNet" in line and ": " in line:
            message = line.split(": ", 1)[1].strip()
            after = []  # the error's own detail lines, up to where the JVM's text goes on
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
    return SNetRuntimeError(f"Spark job failed: {reason(error)}")


def analysis_error(error: Exception, source: str, sink: str) -> SNetUsageError | None:
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


def interrupt_in(error: BaseException | None) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt ``error`` is or was raised while handling, if any (py4j turns Ctrl-C during a call
    into an error of its own, "Gateway must be connected to send cancel cmd" or "Answer from Java side is empty")."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None
