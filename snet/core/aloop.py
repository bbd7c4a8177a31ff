"""The event loop that runs ``async def`` boxes: one per process, on a daemon thread of its own.

A box function that returns a coroutine is awaited there
(:func:`run_coroutine`): the calling worker waits for it without the GIL,
and the coroutines of all workers' calls run concurrently on the one loop,
so an I/O-bound async box (an HTTP call, a database query) overlaps with
the other workers' calls and with the loop's other tasks.  How many calls
of one box are in flight at once is bounded by the workers that can call it
(``workers`` and ``box_concurrency``), as for any box; see docs/boxes.md.
The loop is the runtime's own: a box never runs on the caller's loop
(an ``asession``'s), which must not be blocked.

An engine that overlaps the calls (FRONT) does not wait for each: it
submits them (:func:`submit`), and they are started and handed back in
batches (see :mod:`snet.core.batching`).  The submitted coroutines queue
up; the first one queued since the loop last took the queue schedules one
callback on the loop (one wake-up of its thread), which starts a task for
every coroutine queued by then.  Each task, done, adds its record's outcome
to a list that one callback per turn of the loop delivers to the workers.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import TYPE_CHECKING, Any, Coroutine

from snet.core.batching import Settled, deliver

if TYPE_CHECKING:  # asyncio is imported on first use: a run without async boxes does without it
    import asyncio

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def box_loop() -> asyncio.AbstractEventLoop:
    """The process's box event loop, started on first use."""
    global _loop
    import asyncio

    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=serve, name="snet-async-boxes", daemon=True).start()
            ready.wait()
            _loop = loop
        return _loop


def run_coroutine(coroutine: Coroutine) -> Any:
    """Await ``coroutine`` on the box loop and return its result (raise its exception) in this thread."""
    import asyncio

    return asyncio.run_coroutine_threadsafe(coroutine, box_loop()).result()


_submitted: deque = deque()  # (coroutine, entity, seq, item) not yet started on the loop
_finished: list = []  # (entity, (seq, item, outcome)) of calls done on the loop, not yet delivered
_draining = False  # a callback that starts the submitted calls is scheduled on the loop
_flushing = False  # a callback that delivers the finished calls is scheduled (only the loop's thread sets it)


def submit(coroutine: Coroutine, entity: Any, seq: int, item: Any) -> None:
    """Start ``coroutine`` on the box loop; its outcome goes to ``entity.deliver`` (see snet.core.batching).

    Any thread may call it.  Only the first call queued since the loop last
    took the queue wakes the loop's thread.
    """
    global _draining
    _submitted.append((coroutine, entity, seq, item))
    if not _draining:
        with _lock:
            if _draining:
                return
            _draining = True
        box_loop().call_soon_threadsafe(_start_submitted)


def _start_submitted() -> None:
    """On the loop: a task for every queued call (the flag drops first, so a call queued meanwhile wakes it again)."""
    global _draining
    import asyncio

    with _lock:
        _draining = False
    loop = asyncio.get_running_loop()
    take = _submitted.popleft
    while _submitted:
        try:
            coroutine, entity, seq, item = take()
        except IndexError:
            break
        loop.create_task(_settle(coroutine, entity, seq, item))


async def _settle(coroutine: Coroutine, entity: Any, seq: int, item: Any) -> None:
    """Await one call and queue its outcome for delivery (whatever the box raised is its record's failure)."""
    global _flushing
    import asyncio

    try:
        outcome = await coroutine
        if type(outcome) is Settled:
            outcome = Settled(True, outcome)  # (a result that reads as an outcome: wrapped)
    except BaseException as e:
        outcome = Settled(False, e)
    _finished.append((entity, (seq, item, outcome)))
    if not _flushing:
        _flushing = True
        asyncio.get_running_loop().call_soon(_flush)


def _flush() -> None:
    """On the loop, after the turn's tasks: deliver every call finished since the last delivery."""
    global _finished, _flushing
    _flushing = False
    finished, _finished = _finished, []
    deliver(finished)


__all__ = ["box_loop", "run_coroutine", "submit"]
