"""The engine contract: what an engine is given, what it returns, and what it declares.

An engine is an :class:`Engine`: a name, its ``start(plan, records,
options, *, error_policy, guards)`` function, and the capabilities that
change how the plan is lowered for it (``overlaps_async_boxes``).
:func:`snet.backends.start` lowers the program for the engine it chose
and calls ``start``, which returns an :class:`Execution`: an iterator
over the output records.

The input stream
================

``records`` is an iterable of three kinds of items (:data:`Input`):

* a record: a mapping from labels to values (S-Net spelling: ``"x"``,
  ``"<t>"``, ``"<#b>"``); an engine may copy it into a ``dict``;
* a :class:`~snet.requests.Request`: one *tracked* input (``Session.submit``,
  a bounded ``Session.feed``).  The engine runs ``request.record`` like any
  record, follows every record that comes from it, gives the outputs to
  ``request.outputs`` when that is a list (else they join the output
  stream), reports a record of it skipped by the error policy with
  ``request.failed(error)`` (the error policy does so for skipped records
  through :func:`~snet.requests.current_request`: the engine calls
  :func:`~snet.requests.set_current_request` while it processes the
  request's records) and calls ``request.finish()`` once
  nothing from it is left in the network (:mod:`snet.requests` says what
  "comes from" means).  An engine that ignores requests leaves futures
  hanging;
* :data:`~snet.requests.NO_INPUT_YET`: the stream has nothing now but may
  have more later (a session waiting for its caller).  The engine goes on
  with the work it has and asks again; it does not count it as an input,
  and it must not block on the iterator while records are inside.  A
  split executor's partial batch is work it has: run it then (a run that
  takes checkpoints says "nothing yet" when a snapshot is due, and the
  snapshot waits for the batch).

Contract of every execution
===========================

* Input is pulled lazily from the iterable; an exception raised by the
  iterable (a malformed record, say) is re-raised from the execution's
  iterator *after* every output produced before it has been yielded.
* A run-time error (:class:`~snet.errors.SNetRuntimeError`) stops the run
  promptly; the outputs that reached the network's output first are yielded,
  then the error is raised.
* When the iterator is exhausted, the network has terminated: termination
  warnings (unfinished synchro-cells) are in :attr:`Execution.warnings`.
* :meth:`Execution.close` stops a run early and releases every thread;
  it is safe to call twice and after an error.
* The run's error policy and box guards are given to the execution when it
  is made (they are already inside the plan's operators; the execution
  only reports their figures: :attr:`Execution.failures`, ``stats()``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Protocol, Union

import attrs

from snet.requests import NoInput, Request

if TYPE_CHECKING:
    from snet.core.guard import GuardCounters
    from snet.errorpolicy import ErrorPolicy
    from snet.options import RunOptions
    from snet.plan import Plan
    from snet.stats import RunStats

Record = dict[str, Any]  # label (S-Net spelling: "x", "<t>", "<#b>") -> value

#: one item of an engine's input stream (see the module docstring)
Input = Union[Mapping[str, Any], Request, NoInput]


class StartEngine(Protocol):
    """An engine's ``start``: run ``plan`` over ``records`` with ``options``; returns the execution."""

    def __call__(self, plan: Plan, records: Iterable[Input], options: RunOptions | None = None, *,
                 error_policy: ErrorPolicy | None = None, guards: GuardCounters | None = None) -> Execution: ...


@attrs.frozen
class Engine:
    """An engine and what it declares about itself.

    ``overlaps_async_boxes``: the engine overlaps the calls of ``async def``
    boxes, so their plans are lowered ``deferred`` (a call returns a
    :class:`~snet.core.boxes.Deferred`, ``call.resume`` gives the outputs);
    an engine without it has each call awaited in place.
    """

    name: str
    start: StartEngine
    overlaps_async_boxes: bool = False


class Execution:
    """A running network: iterate it for the outputs.

    Subclasses implement :meth:`__next__`; ``warnings`` collects the
    termination warnings, ``stats()`` returns what the engine measured.
    """

    def __init__(self, *, error_policy: ErrorPolicy | None = None, guards: GuardCounters | None = None) -> None:
        self.warnings: list[str] = []
        #: the policy that skips failing records (``on_error`` other than "stop"), or None
        self.error_policy = error_policy
        #: the retry and timeout counters of the boxes given them (``box_timeout``, ``box_retries``), or None
        self.guards = guards
        self._releases: list[Callable[[], object]] = []  # what the run holds besides the engine (box pools)

    def add_release(self, release: Callable[[], object]) -> None:
        """Call ``release()`` when the run ends or is closed (see :meth:`release`)."""
        self._releases.append(release)

    def release(self) -> None:
        """Release what :meth:`add_release` registered; engines call it from ``close`` and at the end."""
        while self._releases:
            self._releases.pop()()

    @property
    def failures(self) -> int:
        """Records that failed in a box or a filter and were skipped (``on_error="skip"`` or a callable)."""
        return self.error_policy.failures if self.error_policy is not None else 0

    def __iter__(self) -> Iterator[Record]:
        return self

    def __next__(self) -> Record:  # pragma: no cover - abstract
        raise NotImplementedError

    def iterate(self, on_end: Callable[[BaseException], object]) -> Iterator[Record]:
        """The outputs, as iterating the execution gives them, with ``on_end(e)`` called once at their end.

        ``e`` is the ``StopIteration`` that ends them or the run's error
        (raised after the call); a caller that leaves the loop early ends
        nothing.  Engines may give a cheaper iterator than this generator.
        """
        while True:
            try:
                record = next(self)
            except StopIteration as e:
                on_end(e)
                return
            except BaseException as e:
                on_end(e)
                raise
            # (not ``yield from self``: leaving the loop would close the execution, and the run may go on)
            yield record

    def ready(self) -> bool:
        """True when the next output is there already (``next`` will not wait for the network).

        A consumer that buffers its writes flushes when this is False, so
        whatever the network produced is visible before it waits for more.
        """
        return False

    def close(self) -> None:
        """Stop the run (if still going) and release its resources."""

    def stats(self) -> RunStats:
        """Statistics of the run so far (see :mod:`snet.stats`)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        """``<snet.Execution front engine, 1 of 18 workers active: 120 in, 118 out, 500 ms>``: the figures so far.

        The time is written as ``--stats`` and ``-v`` write it (:func:`snet.statsview.format_duration`).
        """
        from snet.statsview import format_duration, workers_phrase

        try:
            s = self.stats()
        except Exception:  # an engine that measures nothing, or a run torn down
            return "<snet.Execution>"
        return (f"<snet.Execution {s.engine} engine{workers_phrase(s)}: {s.records_in} in, {s.records_out} out, "
                f"{format_duration(s.seconds)}>")

    def __enter__(self) -> Execution:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Engine", "Execution", "Input", "Record", "StartEngine"]
