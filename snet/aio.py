"""asyncio fronts for sessions and runs: :class:`AsyncSession` and :func:`arun`.

Neither blocks the event loop nor takes a thread per request.  An
:class:`AsyncSession` is a :class:`snet.session.Session` whose runtime threads
report to the loop with ``call_soon_threadsafe``: each output goes to an
``asyncio.Queue``, each input that is done wakes the callers waiting for
room under ``max_pending``, and the end of the run wakes everyone.  A
submitted input's ``concurrent.futures.Future`` is awaited through
``asyncio.wrap_future``, which completes on the loop when the runtime sets
the result.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Mapping

from snet.errors import SNetUsageError
from snet.session import Session

if TYPE_CHECKING:
    from snet.options import RunOptions
    from snet.stats import RunStats

Record = dict
_END = object()


class _Listener:
    """What the runtime's threads tell the loop: outputs, room under ``max_pending``, the end.

    Holds the loop's queue and events but not the :class:`AsyncSession`, so
    an async session dropped without ``aclose()`` is collected (and its
    input ended, see :class:`snet.session.Session`).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.outputs: asyncio.Queue = asyncio.Queue()
        self.room_made = asyncio.Event()
        self.end_seen = asyncio.Event()
        self.taken = asyncio.Event()  # set whenever the consumer takes an output, and at the end

    def output(self, record: Record) -> None:
        try:
            self.loop.call_soon_threadsafe(self.outputs.put_nowait, record)
        except RuntimeError:  # the loop is closed: nobody takes outputs any more
            pass

    def room(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.room_made.set)
        except RuntimeError:
            pass

    def ended(self) -> None:
        def end() -> None:
            self.outputs.put_nowait(_END)
            self.room_made.set()
            self.end_seen.set()
            self.taken.set()  # a feed waiting for the consumer is refused now, not left waiting

        try:
            self.loop.call_soon_threadsafe(end)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass


class AsyncSession:
    """A session for asyncio code; create it inside a running event loop.

    ``await submit(record)`` gives the list of that input's outputs;
    ``await feed(record)`` hands in an input whose outputs come from
    ``await get()`` or ``async for``; ``await aclose()`` ends the input,
    waits for the network to terminate and returns the outputs not taken.
    The rules are those of :class:`snet.session.Session` (``max_pending``,
    ``on_error``, what an input's outputs are).
    """

    def __init__(self, network: Any, options: "RunOptions", max_pending: int | None = None,
                 checkpointing: Any = None):
        listener = _Listener(asyncio.get_running_loop())
        self._outputs = listener.outputs
        self._room = listener.room_made
        self._ended = listener.end_seen
        self._taken = listener.taken
        self._session = Session(network, options, max_pending, listener=listener, checkpointing=checkpointing)

    async def checkpoint(self, timeout: float | None = None) -> None:
        """Commit a snapshot of the session's state (``net.asession(checkpoint=DIR)``; see ``Session.checkpoint``).

        The wait for the quiescent point runs in the loop's default executor,
        so the loop goes on meanwhile (its callbacks, other requests' outputs).
        """
        await asyncio.get_running_loop().run_in_executor(None, self._session.checkpoint, timeout)

    # -- the API ---------------------------------------------------------------------

    async def _admit(self, record: Mapping, submit: bool, timeout: float | None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._room.clear()
            try:
                if submit:
                    return self._session.submit(record, timeout=0)
                return self._session.feed(record, timeout=0)
            except TimeoutError:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise
                try:
                    await asyncio.wait_for(self._room.wait(), left)
                except asyncio.TimeoutError:
                    raise TimeoutError(f"max_pending: {self._session.max_pending} inputs are inside the network "
                                       f"and none was done within {timeout} s") from None

    async def submit(self, record: Mapping, timeout: float | None = None) -> list[Record]:
        """The outputs of this input, once nothing from it is inside the network (see ``Session.submit``)."""
        future = await self._admit(record, True, timeout)
        return await asyncio.wrap_future(future)

    async def feed(self, record: Mapping, timeout: float | None = None) -> None:
        """Hand one input to the network; waits (without blocking the loop) while ``max_pending`` is reached.

        With ``max_pending`` set it also waits while that many outputs of
        fed inputs are not taken yet, so a slow consumer holds the input back.
        """
        bound = self._session.max_pending
        if bound is not None:
            while self._outputs.qsize() >= bound and not self._ended.is_set():
                self._taken.clear()
                try:
                    await asyncio.wait_for(self._taken.wait(), timeout)
                except asyncio.TimeoutError:
                    raise TimeoutError(f"max_pending: {bound} outputs wait for the consumer and none was taken "
                                       f"within {timeout} s") from None
        await self._admit(record, False, timeout)

    async def get(self, timeout: float | None = None) -> Record | None:
        """The next output of a fed input; None on timeout or after the end (then the run's error is raised)."""
        try:
            item = await asyncio.wait_for(self._outputs.get(), timeout)
            self._taken.set()
        except asyncio.TimeoutError:
            self._session._check()
            return None
        if item is _END:
            self._outputs.put_nowait(_END)
            self._session._check()
            return None
        return item

    def __aiter__(self) -> AsyncIterator[Record]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Record]:
        while True:
            item = await self._outputs.get()
            self._taken.set()
            if item is _END:
                self._outputs.put_nowait(_END)
                self._session._check()
                return
            yield item

    def end_input(self) -> None:
        """No more input: the network terminates once it has processed what it has."""
        self._session.end_input()

    async def aclose(self) -> list[Record]:
        """End the input, wait for the network to terminate, return the fed inputs' outputs not yet taken."""
        self.end_input()
        await self._ended.wait()
        self._taken.set()  # the outputs are taken below: a feed waiting for the consumer goes on, and is refused
        out = []
        while True:
            item = self._outputs.get_nowait()
            if item is _END:
                self._outputs.put_nowait(_END)
                break
            out.append(item)
        self._session._check()
        return out

    def abort(self) -> None:
        """Stop at once (see ``Session.abort``); open futures fail."""
        self._session.abort()

    def stats(self) -> "RunStats":
        """The session's figures so far (see ``Session.stats``)."""
        return self._session.stats()

    @property
    def metrics_url(self) -> str | None:
        """Where the session serves its figures (``metrics_port=``), or None."""
        return self._session.metrics_url

    @property
    def warnings(self) -> list[str]:
        return self._session.warnings

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            await self.aclose()
        else:
            self.abort()


async def arun(network: Any, records: Any, options: "RunOptions",
               max_pending: int | None) -> AsyncIterator[Record]:
    """The outputs of a run over ``records`` (an iterable or an async iterable); see ``Network.arun``."""
    if not (hasattr(records, "__aiter__") or isinstance(records, Iterable)):
        raise SNetUsageError(f"arun takes an iterable or an async iterable of records, not {type(records).__name__}")
    session = AsyncSession(network, options, max_pending)

    async def feed_all() -> None:
        try:
            if hasattr(records, "__aiter__"):
                async for record in records:
                    await session.feed(record)
            else:
                for record in records:
                    await session.feed(record)
        finally:
            session.end_input()  # also after an error of the source: the outputs before it come first

    feeder = asyncio.ensure_future(feed_all())
    try:
        async for out in session:
            yield out
        await feeder  # an error of the source is raised after the outputs before it
    finally:
        if not feeder.done():
            feeder.cancel()
            session.abort()


__all__ = ["AsyncSession", "arun"]
