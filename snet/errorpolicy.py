"""What a run does with a run-time error in a box or a filter: stop, or skip the record.

``on_error="stop"`` (the default) ends the run at the first error, which the
engines raise to the caller.  ``on_error="skip"`` and ``on_error=callable``
instead drop the record that failed and go on: the failing step produces no
output for it, exactly as if the box had returned ``None``, so every engine
keeps its ordering and termination rules unchanged (a deterministic
combinator's collector sees one record fewer in that group, and moves on).

The policy is applied where the plan is built (:func:`snet.spg.lower.lower`):
each box's caller and each filter's operator is wrapped once per run, so
the engines never see the policy and a run with ``stop`` pays nothing for it.
With tracked inputs (``Session.submit``, :mod:`snet.requests`) the future
of the input a failing record came from fails with the error once that
input is done.  Errors of the other constructs (a record no parallel branch accepts, a tag a
split needs that the record lacks, a synchro-cell star that cannot
terminate) say the network itself is wrong for its input and still stop the
run under every policy.

An error record (interfaces.md §4) has the keys ``error`` (the message),
``at`` (``FILE:LINE:COL``), ``box`` (the box's name, when a box failed),
``exception`` (the type name of what was raised; ``BoxTimeout`` for a call
that passed its box's timeout), ``attempts`` (for a box given a timeout or
retries: the calls made, retries included) and ``record`` (the input record
of the failing step).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable

from snet.errors import SNetBoxError, SNetRuntimeError
from snet.requests import current_request

if TYPE_CHECKING:
    from snet.core.boxes import BoxCaller

Record = dict
STOP = "stop"
SKIP = "skip"

#: warnings logged for skipped records, at most; later failures are only counted
LOGGED_FAILURES = 100

log = logging.getLogger("snet")


def error_record(error: SNetRuntimeError, record: Record, box: str | None) -> dict:
    """The error record of ``error``, raised while processing ``record``."""
    cause = error.__cause__
    out: dict[str, Any] = {"error": error.message, "at": error.span.location if error.span is not None else None}
    if box is not None:
        out["box"] = box
    out["exception"] = type(cause).__name__ if cause is not None else type(error).__name__
    attempts = getattr(cause, "__snet_attempts__", None)  # a box given a timeout or retries (snet.core.guard)
    if attempts is not None:
        out["attempts"] = attempts
    out["record"] = record
    return out


class ErrorPolicy:
    """Skips failing records: logs a warning, counts, and hands an error record to ``handler``.

    Called from any worker thread; the count and the handler calls are
    serialised by a lock, so a handler need not be thread-safe.  A handler
    that raises (any exception, ``SystemExit`` included) stops the run with
    an error naming what it raised, and is called exactly once for that
    failure and never again in the run: failures that other workers meet
    meanwhile raise the same error.  A ``KeyboardInterrupt`` in the main
    thread is a Ctrl-C and is raised as is; in any other thread it is the
    handler's failure like any other.
    """

    def __init__(self, handler: Callable[[dict], Any] | None = None, quiet: bool = False):
        self.handler = handler
        self.quiet = quiet  # no warnings: a policy that only collects (a split's replicas on an executor)
        self.failures = 0
        self.box_failures: dict[str, int] = {}  # failures by box name (the metrics' snet_box_failures_total)
        self.broken: SNetRuntimeError | None = None  # the error that ended the run when the handler raised
        self._lock = threading.Lock()

    def failed(self, error: SNetRuntimeError, record: Record, box: str | None) -> None:
        request = current_request()
        if request is not None:  # a tracked input: its future fails with the error when it is done
            request.failed(error)
        self.reported(error_record(error, record, box))

    def reported(self, record: dict) -> None:
        """Count, warn and hand on one error record (made here, or by a split's replicas on an executor)."""
        with self._lock:
            self.failures += 1
            box = record.get("box")
            if box is not None:
                self.box_failures[box] = self.box_failures.get(box, 0) + 1
            if not self.quiet:
                if self.failures <= LOGGED_FAILURES:
                    where = f"{record['at']}: " if record.get("at") else ""
                    log.warning("%swarning: %s (record skipped)", where, record["error"])
                elif self.failures == LOGGED_FAILURES + 1:
                    log.warning("warning: more records failed and were skipped; only their number is reported "
                                "from now on")
            if self.broken is not None:  # the handler failed before: the run is ending, it is not called again
                raise self.broken
            if self.handler is not None:
                try:
                    self.handler(record)
                except BaseException as e:  # the handler's own failure ends the run: nothing is lost silently
                    if isinstance(e, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
                        raise  # a Ctrl-C that came while the handler ran
                    self.broken = SNetRuntimeError(f"the on_error handler raised {type(e).__name__}: {e} while "
                                                   f"handling: {record['error']}")
                    raise self.broken from e


def policy_for(on_error: Any) -> ErrorPolicy | None:
    """The policy object for a (validated) ``on_error`` option: None for ``"stop"``."""
    if isinstance(on_error, str):
        return None if on_error == STOP else ErrorPolicy()
    return ErrorPolicy(on_error)


class SkippingBox:
    """A box caller that reports a failing record to the policy and produces no output for it."""

    __slots__ = ("call", "policy", "name")

    def __init__(self, call: BoxCaller, policy: ErrorPolicy):
        self.call = call
        self.policy = policy
        self.name = call.name

    def __call__(self, record: Record) -> list:
        try:
            return self.call(record)
        except SNetRuntimeError as e:
            self.policy.failed(e, record, self.name)
            return []

    def resume(self, future: Any, record: Record) -> list:
        try:
            return self.call.resume(future, record)
        except SNetRuntimeError as e:
            self.policy.failed(e, record, self.name)
            return []

    def fire(self) -> list:
        try:
            return self.call.fire()
        except SNetRuntimeError as e:
            self.policy.failed(e, {}, self.name)
            return []

    def __getattr__(self, name: str) -> Any:  # what else engines read of a caller (arguments, span, ...)
        return getattr(self.call, name)


class SkippingFilter:
    """A filter's operator that reports a failing record to the policy and produces no output for it."""

    __slots__ = ("apply", "policy")

    def __init__(self, apply: Callable[[Record], list], policy: ErrorPolicy):
        self.apply = apply
        self.policy = policy

    def __call__(self, record: Record) -> list:
        try:
            return self.apply(record)
        except SNetRuntimeError as e:
            if isinstance(e, SNetBoxError):
                raise
            self.policy.failed(e, record, None)
            return []


__all__ = ["STOP", "SKIP", "ErrorPolicy", "SkippingBox", "SkippingFilter", "error_record", "policy_for"]
