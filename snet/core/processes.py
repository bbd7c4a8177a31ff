"""Box processes: the calls of chosen boxes run in a pool of worker processes (``processes=``).

On a CPython with the GIL, pure-Python boxes run one at a time whatever the
number of workers.  A box given processes is called through a
:class:`ProcessBox`: the worker thread that calls it sends the argument
values to a process of the box's pool and waits for the result without the
GIL, so as many calls run at once as there are workers calling the box
(its box concurrency, which defaults to its number of processes) and
processes to run them.  The box caller around it (``BoxCaller``) is the
same as for any box: argument binding, output checks, flow inheritance and
the order of the box's output stream do not change.

What travels to a process:

* the function, once per process, when it starts: by reference
  (module and name) when its module is importable there, by its file when
  it was loaded from a ``.py`` path, and by value (cloudpickle) when it
  lives in ``__main__`` or a notebook; the parent's ``sys.path`` goes first,
  so the box module's neighbours import in the process too;
* per call, the argument values (pickled) down the process's own pipe,
  and back the results, a generator or other iterable made a list first.
  A call takes an idle process of the box, so calls of one box run in as
  many processes at once as it has.

An exception in a process comes back as the same exception, with the
traceback of the box's own frames in the process: the box error reads as
an in-process one.  A process that dies (``os._exit``, a signal, a crash in
C) fails the call with an error naming the box and the record; another
process takes its place for later calls.  Processes use the ``forkserver``
start method (forking a process that runs worker threads is unsafe), start
with the run (with the caller's main module hidden, so that a script needs
no ``if __name__ == "__main__":`` guard), and are terminated when the run
ends, on every path (``BoxProcesses.close``).
"""

from __future__ import annotations

import contextlib
import inspect
import multiprocessing
import os
import pickle
import queue
import sys
import threading
import traceback
from types import ModuleType
from typing import Any, Callable, Iterator, Mapping

from snet.errors import SNetBindingError

_PATH_LOADED_PREFIX = "snet_boxes_"  # module names of snet.core.boxes.load_module_from_path

# -- in the worker process ----------------------------------------------------------------

_functions: dict[str, Callable] = {}


def _start_process(path: list[str], shipped: dict[str, tuple]) -> None:
    """The pool's initialiser: the parent's import path, then every box function of the pool."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it shuts the pool down
    for entry in reversed(path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    for name, (kind, *detail) in shipped.items():
        if kind == "module":
            module_name, qualname = detail
            target: Any = __import__(module_name, fromlist=["_"])
            for part in qualname.split("."):
                target = getattr(target, part)
            _functions[name] = target
        elif kind == "file":
            from snet.core.boxes import load_module_from_path

            path_, attribute = detail
            _functions[name] = getattr(load_module_from_path(path_), attribute)
        else:
            _functions[name] = pickle.loads(detail[0])


def _serve(connection: Any, path: list[str], shipped: dict[str, tuple]) -> None:
    """A box process: take ``(args, kwargs)`` from the pipe, answer ``_call``'s pair, until the pipe ends."""
    _start_process(path, shipped)
    (name,) = shipped
    while True:
        try:
            args, kwargs = connection.recv()
        except (EOFError, OSError):
            return  # the run is over
        answer = _call(name, args, kwargs)
        try:
            connection.send(answer)
        except (EOFError, OSError):
            return
        except Exception as e:  # a result that cannot be pickled: the box's failure, as in process
            text = f"{type(e).__name__}: {e}\n"
            connection.send((False, (RemoteBoxException(type(e).__name__, f"its result cannot be sent back from "
                                                                           f"the box process: {e}"), text)))


def _call(name: str, args: tuple, kwargs: dict) -> tuple[bool, Any]:
    """One call in the process: ``(True, results)`` or ``(False, (exception or stand-in, traceback text))``."""
    try:
        result = _functions[name](*args, **kwargs)
        if inspect.iscoroutine(result):
            import asyncio

            result = asyncio.run(result)
        if result is not None and not isinstance(result, (Mapping, str, bytes)) and hasattr(result, "__iter__"):
            result = list(result)  # a generator cannot travel; its exceptions are the box's too
        return True, result
    except BaseException as e:
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None  # drop this frame
        text = "".join(traceback.format_exception(type(e), e, tb))
        try:
            pickle.dumps(e)
            carried: BaseException = e
        except Exception:
            carried = RemoteBoxException(type(e).__name__, str(e))
        return False, (carried, text)


# -- in the parent -------------------------------------------------------------------------


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Start processes without them running the caller's main script again.

    multiprocessing's spawn and forkserver methods make a new process import
    the parent's ``__main__`` (by its module name or file) so that functions
    defined there can be unpickled.  A box's function travels on its own
    (by module, file or value), so the processes need no main module; and a
    script without an ``if __name__ == "__main__":`` guard would otherwise
    run again in every box process.  So the main module's ``__spec__`` and
    ``__file__`` are hidden while the processes start.
    """
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {name: main.__dict__[name] for name in ("__spec__", "__file__") if name in main.__dict__}
    main.__dict__["__spec__"] = None
    main.__dict__.pop("__file__", None)
    try:
        yield
    finally:
        main.__dict__.update(saved)


class RemoteBoxException(Exception):
    """Stands for an exception of a box process that cannot be pickled; reads as the original."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _shipped(name: str, function: Callable) -> tuple:
    """How ``function`` travels to a process (see the module docstring)."""
    module = sys.modules.get(getattr(function, "__module__", None) or "")
    qualname = getattr(function, "__qualname__", "")
    path = getattr(module, "__file__", None) if module is not None else None
    if module is not None and module.__name__.startswith(_PATH_LOADED_PREFIX) and path:
        for attribute in (name, getattr(function, "__name__", "")):
            if getattr(module, attribute, None) is function:
                return ("file", os.path.abspath(path), attribute)
    if (isinstance(module, ModuleType) and module.__name__ not in ("__main__", "__mp_main__")
            and "<" not in qualname and _resolves(module, qualname, function)):
        return ("module", module.__name__, qualname)
    try:
        import cloudpickle
    except ImportError:
        raise SNetBindingError(f"box '{name}' is defined in {getattr(module, '__name__', 'no module')}, which a box "
                               f"process cannot import: install cloudpickle to send it by value, or move it to a "
                               f"module file") from None
    try:
        return ("value", cloudpickle.dumps(function))
    except Exception as e:
        raise SNetBindingError(f"box '{name}' cannot be sent to a box process: {type(e).__name__}: {e}") from None


def _resolves(module: ModuleType, qualname: str, function: Callable) -> bool:
    target: Any = module
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target is function


class BoxProcesses:
    """The process pools of one run: one pool per box given processes."""

    def __init__(self, boxes: Mapping[str, Callable], counts: Mapping[str, int]):
        self._pools: dict[str, _Pool] = {}
        try:
            for name, count in sorted(counts.items()):
                self._pools[name] = _Pool(name, boxes[name], count)
        except BaseException:
            self.close()
            raise

    def function(self, name: str) -> Callable | None:
        """The stand-in for box ``name`` that calls it in its pool, or None (the box runs in process)."""
        pool = self._pools.get(name)
        return pool.stand_in if pool is not None else None

    def counts(self) -> dict[str, int]:
        return {name: pool.count for name, pool in self._pools.items()}

    def pids(self) -> list[int]:
        """The process ids of the box processes running now (for tests and statistics)."""
        return [pid for pool in self._pools.values() for pid in pool.pids()]

    def close(self) -> None:
        """Shut every pool down without waiting for calls that do not return."""
        for pool in self._pools.values():
            pool.close()


class _Pool:
    """The processes of one box, each behind a pipe of its own; idle ones wait in a queue.

    A call takes an idle process, sends it the arguments, waits for the
    answer without the GIL (``Connection.recv``) and puts the process back:
    one pickling and one pipe transfer each way, no manager thread.  A
    process that dies during a call (the pipe ends) is replaced.
    """

    def __init__(self, name: str, function: Callable, count: int):
        self.name = name
        self.count = count
        self._args = ([p for p in sys.path if p], {name: _shipped(name, function)})
        self._context = multiprocessing.get_context("forkserver")
        self._lock = threading.Lock()
        self._closed = False
        self._all: list = []  # (process, connection) of every process started and not yet ended
        self._idle: queue.SimpleQueue = queue.SimpleQueue()
        with _main_hidden():
            for _ in range(count):
                self._idle.put(self._start())
        self.stand_in = ProcessBox(self, function)

    def _start(self) -> tuple:
        """A new process serving this box on one end of a pipe (started with the main module hidden)."""
        here, there = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(there, *self._args), daemon=True,
                                        name=f"snet-box-{self.name}")
        process.start()
        there.close()
        entry = (process, here)
        with self._lock:
            self._all.append(entry)
        return entry

    def call(self, args: tuple, kwargs: dict) -> Any:
        if self._closed:
            raise BoxProcessDied(f"the box processes of box '{self.name}' were shut down with the run")
        entry = self._idle.get()
        process, connection = entry
        try:
            connection.send((args, kwargs))
            ok, value = connection.recv()
        except (EOFError, OSError, BrokenPipeError):
            self._replace(entry)
            died = BoxProcessDied(f"the box process running box '{self.name}' died (killed, exited or crashed) "
                                  f"during the call")
            died.__snet_traceback__ = ""  # nothing of the box's to show: the process is gone
            raise died from None
        except BaseException:  # the arguments cannot be pickled, or the wait was interrupted: end this process
            self._replace(entry)
            raise
        self._idle.put(entry)
        if ok:
            return value
        error, text = value
        error.__snet_traceback__ = text  # read by BoxCaller._raised: the box's frames in the process
        raise error

    def _replace(self, entry: tuple) -> None:
        process, connection = entry
        with self._lock:
            if entry in self._all:
                self._all.remove(entry)
        connection.close()
        if process.is_alive():
            process.terminate()
        if not self._closed:
            with _main_hidden():
                self._idle.put(self._start())

    def pids(self) -> list[int]:
        with self._lock:
            return [process.pid for process, _ in self._all if process.is_alive()]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            entries, self._all = self._all, []
        for process, connection in entries:  # a call still running is abandoned with the run: never wait for it
            connection.close()
            if process.is_alive():
                process.terminate()


class BoxProcessDied(RuntimeError):
    """A box process ended during a call."""


class ProcessBox:
    """Calls a box function in its pool; has the function's signature, so arguments bind as for the function."""

    def __init__(self, pool: _Pool, function: Callable):
        self._pool = pool
        try:
            self.__signature__ = inspect.signature(function)
        except (TypeError, ValueError):
            pass
        self.__name__ = getattr(function, "__name__", pool.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._pool.call(args, kwargs)


__all__ = ["BoxProcesses", "BoxProcessDied", "ProcessBox", "RemoteBoxException"]
