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
* per call, the argument values, pickled in the calling thread with
  ``pickle.dumps`` (protocol 5) before a process is taken, down the
  process's own pipe as bytes, and back the results the same way, a
  generator or other iterable made a list first.  A value that cannot be
  pickled fails the call at once with an error naming the box and the
  label (:class:`BoxArgumentNotSendable`); no process is disturbed.  A
  call takes an idle process of the box, so calls of one box run in as
  many processes at once as it has.

An exception in a process comes back as the same exception, with the
traceback of the box's own frames in the process: the box error reads as
an in-process one.  An exception that does not survive pickling (one
whose ``__init__`` takes other arguments than it passes on, or that holds
a lock...) comes back as a :class:`RemoteBoxException` with its type's
name, message, the box's name and the same traceback text.  A process
that dies (``os._exit``, a signal, a crash in C) fails the call with an
error naming the box and the record; another process takes its place for
later calls.

Processes use the ``forkserver`` start method (forking a process that
runs worker threads is unsafe), with this module preloaded in the fork
server (and with it the box loader), so a new process only imports its
box's own module.  They start with the run (with the caller's main module
hidden, so that a script needs no ``if __name__ == "__main__":`` guard),
and are terminated when the run ends, on every path
(``BoxProcesses.close``).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import multiprocessing
import os
import pickle
import queue
import sys
import threading
import traceback
from types import ModuleType
from typing import Any, Callable, Iterator, Mapping, Sequence

from snet.core.boxes import argument_binding, end_forked_child, load_module_from_path
from snet.core.guard import BoxTimeout
from snet.errors import SNetBindingError

_PATH_LOADED_PREFIX = "snet_boxes_"  # module names of snet.core.boxes.load_module_from_path
PROTOCOL = 5  # pickle protocol of arguments and answers (out-of-band buffers unused: one bytes object per message)


class RemoteBoxException(Exception):
    """Stands for an exception of a box process that cannot be pickled; reads as the original.

    ``kind`` is the original exception's type name, ``box`` the box's name.
    It pickles by its three fields, so it always reaches the parent.
    """

    def __init__(self, kind: str, message: str, box: str = ""):
        super().__init__(message)
        self.kind = kind
        self.box = box

    def __reduce__(self) -> tuple:
        return type(self), (self.kind, str(self), self.box)


class BoxArgumentNotSendable(TypeError):
    """An argument value of a process box cannot be pickled, so it cannot reach the box's process."""


class BoxProcessDied(RuntimeError):
    """A box process ended during a call."""


# -- in the worker process ----------------------------------------------------------------

_functions: dict[str, Callable] = {}


def _start_process(path: list[str], shipped: dict[str, tuple]) -> None:
    """A process's start: the parent's import path, then its box's function."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it shuts the pool down
    for entry in reversed(path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    _functions.update(load_functions(shipped))


def load_functions(shipped: Mapping[str, tuple]) -> dict[str, Callable]:
    """The functions of ``shipped`` (name -> :func:`shipped_function`'s tuple) in this process."""
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


def _serve(connection: Any, path: list[str], shipped: dict[str, tuple]) -> None:
    """A box process: take pickled ``(args, kwargs)`` from the pipe, answer ``_call``'s pair, until the pipe ends."""
    _start_process(path, shipped)
    (name,) = shipped
    loads, recv, send = pickle.loads, connection.recv_bytes, connection.send_bytes
    while True:
        try:
            data = recv()
        except (EOFError, OSError):
            return  # the run is over
        try:
            args, kwargs = loads(data)
        except Exception as e:  # e.g. a value of a class defined in the caller's main script
            message = (f"its arguments cannot be read in the box process: {type(e).__name__}: {e} (a value of a class "
                       f"the process cannot import, such as one defined in the main script, cannot travel)")
            answer = pickle.dumps((False, (RemoteBoxException(type(e).__name__, message, name),
                                           f"{type(e).__name__}: {message}\n")), PROTOCOL)
        else:
            answer = _answer(name, args, kwargs)
        try:
            send(answer)
        except (EOFError, OSError):
            return


def _answer(name: str, args: tuple, kwargs: dict) -> bytes:
    """One call in the process, pickled: ``(True, results)`` or ``(False, (exception or stand-in, traceback))``."""
    pid = os.getpid()
    try:
        result = _functions[name](*args, **kwargs)
        if os.getpid() != pid:  # a child the box forked, back from the call: it must not answer for the box
            end_forked_child(name)
        if inspect.iscoroutine(result):
            import asyncio

            result = asyncio.run(result)
        if result is not None and not isinstance(result, (Mapping, str, bytes)) and hasattr(result, "__iter__"):
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
        return pickle.dumps((False, (carried, text)), PROTOCOL)
    try:
        return pickle.dumps((True, result), PROTOCOL)
    except Exception as e:  # a result that cannot be pickled: the box's failure, as in process
        message = f"its result cannot be sent back from the box process: {type(e).__name__}: {e}"
        return pickle.dumps((False, (RemoteBoxException(type(e).__name__, message, name),
                                     f"{type(e).__name__}: {message}\n")), PROTOCOL)


# -- in the parent -------------------------------------------------------------------------

_context_lock = threading.Lock()
_context_made: Any = None


def _context() -> Any:
    """The ``forkserver`` context, its server preloading this module (and the box loader it imports).

    The server forks every box process, so a process starts with snet's box
    machinery imported and only imports its box's module.  The caller's main
    module is not preloaded (a box function travels on its own, see
    ``_main_hidden``).  The preload list only counts if the fork server is
    not running yet; otherwise the processes import this module themselves.
    """
    global _context_made
    with _context_lock:
        if _context_made is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload([__name__])
            _context_made = context
        return _context_made


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


def shipped_function(name: str, function: Callable) -> tuple:
    """How box ``name``'s ``function`` travels to another process (see the module docstring).

    The split processes (:mod:`snet.splitproc`) ship their boxes the same
    way; :func:`load_functions` turns the tuples back into functions there.
    """
    return _shipped(name, function)


def process_context() -> Any:
    """The ``forkserver`` context every worker process of snet starts from (see ``_context``)."""
    return _context()


main_hidden = _main_hidden  # the split processes start with the caller's main module hidden too


def _resolves(module: ModuleType, qualname: str, function: Callable) -> bool:
    target: Any = module
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target is function


class BoxProcesses:
    """The process pools of one run: one pool per box given processes.

    ``labels`` maps a box's name to its input labels (as declared), so that
    an argument that cannot be sent is named by its label.
    """

    def __init__(self, boxes: Mapping[str, Callable], counts: Mapping[str, int],
                 labels: Mapping[str, Sequence[str]] | None = None, max_calls: int | None = None,
                 max_memory: int | None = None):
        self._pools: dict[str, _Pool] = {}
        labels = labels or {}
        try:
            for name, count in sorted(counts.items()):
                self._pools[name] = _Pool(name, boxes[name], count, tuple(labels.get(name, ())),
                                          max_calls, max_memory)
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

    def recycled(self) -> int:
        """Box processes replaced so far because they reached ``max_calls`` or ``max_memory``."""
        return sum(pool.recycled for pool in self._pools.values())

    def close(self) -> None:
        """Shut every pool down without waiting for calls that do not return."""
        for pool in self._pools.values():
            pool.close()


class _Pool:
    """The processes of one box, each behind a pipe of its own; idle ones wait in a queue.

    A call pickles the arguments, takes an idle process, sends them, waits
    for the answer without the GIL (``Connection.recv_bytes``) and puts the
    process back: one pickling and one pipe transfer each way, no manager
    thread.  A process that dies during a call (the pipe ends) is replaced.

    Recycling: a process that has answered ``max_calls`` calls, or whose
    resident memory (read from ``/proc`` after each call) has passed
    ``max_memory`` bytes, is ended after its answer is read and a fresh one
    takes its place, so a box that leaks memory runs in constant memory.
    """

    def __init__(self, name: str, function: Callable, count: int, labels: tuple = (),
                 max_calls: int | None = None, max_memory: int | None = None):
        self.name = name
        self.count = count
        self.max_calls = max_calls
        self.max_memory = max_memory
        self.recycled = 0
        self._function = function
        self._labels = labels
        self._args = ([p for p in sys.path if p], {name: _shipped(name, function)})
        self._context = _context()
        self._lock = threading.Lock()
        self._closed = False
        self._all: list = []  # the _Worker of every process started and not yet ended
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
        entry = _Worker(process, here)
        with self._lock:
            self._all.append(entry)
        return entry

    def call(self, args: tuple, kwargs: dict, timeout: float | None = None) -> Any:
        """The box's result for these arguments; past ``timeout`` seconds its process is replaced (BoxTimeout)."""
        if self._closed:
            raise BoxProcessDied(f"the box processes of box '{self.name}' were shut down with the run")
        try:
            data = pickle.dumps((args, kwargs), PROTOCOL)
        except Exception as e:  # before any process is taken: the pool is untouched
            raise self._not_sendable(args, kwargs, e) from None
        entry = self._idle.get()
        connection = entry.connection
        try:
            connection.send_bytes(data)
            late = timeout is not None and not connection.poll(timeout)
            reply = b"" if late else connection.recv_bytes()
        except (EOFError, OSError):
            self._replace(entry)
            died = BoxProcessDied(f"the box process running box '{self.name}' died (killed, exited or crashed) "
                                  f"during the call")
            died.__snet_traceback__ = ""  # nothing of the box's to show: the process is gone
            raise died from None
        except BaseException:  # the wait was interrupted: the answer is lost with this process
            self._replace(entry)
            raise
        if late:  # the call is abandoned with its process: terminated, a fresh one takes its place
            self._replace(entry)
            raise BoxTimeout(self.name, timeout)
        entry.calls += 1
        if self._spent(entry):
            with self._lock:
                self.recycled += 1
            self._replace(entry)
        else:
            self._idle.put(entry)
        try:
            ok, value = _ReplyUnpickler(io.BytesIO(reply)).load()
        except Exception as e:  # e.g. a class of the result that the parent cannot import
            error = RemoteBoxException(type(e).__name__, f"the answer of its box process cannot be read: "
                                                         f"{type(e).__name__}: {e}", self.name)
            error.__snet_traceback__ = ""
            raise error from None
        if ok:
            return value
        error, text = value
        error.__snet_traceback__ = text  # read by BoxCaller._raised: the box's frames in the process
        raise error

    def _not_sendable(self, args: tuple, kwargs: dict, error: Exception) -> BoxArgumentNotSendable:
        """The error for arguments that do not pickle, naming the first value that does not and its label."""
        binding = argument_binding(self.name, self._labels, self._function) if self._labels else None
        names = list(binding.positional) if binding is not None else []
        keyword_labels = dict(binding.keywords) if binding is not None else {}
        culprit = None
        for i, value in enumerate(args):
            if not _pickles(value):
                culprit = (f"label '{names[i]}'" if i < len(names) else f"argument {i + 1}", value)
                break
        else:
            for param, value in kwargs.items():
                if not _pickles(value):
                    culprit = (f"label '{keyword_labels.get(param, param)}'", value)
                    break
        what = f"the value of {culprit[0]} ({type(culprit[1]).__name__})" if culprit else "its arguments"
        failure = BoxArgumentNotSendable(f"{what} cannot be sent to a box process of box '{self.name}' (values "
                                         f"travel pickled): {type(error).__name__}: {error}")
        failure.__snet_traceback__ = ""  # the box did not run: none of its frames to show
        return failure

    def _spent(self, entry: "_Worker") -> bool:
        """Has this process reached its call limit or its memory limit?"""
        if self.max_calls is not None and entry.calls >= self.max_calls:
            return True
        return self.max_memory is not None and _resident_bytes(entry.process.pid) > self.max_memory

    def _replace(self, entry: "_Worker") -> None:
        process, connection = entry.process, entry.connection
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
            return [entry.process.pid for entry in self._all if entry.process.is_alive()]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            entries, self._all = self._all, []
        for entry in entries:  # a call still running is abandoned with the run: never wait for it
            entry.connection.close()
            if entry.process.is_alive():
                entry.process.terminate()


#: modules whose functions act on the process itself (exit, signal, spawn...): an answer may name their classes
#: (``os.stat_result``), never call their functions
_PROCESS_MODULES = frozenset({"os", "posix", "nt", "signal", "_signal", "_thread", "threading", "faulthandler",
                              "ctypes", "_ctypes", "subprocess", "_posixsubprocess", "multiprocessing", "sys"})
_PROCESS_BUILTINS = frozenset({"exit", "quit", "exec", "eval", "compile", "__import__", "breakpoint", "input"})


class _ReplyUnpickler(pickle.Unpickler):
    """Reads a box process's answer without letting it end or take over the parent.

    Unpickling runs whatever callables the pickle names.  A result whose
    ``__reduce__`` names ``os._exit`` (say) would end the parent at once,
    with nothing flushed; such an answer is refused instead, and the call
    fails with an error naming the box, like any answer that cannot be read.
    """

    def find_class(self, module: str, name: str) -> Any:
        found = super().find_class(module, name)
        if isinstance(found, type):
            return found
        if module.partition(".")[0] in _PROCESS_MODULES or (module == "builtins" and name in _PROCESS_BUILTINS):
            raise pickle.UnpicklingError(f"it would call {module}.{name} in the parent process")
        return found


def read_answer(data: bytes) -> Any:
    """Unpickle a worker process's answer without letting it end or take over this process.

    The split processes (:mod:`snet.splitproc`) read their answers with it too.
    """
    return _ReplyUnpickler(io.BytesIO(data)).load()


class _Worker:
    """One box process, the parent's end of its pipe, and the calls it has answered."""

    __slots__ = ("process", "connection", "calls")

    def __init__(self, process: Any, connection: Any):
        self.process = process
        self.connection = connection
        self.calls = 0


def _resident_bytes(pid: int | None) -> int:
    """The resident memory of process ``pid`` (Linux ``/proc``; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _pickles(value: Any) -> bool:
    try:
        pickle.dumps(value, PROTOCOL)
        return True
    except Exception:
        return False


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

    def call_within(self, timeout: float, args: tuple, kwargs: dict) -> Any:
        """One call that fails with BoxTimeout past ``timeout`` seconds (its process replaced): see snet.core.guard."""
        return self._pool.call(args, kwargs, timeout)


__all__ = ["BoxArgumentNotSendable", "BoxProcesses", "BoxProcessDied", "ProcessBox", "RemoteBoxException",
           "load_functions", "main_hidden", "process_context", "read_answer", "shipped_function"]
