"""What every engine returns: an :class:`Execution`, an iterator over the output records.

Contract of every engine:

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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from snet.core.guard import GuardCounters
    from snet.errorpolicy import ErrorPolicy
    from snet.stats import RunStats

Record = dict[str, Any]  # label (S-Net spelling: "x", "<t>", "<#b>") -> value


class Execution:
    """A running network: iterate it for the outputs.

    Subclasses implement :meth:`__next__`; ``warnings`` collects the
    termination warnings, ``stats()`` returns what the engine measured.
    """

    #: the policy that skips failing records (``on_error`` other than "stop"), set by the caller that starts the run
    error_policy: "ErrorPolicy | None" = None
    #: the retry and timeout counters of the boxes given them (``box_timeout``, ``box_retries``), or None
    guards: "GuardCounters | None" = None

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self._releases: list = []  # what the run holds besides the engine (box process pools)

    def add_release(self, release) -> None:
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

    def ready(self) -> bool:
        """True when the next output is there already (``next`` will not wait for the network).

        A consumer that buffers its writes flushes when this is False, so
        whatever the network produced is visible before it waits for more.
        """
        return False

    def close(self) -> None:
        """Stop the run (if still going) and release its resources."""

    def stats(self) -> "RunStats":
        """Statistics of the run so far (see :mod:`snet.stats`)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        """``<snet.Execution front engine, 2 workers: 120 in, 118 out, 500 ms>``: the figures so far.

        The time is written as ``--stats`` and ``-v`` write it (:func:`snet.stats.format_duration`).
        """
        from snet.stats import format_duration

        try:
            s = self.stats()
        except Exception:  # an engine that measures nothing, or a run torn down
            return "<snet.Execution>"
        workers = f", {s.workers} worker{'s' if s.workers != 1 else ''}" if s.engine == "front" else ""
        return f"<snet.Execution {s.engine} engine{workers}: {s.records_in} in, {s.records_out} out, {format_duration(s.seconds)}>"

    def __enter__(self) -> "Execution":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
