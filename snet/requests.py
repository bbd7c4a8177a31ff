"""Inputs whose outputs are tracked: what ``Session.submit`` and a bounded ``Session.feed`` hand the engines.

A :class:`Request` wraps one input record.  An engine that finds one in its
input stream follows every record that comes from it and calls
:meth:`Request.finish` once none is left inside the network; the outputs
of a request with a future are collected for that future instead of
joining the run's output stream.

What a record comes from (documented in docs/embedding.md, "Requests"):

* every output of a box or filter comes from the input its input record
  came from (flow inheritance does not matter: the step does);
* a synchro-cell *consumes* the records it stores: a stored record no
  longer belongs to its input, so an input whose records all wait in cells
  is done (its future holds the outputs it had, possibly none);
* the record a synchro-cell emits when it fires comes from the input whose
  record completed the cell;
* an initialiser's outputs come from no input: they join the run's output
  stream.

So a request is done exactly when nothing that came from it is still
being processed, waiting in an inbox, or held by a deterministic
combinator's collector; no request waits for a cell that may never fire,
and no future hangs.  A record that stays in a synchro-cell star for ever
(it matches no pattern) keeps its request open; the run then ends with
"the network cannot terminate".  Requests still open when the run ends
(its error, or a session aborted) fail with that error.

The FRONT runtime follows a request as a group at the bottom of a record's
group stack (the same counting that orders deterministic combinators); the
reference engine, which drains each input before reading the next, gives
every output to the input being drained.
"""

from __future__ import annotations

import enum
import threading
from concurrent.futures import Future, InvalidStateError
from typing import Any, Callable, Final

Record = dict[str, Any]


class NoInput(enum.Enum):
    """The type of :data:`NO_INPUT_YET` (an enum of one member, so that ``x is NO_INPUT_YET`` narrows a type)."""

    YET = "no input yet"


#: yielded by an input stream that has no record now but may have one later (a session waiting for its
#: caller): the engine goes on with other work instead of blocking in the iterator
NO_INPUT_YET: Final = NoInput.YET

_current = threading.local()


def current_request() -> "Request | None":
    """The request of the record this thread is processing now (None outside tracked runs)."""
    return getattr(_current, "request", None)


def set_current_request(request: "Request | None") -> None:
    _current.request = request


class Request:
    """One tracked input: its record, the future of its outputs (or None), and what to call when done."""

    __slots__ = ("record", "future", "outputs", "error", "on_done", "finished")

    def __init__(self, record: Record, future: Future[list[Record] | None] | None = None,
                 on_done: Callable[["Request"], Any] | None = None):
        self.record = record
        self.future = future
        self.outputs: list[Record] | None = [] if future is not None else None  # None: outputs join the run's stream
        self.error: BaseException | None = None  # a skipped failure of one of its records
        self.on_done = on_done
        self.finished = False

    def failed(self, error: BaseException) -> None:
        """A record of this request failed and was skipped: the future fails when the request is done."""
        if self.error is None:
            self.error = error

    def finish(self) -> None:
        """Nothing from this input is left inside the network (called once, by the engine)."""
        self._settle(self.error)

    def abandon(self, error: BaseException) -> None:
        """The run ended before this request was done: its future fails with ``error``."""
        self._settle(error)

    def _settle(self, error: BaseException | None) -> None:
        if self.finished:
            return
        self.finished = True
        future = self.future
        try:
            if future is not None and not future.done():
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(self.outputs)
        except InvalidStateError:  # cancelled by its holder meanwhile
            pass
        finally:
            if self.on_done is not None:
                self.on_done(self)


__all__ = ["NO_INPUT_YET", "NoInput", "Request", "current_request", "set_current_request"]
