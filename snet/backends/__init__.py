"""Engines: the interface every engine implements, and the registry.

An engine takes a compiled program (:class:`~snet.spg.nodes.PropertyGraph`),
the bound box functions and an iterable of input records, and returns an
:class:`Execution`: an iterator over the output records, streamed as they
reach the network's output.

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

import importlib
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from snet.errors import SNetUsageError
from snet.options import RunOptions  # re-exported: engines and callers import it from here
from snet.spg.nodes import PropertyGraph

if TYPE_CHECKING:
    from snet.stats import RunStats

Record = dict


class Execution:
    """A running network: iterate it for the outputs.

    Subclasses implement :meth:`__next__`; ``warnings`` collects the
    termination warnings, ``stats()`` returns what the engine measured.
    """

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def __iter__(self) -> Iterator[Record]:
        return self

    def __next__(self) -> Record:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        """Stop the run (if still going) and release its resources."""

    def stats(self) -> "RunStats":
        """Statistics of the run so far (see :mod:`snet.stats`)."""
        raise NotImplementedError

    def __enter__(self) -> "Execution":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# engine name -> "module:function"; the function has the signature of `start`.
ENGINES: dict[str, str] = {
    "reference": "snet.reference:start",
    "front": "snet.backends.front:start",
}
DEFAULT_ENGINE = "front"  # passes every conformance case with 1, 2 and 4 workers


def engine_names() -> list[str]:
    return sorted(ENGINES)


def start(engine: str | None, graph: PropertyGraph, boxes: dict[str, Callable], records: Iterable[Record],
          options: RunOptions | None = None) -> Execution:
    """Start ``graph`` on ``engine`` over ``records``; returns the execution to iterate."""
    name = engine or DEFAULT_ENGINE
    target = ENGINES.get(name)
    if target is None:
        raise SNetUsageError(f"unknown engine '{name}' (engines: {', '.join(engine_names())})")
    module_name, function = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SNetUsageError(f"engine '{name}' is not available: {e}") from e
    return getattr(module, function)(graph, boxes, records, options or RunOptions())
