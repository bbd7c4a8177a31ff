"""Work in a forked child process, so that a box that kills its process kills only the child.

A box that calls ``os._exit``, segfaults in an extension or is killed by the
kernel takes its process with it, and whoever waited on that process learns
neither the box nor the record.  A :class:`Child` runs ``body()`` in a
process forked for it, which tells its parent what it does with typed
messages over a pipe (:func:`send`: :class:`Item` before a record,
:class:`BoxCall` before a box call, when the boxes are wrapped by
:func:`announcing`, outputs, results: any picklable value); when the child
dies, the parent knows the record and the box call it died in, and
:func:`how` it ended.  Spark's crash diagnoses and salvage job
(:mod:`snet.spark`) work this way.
"""

from __future__ import annotations

import functools
import inspect
import os
import pickle
import signal
import struct
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator

HEADER = struct.Struct("!I")
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass(frozen=True, slots=True)
class Item:  # a record is about to be fed (``key``: the caller's name for it)
    key: Any


@dataclass(frozen=True, slots=True)
class BoxCall:  # a box is about to be called on these arguments (``label=value, ...``)
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Output:  # one output record, as it is made
    record: dict


@dataclass(frozen=True, slots=True)
class Done:  # the body has ended
    pass


@dataclass(frozen=True, slots=True)
class Stopped:  # the network stopped with a run-time error (the outputs before it stand)
    reason: str


@dataclass(frozen=True, slots=True)
class Failed:  # a Python error in the body itself (exit status 70), not what kills a worker
    traceback: str


_CHANNEL: list[tuple[int, Callable[[Any], bytes]]] = []  # the child's pipe and pickler, set after the fork


def in_child() -> bool:
    """True in a forked child (a box may ask: the test of Ctrl-C during a salvage does)."""
    return bool(_CHANNEL)


def frame(message: Any, dumps: Callable[[Any], bytes] = functools.partial(pickle.dumps, protocol=5)) -> bytes:
    """``message`` as it travels: its pickle (made by ``dumps``), length first."""
    data = dumps(message)
    return HEADER.pack(len(data)) + data


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send(message: Any) -> None:
    """Tell the parent ``message`` (nothing outside a child)."""
    if _CHANNEL:
        fd, dumps = _CHANNEL[0]
        write_all(fd, frame(message, dumps))


def messages(fd: int) -> Iterator[Any]:
    """The messages read from ``fd`` until it ends (or a message was cut short by the writer's death)."""
    buffer = bytearray()
    while chunk := os.read(fd, 1 << 16):
        buffer += chunk
        while len(buffer) >= HEADER.size:
            (size,) = HEADER.unpack_from(buffer)
            if len(buffer) < HEADER.size + size:
                break
            data = bytes(buffer[HEADER.size:HEADER.size + size])
            del buffer[:HEADER.size + size]
            try:
                yield pickle.loads(data)
            except Exception:
                return


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this child when the thread that forked it ends (Linux), so that a worker killed
    outright (a task stopped, an executor lost) does not leave it running a long box call."""
    try:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):  # no prctl here
        return
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(0)


def _child_main(fd: int, body: Callable[[], None], parent: int, dumps: Callable[[Any], bytes]) -> None:
    status = 0
    try:
        _die_with_parent(parent)
        _CHANNEL.append((fd, dumps))
        body()
    except BaseException:
        try:
            write_all(fd, frame(Failed(traceback.format_exc()), dumps))
        except BaseException:
            pass
        status = 70
    finally:
        os._exit(status)


class Child:
    """``body()`` in a forked child; with ``feed``, ``body(fd)`` reads what the parent writes to ``feed_fd``;
    ``dumps`` pickles the child's messages (plain pickle by default)."""

    def __init__(self, body: Callable, feed: bool = False, dumps: Callable[[Any], bytes] | None = None):
        self.read_fd, write_fd = os.pipe()
        in_read, self.feed_fd = os.pipe() if feed else (-1, -1)
        parent = os.getpid()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child (its coverage is not collected)
            os.close(self.read_fd)
            if feed:
                os.close(self.feed_fd)
            _child_main(write_fd, functools.partial(body, in_read) if feed else body, parent,
                        dumps or functools.partial(pickle.dumps, protocol=5))
        os.close(write_fd)
        if feed:
            os.close(in_read)

    def messages(self) -> Iterator[Any]:
        return messages(self.read_fd)

    def close_feed(self) -> None:
        if self.feed_fd >= 0:
            os.close(self.feed_fd)
            self.feed_fd = -1

    def end(self, kill: bool = False) -> int:
        """Close the pipes, kill the child with ``kill`` (it may be in a box call for a while yet), wait for it;
        its wait status."""
        self.close_feed()
        os.close(self.read_fd)
        if kill:
            os.kill(self.pid, signal.SIGKILL)
        return os.waitpid(self.pid, 0)[1]


def how(status: int) -> str:
    """How a child ended, in words."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit status {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else f"wait status {status}"


def shown(value: Any, limit: int = 80, record: bool = False) -> str:
    """``value`` in one line of at most ``limit`` characters; a ``record`` in its JSON Lines form."""
    from snet.recordio.jsonl import format_record_jsonl

    try:
        text = (format_record_jsonl(value) if value is not None else "?") if record else repr(value)
    except Exception:
        text = shown(value, limit) if record else f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def announcing(name: str, labels: tuple[str, ...], function: Callable) -> Callable:
    """``function`` that first sends a :class:`BoxCall` (in a child; elsewhere it only calls)."""

    def announce(args, kwargs):
        if _CHANNEL:
            parts = [f"{label}={shown(value)}" for label, value in zip(labels, args)]
            parts += [f"{key}={shown(value)}" for key, value in kwargs.items()]
            send(BoxCall(name, ", ".join(parts)))

    if inspect.iscoroutinefunction(function):
        @functools.wraps(function)
        async def wrapped_async(*args, **kwargs):
            announce(args, kwargs)
            return await function(*args, **kwargs)
        return wrapped_async

    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        announce(args, kwargs)
        return function(*args, **kwargs)
    return wrapped


def announcing_table(graph, table: dict[str, Callable]) -> dict[str, Callable]:
    """The box table of ``graph`` with every box :func:`announcing` its calls."""
    from snet.spg.nodes import BoxNode

    labels = {n.name: n.arguments for n in graph.nodes if isinstance(n, BoxNode)}
    return {name: announcing(name, labels.get(name, ()), f) for name, f in table.items()}


def box_span(graph, name: str):
    """The position of box ``name`` in ``graph`` (None when it has none)."""
    from snet.spg.nodes import BoxNode

    return next((n.span for n in graph.nodes if isinstance(n, BoxNode) and n.name == name), None)
