"""Batched boundaries: calls that leave the worker threads travel in batches, and come back in bulk.

Two kinds of box calls finish outside FRONT's workers: the calls of an
``async def`` box (on the box loop, :mod:`snet.core.aloop`) and, with
``box_processes``, the calls of a box in its process pool
(:mod:`snet.core.processes`).  Handing each call over on its own costs a
thread wake-up, and for a box process a pipe round trip and two picklings,
per record: tens of microseconds, many times a cheap box's own work.  So a
worker that calls such a box only *submits* the call (the box entity
numbers the record first, see ``AsyncBoxEntity`` in ``snet_front``): the
call joins a queue and the worker goes on.  On the other side the calls
are taken in batches:

* the box loop starts every coroutine submitted since its last wake-up in
  one callback, and the calls that finish in one turn of the loop are handed
  back to the workers in one delivery (one lock, one wake-up);
* a box process's dispatcher thread takes up to a batch of queued calls,
  pickles their arguments together, sends them down the process's pipe in
  one message and reads all their answers in one, each answer its record's
  own: its result, or its exception, with the box's traceback in the
  process.

A failure stays the failure of its record: the error policy (``on_error``)
sees each failing record alone, as without batching, and the outputs keep
the input order (the entity's reorder buffer).  What cannot go in a batch
goes one call at a time as before: the records of a batch whose process
died or whose message could not be read there are sent again one by one,
so only a record that kills its process fails (a box with side effects may
see the records before it twice, as with a process that died before
answering); a box given a timeout or retries is called one record at a
time, so its timeout and its attempts are its record's own.

How big a batch: :class:`BatchSizer` measures each round trip of a process
box against the box's own time in it (the process reports it) and doubles
the batch while the round trip's overhead is more than ``OVERHEAD_SHARE``
of it, halving it when the overhead falls far below, up to ``MAX_BATCH``.
A slow box so stays at one record a batch, its calls spread over all its
processes; a trivial box grows to large batches.  A dispatcher never holds
calls back for long: it sends what is queued when the batch is full, when
no call arrived in the last ``QUIET`` seconds (the stream is quiet, so more
input is not coming soon), or after ``LINGER`` seconds at most, so a
record's latency grows by at most ``LINGER``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

#: the share of a round trip that may go to overhead (transfers, pickling, wake-ups) before batches grow
OVERHEAD_SHARE = 0.05
#: the largest batch of calls one message carries
MAX_BATCH = 512
#: seconds a dispatcher waits at most for a batch to fill
LINGER = 0.0005
#: a dispatcher sends what it has when no call arrived for this long
QUIET = 0.00005


class Settled:
    """A call's failure (or a result that must not be taken for one): ``result()`` raises its exception or gives its value.

    The outcome of a call finished outside the workers is what the box
    returned, as it is, or a Settled: a result costs no object of its own.
    """

    __slots__ = ("ok", "value")

    def __init__(self, ok: bool, value: Any):
        self.ok = ok
        self.value = value

    def result(self) -> Any:
        if self.ok:
            return self.value
        raise self.value


def deliver(finished: list) -> None:
    """Hand finished calls ``[(entity, (seq, record item, outcome)), ...]`` to their entities, one delivery each.

    An entity's ``deliver`` takes the list of its calls' ``(seq, item,
    outcome)``, queues it for the workers as one piece of work and wakes one
    (see ``AsyncBoxEntity`` in ``snet_front``).  Calls of several entities
    (box instances, runs) are grouped so that each gets one delivery.
    """
    groups: dict = {}
    for entity, call in finished:
        calls = groups.get(entity)
        if calls is None:
            groups[entity] = calls = []
        calls.append(call)
    for entity, calls in groups.items():
        entity.deliver(calls)


class BatchSizer:
    """The batch size of one box's calls, set from the measured cost of its round trips.

    ``measured(n, round_trip, work)``: a batch of ``n`` calls took
    ``round_trip`` seconds from sending to its answers read, ``work`` of
    them in the box's own code.  The overhead's share is what is not the
    box's work.  While it is above ``OVERHEAD_SHARE`` and the batch was
    full, the size doubles (up to ``MAX_BATCH``); below a quarter of it,
    the size halves (down to 1).
    """

    __slots__ = ("size", "limit", "_lock")

    def __init__(self, limit: int = MAX_BATCH):
        self.size = 1
        self.limit = max(1, limit)
        self._lock = threading.Lock()

    def measured(self, n: int, round_trip: float, work: float) -> None:
        if round_trip <= 0:
            return
        share = max(0.0, round_trip - work) / round_trip
        with self._lock:
            if share > OVERHEAD_SHARE:
                if n >= self.size and self.size < self.limit:
                    self.size = min(self.limit, self.size * 2)
            elif share < OVERHEAD_SHARE / 4 and self.size > 1:
                self.size = max(1, self.size // 2)


def gather(pending: Any, size: int, closed: Any) -> list:
    """Take up to ``size`` queued calls from ``pending`` (a deque), lingering briefly for a batch to fill.

    Called with at least one call queued.  Waits while the queue grows, at
    most ``LINGER`` seconds, and not at all once no call arrived for
    ``QUIET`` seconds; ``closed()`` ends the wait.
    """
    if len(pending) < size:
        deadline = time.perf_counter() + LINGER
        seen = len(pending)
        while not closed():
            time.sleep(QUIET)
            now = len(pending)
            if now >= size or now == seen or time.perf_counter() >= deadline:
                break
            seen = now
    batch = []
    popleft = pending.popleft
    try:
        for _ in range(size):
            batch.append(popleft())
    except IndexError:
        pass
    return batch


__all__ = ["BatchSizer", "LINGER", "MAX_BATCH", "OVERHEAD_SHARE", "QUIET", "Settled", "deliver", "gather"]
