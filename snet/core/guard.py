"""Per-box timeouts and retries (``box_timeout``, ``box_retries``; ``--box-timeout``, ``--box-retries``).

A box given a timeout or retries is called through a stand-in that has the
box function's signature (``functools.wraps``), so argument binding, output
checks and flow inheritance (``BoxCaller``) do not change, and both engines
use it alike.  A box given neither is called as before: nothing is added to
its path.

One call of a guarded box is one or more *attempts*:

* **Timeout.** An attempt that has not returned after ``timeout`` seconds
  is abandoned: the call fails with :class:`BoxTimeout` ("timed out after
  N s") and the worker goes on with other records.  A plain box runs each
  attempt in a helper thread (a daemon thread, so an abandoned attempt never
  holds up the end of the process); Python cannot stop a thread, so the
  abandoned attempt runs on until the box returns, its result discarded.
  (The helper threads are reused from one attempt to the next.)
  A box given processes (``box_processes``) runs in its process as before;
  the process of an attempt that passed its timeout is terminated and a
  fresh one takes its place.  An ``async def`` box's coroutine is
  cancelled.  A generator box's outputs are collected inside the attempt,
  so the timeout covers them.
* **Retries.** An attempt that raises (or times out) is tried again, up to
  ``retries`` more times, after ``backoff`` seconds, doubling each time
  (``backoff``, ``2 * backoff``, ``4 * backoff``...).  The worker that made
  the call waits out the backoff; other workers go on meanwhile.  Only
  what the box raises is retried: a result that fits none of the box's
  output variants is a mistake in the box that a second try would repeat,
  and fails the record at once.  When the attempts are spent, the last
  error goes to the error policy (``on_error``), carrying the number of
  attempts (``attempts`` in the error record).

The stand-ins count retries and timeouts per box (:class:`GuardCounters`),
which ``stats()`` reports beside each box's calls.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
import time
from collections.abc import Mapping
from types import CoroutineType, GeneratorType
from typing import Any, Callable

from snet.core.aloop import run_coroutine
from snet.errors import SNetUsageError
from snet.spg.nodes import BoxNode

#: seconds before the first retry when ``box_retries`` gives no backoff
DEFAULT_BACKOFF = 0.1


class BoxTimeout(TimeoutError):
    """A box call that did not return within its box's timeout."""

    def __init__(self, box: str, seconds: float):
        super().__init__(f"timed out after {seconds:g} s")
        self.box = box
        self.seconds = seconds


class Guard:
    """The timeout (seconds or None) and the retries (count, first backoff in seconds) of one box."""

    __slots__ = ("timeout", "retries", "backoff")

    def __init__(self, timeout: float | None, retries: int = 0, backoff: float = DEFAULT_BACKOFF):
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1, 2, ...): the backoff, doubling."""
        return self.backoff * 2 ** (attempt - 1)


class GuardCounters:
    """Retries and timeouts of each guarded box, counted from any thread."""

    def __init__(self, names: list[str]):
        self._lock = threading.Lock()
        self._counts = {name: [0, 0] for name in names}  # name -> [retries, timeouts]

    def retried(self, box: str) -> None:
        with self._lock:
            self._counts[box][0] += 1

    def timed_out(self, box: str) -> None:
        with self._lock:
            self._counts[box][1] += 1

    def table(self) -> dict[str, tuple[int, int]]:
        """box name -> (retries, timeouts), for every guarded box."""
        with self._lock:
            return {name: (r, t) for name, (r, t) in self._counts.items()}

    def take(self) -> dict[str, tuple[int, int]]:
        """What :meth:`table` says, the counters then set back to zero (a split process's figures since its
        last batch)."""
        with self._lock:
            counts, self._counts = self._counts, {name: [0, 0] for name in self._counts}
        return {name: (r, t) for name, (r, t) in counts.items()}


def guards_for(graph: Any, options: Any) -> dict[str, Guard]:
    """The guard of each box of ``graph`` that the run options or the box's metadata give a timeout or retries.

    A setting for the box by name (``NAME=`` on the command line, a mapping
    in the API) comes first, then the box's metadata (``<timeout>``,
    ``<retries>``), then the run's default for every box.
    """
    written = box_metadata(graph)
    out = {}
    for name in sorted(graph.used_boxes()):
        meta_timeout, meta_retries = written.get(name, (None, None))
        timeout = options.box_timeout_per_box.get(name, meta_timeout)
        timeout = options.box_timeout if timeout is None else timeout
        retries = options.box_retries_per_box.get(name, meta_retries)
        retries = options.box_retries if retries is None else retries
        if timeout is None and (retries is None or retries[0] == 0):
            continue  # nothing to guard: the box is called as it is
        count, backoff = retries if retries is not None else (0, DEFAULT_BACKOFF)
        out[name] = Guard(timeout, count, backoff)
    return out


def box_metadata(graph: Any) -> dict[str, tuple[float | None, tuple[int, float] | None]]:
    """The ``<timeout>`` and ``<retries>`` metadata of each box that has them (language.md §16).

    ``<timeout>SECONDS</timeout>`` and ``<retries>N</retries>`` or
    ``<retries>N,BACKOFF</retries>``, the forms of the command line.

    Raises:
        SNetUsageError: a value that is not of that form, or two occurrences
            of one box with different values; the message gives the box's
            position.
    """
    found: dict[str, tuple] = {}
    where: dict[str, Any] = {}
    for node in graph.nodes:
        if not isinstance(node, BoxNode) or not ({"timeout", "retries"} & set(node.metadata)):
            continue
        at = f"{node.span.location}: " if node.span is not None else ""
        try:
            setting = (_metadata_timeout(node.metadata.get("timeout")), _metadata_retries(node.metadata.get("retries")))
        except ValueError as e:
            raise SNetUsageError(f"{at}error: metadata of box '{node.name}': {e}") from None
        if found.setdefault(node.name, setting) != setting:
            first = where[node.name]
            raise SNetUsageError(f"{at}error: box '{node.name}' has other <timeout> or <retries> metadata here than "
                                 f"at {first.location if first is not None else 'its other occurrence'}; one box "
                                 f"has one setting")
        where.setdefault(node.name, node.span)
    return found


def _metadata_timeout(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise ValueError(f"<timeout> takes a number of seconds > 0, not '{text}'")
    return seconds


def _metadata_retries(text: str | None) -> tuple[int, float] | None:
    if text is None:
        return None
    count, comma, backoff = text.strip().partition(",")
    try:
        setting = (int(count), float(backoff) if comma else DEFAULT_BACKOFF)
    except ValueError:
        setting = (-1, 0.0)
    if setting[0] < 0 or not 0 <= setting[1] < float("inf"):
        raise ValueError(f"<retries> takes N or N,BACKOFF (N >= 0, BACKOFF >= 0 seconds), not '{text}'")
    return setting


def guard_boxes(graph: Any, boxes: Mapping[str, Callable], options: Any
                ) -> tuple[dict[str, Callable], GuardCounters | None]:
    """The box table with every guarded box replaced by its stand-in, and the counters (None: none guarded)."""
    return apply_guards(boxes, guards_for(graph, options))


def apply_guards(boxes: Mapping[str, Callable], guards: Mapping[str, Guard]
                 ) -> tuple[dict[str, Callable], GuardCounters | None]:
    """``boxes`` with each box of ``guards`` replaced by its stand-in, and their counters (None: no guard).

    Where a split's replicas run elsewhere (a split process, a Spark task)
    the executor sends ``guards`` along and the other side calls this on
    its own box table, so the boxes there keep their timeouts and retries.
    """
    if not guards:
        return dict(boxes), None
    counters = GuardCounters(sorted(guards))
    table = dict(boxes)
    for name, guard in guards.items():
        if name in table:
            table[name] = guarded(name, table[name], guard, counters)
    return table, counters


def guarded(name: str, function: Callable, guard: Guard, counters: GuardCounters) -> Callable:
    """``function`` behind its timeout and retries: a stand-in with its signature (see the module docstring)."""
    if inspect.iscoroutinefunction(function):
        return _guarded_async(name, function, guard, counters)
    attempt = _attempt(name, function, guard.timeout)

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        tries = 1
        while True:
            try:
                return attempt(args, kwargs)
            except BaseException as error:
                if isinstance(error, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
                    raise  # a Ctrl-C, not the box's failure
                if isinstance(error, BoxTimeout):
                    counters.timed_out(name)
                if tries > guard.retries:
                    setattr(error, "__snet_attempts__", tries)  # read by the error policy
                    raise
            counters.retried(name)
            time.sleep(guard.delay(tries))
            tries += 1

    return functools.wraps(function)(stand_in)


def _attempt(name: str, function: Callable, timeout: float | None) -> Callable[[tuple, dict], Any]:
    """One attempt of a call: ``attempt(args, kwargs)`` returns the result or raises."""
    if timeout is None:
        return lambda args, kwargs: _settled(function(*args, **kwargs))
    within = getattr(function, "call_within", None)  # a box process stand-in: its process is replaced
    if within is not None:
        return lambda args, kwargs: within(timeout, args, kwargs)
    return lambda args, kwargs: _in_thread(name, function, timeout, args, kwargs)


def _settled(result: Any) -> Any:
    """What a call returned, with the box's code run inside the attempt.

    A generator's outputs as a list; a coroutine (from a callable whose
    ``__call__`` is ``async def``, which is not seen as an async box)
    awaited on the box loop; anything else as it is.
    """
    if type(result) is GeneratorType:
        return list(result)
    if type(result) is CoroutineType:
        return run_coroutine(result)
    return result


class _Call:
    """One attempt in a helper thread: its outcome, and an event set when it is there."""

    __slots__ = ("function", "args", "kwargs", "result", "error", "done")

    def __init__(self, function: Callable, args: tuple, kwargs: dict):
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.result = None
        self.error: BaseException | None = None
        self.done = threading.Event()

    def __call__(self) -> None:
        try:
            self.result = _settled(self.function(*self.args, **self.kwargs))
        except BaseException as e:  # handed to the waiting worker, whatever it is
            self.error = e
        finally:
            self.done.set()


#: helper threads kept waiting for the next attempt, at most (more end when their attempt is done)
IDLE_HELPERS = 64

_idle: list = []  # helpers waiting for an attempt
_idle_lock = threading.Lock()
os.register_at_fork(after_in_child=_idle.clear)  # a forked child has none of the parent's threads


class _Helper:
    """A daemon thread that runs one attempt after another, and waits among the idle ones in between.

    Starting a thread per attempt would cost about as much as a small box
    call; a helper whose attempt was abandoned rejoins the idle ones when the
    box returns at last.
    """

    __slots__ = ("call", "wake")

    def __init__(self) -> None:
        self.call: _Call | None = None
        self.wake = threading.Lock()
        self.wake.acquire()  # released by `run`, once per attempt
        threading.Thread(target=self._serve, name="snet-box-call", daemon=True).start()

    def run(self, call: "_Call") -> None:
        self.call = call
        self.wake.release()

    def _serve(self) -> None:
        while True:
            self.wake.acquire()
            call, self.call = self.call, None
            assert call is not None  # `run` sets it before it releases `wake`
            call()
            del call  # drop the attempt's outcome before waiting for the next one
            with _idle_lock:
                if len(_idle) >= IDLE_HELPERS:
                    return
                _idle.append(self)


def _helper() -> _Helper:
    with _idle_lock:
        if _idle:
            return _idle.pop()
    return _Helper()


def _in_thread(name: str, function: Callable, timeout: float, args: tuple, kwargs: dict) -> Any:
    """Run one attempt in a daemon helper thread; raise :class:`BoxTimeout` when it passes ``timeout``."""
    call = _Call(function, args, kwargs)
    _helper().run(call)
    if not call.done.wait(timeout):
        raise BoxTimeout(name, timeout)  # the thread runs on; its outcome is dropped with `call`
    if call.error is not None:
        error, call.error = call.error, None
        raise error
    return call.result


def _guarded_async(name: str, function: Callable, guard: Guard, counters: GuardCounters) -> Callable:
    """The stand-in of an ``async def`` box: each attempt a task, cancelled when it passes the timeout."""
    import asyncio  # here: a run without async boxes does without it

    async def stand_in(*args: Any, **kwargs: Any) -> Any:
        tries = 1
        while True:
            task = asyncio.ensure_future(function(*args, **kwargs))
            done, _ = await asyncio.wait({task}, timeout=guard.timeout)
            if done:
                error = task.exception()
                if error is None:
                    return task.result()
            else:
                task.cancel()
                error = BoxTimeout(name, guard.timeout or 0.0)  # (set: a wait without one never ends here)
                counters.timed_out(name)
            if tries > guard.retries:
                setattr(error, "__snet_attempts__", tries)  # read by the error policy
                raise error
            counters.retried(name)
            await asyncio.sleep(guard.delay(tries))
            tries += 1

    return functools.wraps(function)(stand_in)


__all__ = ["BoxTimeout", "DEFAULT_BACKOFF", "Guard", "GuardCounters", "apply_guards", "guard_boxes", "guarded"]
