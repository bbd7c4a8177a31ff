"""Bounds on a run that keeps growing: what every engine checks, and the errors it raises.

A network can unfold without end by the language's rules: a star whose exit
patterns no record will ever match (a misspelt label), a feedback loop that
doubles its records.  The language calls that a network that does not
terminate; an engine that just ran on would take every byte of memory of the
machine.  So every run carries two bounds (:class:`Limits`):

* ``max_held``: the records in flight plus the state the network holds (star
  replicas unfolded, synchro-cells waiting, runtime entities alive) at any
  one time.  The default, :data:`DEFAULT_MAX_HELD`, is far above what the
  project's benchmark networks hold (fib(25) and the sieves keep a few
  thousand) and stops a diverging star within seconds, at a few hundred MB.
* ``memory_limit``: how far the process's resident memory may grow while
  the run goes (bytes; None: no limit).  It catches what counting does not:
  records that grow themselves (a tag squared again and again), boxes that
  keep state.

Past either bound the run stops with :func:`diverging`, an
:class:`~snet.errors.SNetRuntimeError` that names the star (or other
construct) that unfolded last, at its position, and the record that entered
it there: the usual cause is that record's labels against the star's exit
patterns.

A synchro-cell star needs no bound for its commonest divergence: a record
that fills every pattern of a fresh cell alone comes out of the cell
unchanged, fails the same exit test again before the next replica, and does
so for ever.  Both engines see that at once and raise :func:`unfolds_for_ever`.
"""

from __future__ import annotations

import os
import re

import attrs

from snet.errors import SNetRuntimeError
from snet.records import describe
from snet.source import Span

DEFAULT_MAX_HELD = 250_000
MEMORY_CHECK_S = 0.1  # seconds between two looks at the resident memory


@attrs.frozen
class Limits:
    """The bounds of one run: ``max_held`` (None: no bound) and ``memory_limit`` in bytes (None: none)."""

    max_held: int | None = DEFAULT_MAX_HELD
    memory_limit: int | None = None


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}


def parse_size(text: str) -> int:
    """``"512M"``, ``"2G"``, ``"1.5GiB"``, ``"100000"`` (bytes) as a number of bytes; ValueError otherwise."""
    m = _SIZE.fullmatch(text)
    if m is None:
        raise ValueError(f"not a size: {text!r} (a number of bytes, or with K, M, G or T: 512M, 2G)")
    size = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if size < 1:
        raise ValueError(f"not a size: {text!r} (it must be at least one byte)")
    return size


def resident_bytes() -> int:
    """The process's resident memory now (Linux: /proc/self/statm; elsewhere the peak, from getrusage)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _mb(n: int) -> str:
    return f"{n / 2 ** 20:.0f} MB"


def diverging(span: Span | None, record: dict | None, held: int | None = None, limit: int | None = None,
              grown: int | None = None, memory_limit: int | None = None) -> SNetRuntimeError:
    """The run passed ``max_held`` (``held`` of ``limit``) or its memory limit (``grown`` of ``memory_limit``).

    ``span`` and ``record``: the construct that unfolded last and the record
    that entered it there (None when nothing unfolded yet).
    """
    if grown is not None:
        what = (f"the run's memory grew by {_mb(grown)}, past its limit of {_mb(memory_limit or 0)} "
                f"(--memory-limit, memory_limit=)")
    else:
        what = (f"{held:,} records and replicas are held at once, past the bound of {limit:,} "
                f"(--max-held, max_held=)")
    where = "; the construct that keeps unfolding here was entered by the record " + describe(record) \
        if record is not None else ""
    return SNetRuntimeError(f"the network keeps growing and may never terminate: {what}{where} "
                            f"(does it match one of the exit patterns?)", span)


def unfolds_for_ever(span: Span | None, record: dict) -> SNetRuntimeError:
    """A record that fills every pattern of a fresh synchro-cell of a star alone and matches no exit pattern."""
    return SNetRuntimeError(
        f"the network cannot terminate: the record {describe(record)} fills every pattern of a synchro-cell of "
        f"the star alone and matches none of its exit patterns, so it unfolds the star for ever", span)


__all__ = ["DEFAULT_MAX_HELD", "Limits", "diverging", "parse_size", "resident_bytes", "unfolds_for_ever"]
