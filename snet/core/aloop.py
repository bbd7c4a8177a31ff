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
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Coroutine

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def box_loop() -> asyncio.AbstractEventLoop:
    """The process's box event loop, started on first use."""
    global _loop
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
    return asyncio.run_coroutine_threadsafe(coroutine, box_loop()).result()


__all__ = ["box_loop", "run_coroutine"]
