"""What runs in a box process: the box's function, called for each message from its pipe.

The parent's side (the pools, the dispatchers of batched calls, what
travels and how) is :mod:`snet.core.processes`; this module is what a box
process runs (:func:`serve`), and the exception that stands for one that
cannot travel back.  The fork server preloads both.
"""

from __future__ import annotations

import inspect
import os
import pickle
import sys
import time
import traceback
from collections import abc
from typing import Any, Callable

from snet.core.boxes import end_forked_child, load_module_from_path

PROTOCOL = 5  # pickle protocol of arguments and answers (out-of-band buffers unused: one bytes object per message)


class RemoteBoxException(Exception):
    """Stands for an exception of a box process that cannot be pickled; reads as the original.

    ``kind`` is the original exception's type name, ``box`` the box's name.
    It pickles by its three fields, so it always reaches the parent.
    """

    __snet_traceback__: str  # set where raised: the box's frames in its process, read by BoxCaller._raised

    def __init__(self, kind: str, message: str, box: str = ""):
        super().__init__(message)
        self.kind = kind
        self.box = box

    def __reduce__(self) -> tuple:
        return type(self), (self.kind, str(self), self.box)


# -- in the worker process ----------------------------------------------------------------

_functions: dict[str, Callable] = {}
_pid = os.getpid()  # this process (a box process, or a child a box forked, sets its own below)


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def _start_process(path: list[str], shipped: dict[str, tuple]) -> None:
    """A process's start: the parent's import path, then its box's function."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it shuts the pool down
    for entry in reversed(path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    _functions.update(load_functions(shipped))


def load_functions(shipped: abc.Mapping[str, tuple]) -> dict[str, Callable]:
    """The functions of ``shipped`` (name -> ``shipped_function``'s tuple, snet.core.processes) in this process.

    The split processes (:mod:`snet.splitworker`) load their boxes with it too.
    """
    functions: dict[str, Callable] = {}
    for name, (kind, *detail) in shipped.items():
        if kind == "module":
            module_name, qualname = detail
            target: Any = __import__(module_name, fromlist=["_"])
            for part in qualname.split("."):
                target = getattr(target, part)
            functions[name] = target
        elif kind == "file":
            path_, attribute = detail
            # the same module name as in the parent (from the path's CRC): objects of classes defined in
            # the box file travel both ways by reference
            functions[name] = getattr(load_module_from_path(path_), attribute)
        else:
            functions[name] = pickle.loads(detail[0])
    return functions


def serve(connection: Any, path: list[str], shipped: dict[str, tuple], max_memory: int | None = None) -> None:
    """A box process: answer each message from the pipe, until the pipe ends.

    A message is one call ``(args, kwargs)``, answered with ``_answer``'s
    pair; a batch, a list of calls, answered with ``(seconds in the box,
    [pair, ...])`` (see ``_answer_batch``); or None, which asks for the
    answers of the last batch again, each pickled on its own.
    """
    _start_process(path, shipped)
    (name,) = shipped
    loads, recv, send = pickle.loads, connection.recv_bytes, connection.send_bytes
    last: list = []
    while True:
        try:
            data = recv()
        except (EOFError, OSError):
            return  # the run is over
        try:
            message = loads(data)
        except Exception as e:  # e.g. a value of a class defined in the caller's main script
            message = (f"its arguments cannot be read in the box process: {type(e).__name__}: {e} (a value of a class "
                       f"the process cannot import, such as one defined in the main script, cannot travel)")
            answer = pickle.dumps((False, (RemoteBoxException(type(e).__name__, message, name),
                                           f"{type(e).__name__}: {message}\n")), PROTOCOL)
        else:
            if type(message) is list:
                last = _outcomes(name, message, max_memory)
                answer = _answer_batch(name, last)
            elif message is None:
                answer = pickle.dumps([pickle.dumps(outcome, PROTOCOL) for outcome in last], PROTOCOL)
            else:
                args, kwargs = message
                answer = _answer(name, args, kwargs)
        try:
            send(answer)
        except (EOFError, OSError):
            return


def _answer(name: str, args: tuple, kwargs: dict) -> bytes:
    """One call in the process, pickled: ``(True, results)`` or ``(False, (exception or stand-in, traceback))``."""
    outcome = _outcome(name, args, kwargs)
    try:
        return pickle.dumps(outcome, PROTOCOL)
    except Exception as e:  # a result that cannot be pickled: the box's failure, as in process
        return pickle.dumps(_unsendable(name, e), PROTOCOL)


def _outcomes(name: str, calls: list, max_memory: int | None) -> list:
    """The outcomes of a batch's calls, in order; with a memory limit, it stops after the call that passes it."""
    outcomes: list = []
    started = time.perf_counter()
    for args, kwargs in calls:
        outcomes.append(_outcome(name, args, kwargs))
        if max_memory is not None and resident_bytes(os.getpid()) > max_memory:
            break  # the parent replaces this process and sends the rest to another
    outcomes.append(time.perf_counter() - started)  # (taken off by _answer_batch)
    return outcomes


def _answer_batch(name: str, outcomes: list) -> bytes:
    """A batch's outcomes (their box time last), pickled as ``(seconds, results, failures)``.

    ``results`` has one entry per call answered, None for a failed one;
    ``failures`` the ``(index, (exception, traceback))`` of those.  A
    result that cannot be pickled fails its own call only.
    """
    work = outcomes.pop()
    try:
        return pickle.dumps(_batch_reply(work, outcomes), PROTOCOL)
    except Exception:
        for i, outcome in enumerate(outcomes):
            try:
                pickle.dumps(outcome, PROTOCOL)
            except Exception as e:
                outcomes[i] = _unsendable(name, e)
        return pickle.dumps(_batch_reply(work, outcomes), PROTOCOL)


def _batch_reply(work: float, outcomes: list) -> tuple:
    results = [value if ok else None for ok, value in outcomes]
    failures = [(i, value) for i, (ok, value) in enumerate(outcomes) if not ok]
    return work, results, failures


def _unsendable(name: str, error: Exception) -> tuple:
    message = f"its result cannot be sent back from the box process: {type(error).__name__}: {error}"
    return (False, (RemoteBoxException(type(error).__name__, message, name), f"{type(error).__name__}: {message}\n"))


def _outcome(name: str, args: tuple, kwargs: dict) -> tuple:
    """One call in the process: ``(True, results)`` or ``(False, (exception or stand-in, traceback))``."""
    pid = _pid
    try:
        result = _functions[name](*args, **kwargs)
        if _pid != pid:  # a child the box forked, back from the call: it must not answer for the box
            end_forked_child(name)
        if type(result) is not dict and result is not None:
            if inspect.iscoroutine(result):
                import asyncio

                result = asyncio.run(result)
            if result is not None and not isinstance(result, (abc.Mapping, str, bytes)) and hasattr(result, "__iter__"):
                result = list(result)  # a generator cannot travel; its exceptions are the box's too
    except BaseException as e:
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None  # drop this frame
        text = "".join(traceback.format_exception(type(e), e, tb))
        try:
            data = pickle.dumps(e, PROTOCOL)
            pickle.loads(data)  # an exception whose __init__ wants other arguments pickles but does not load
            carried: BaseException = e
        except Exception:
            carried = RemoteBoxException(type(e).__name__, str(e), name)
        return (False, (carried, text))
    return (True, result)


def resident_bytes(pid: int | None) -> int:
    """The resident memory of process ``pid`` (Linux ``/proc``; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


__all__ = ["PROTOCOL", "RemoteBoxException", "resident_bytes", "serve"]
