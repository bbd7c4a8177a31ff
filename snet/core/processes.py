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
import time
from collections import deque
from types import ModuleType
from typing import Any, Callable, Iterator, Mapping, Sequence

from snet.core.batching import MAX_BATCH, BatchSizer, Settled, deliver, gather
from snet.core.boxes import Deferred, argument_binding
from snet.core.boxprocess import PROTOCOL, RemoteBoxException, load_functions, resident_bytes, serve
from snet.core.guard import BoxTimeout
from snet.errors import SNetBindingError

_PATH_LOADED_PREFIX = "snet_boxes_"  # module names of snet.core.boxes.load_module_from_path


class BoxArgumentNotSendable(TypeError):
    """An argument value of a process box cannot be pickled, so it cannot reach the box's process."""

    __snet_traceback__: str  # "": the box did not run


class BoxProcessDied(RuntimeError):
    """A box process ended during a call."""

    __snet_traceback__: str  # "": the process is gone


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
    saved: dict[str, Any] = {name: main.__dict__[name] for name in ("__spec__", "__file__") if name in main.__dict__}
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

    def batches(self) -> tuple[int, int]:
        """The batches sent to box processes so far and the calls they carried (calls sent alone not counted)."""
        return (sum(pool.batches.messages for pool in self._pools.values()),
                sum(pool.batches.calls for pool in self._pools.values()))

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

    Batched calls (an engine that overlaps them, FRONT) are queued by
    ``submit`` and sent by one dispatcher thread per process
    (:class:`_Batches`).
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
        self._args = ([p for p in sys.path if p], {name: _shipped(name, function)}, max_memory)
        self._context = _context()
        self._lock = threading.Lock()
        self._closed = False
        self._all: list = []  # the _Worker of every process started and not yet ended
        self._idle: queue.SimpleQueue = queue.SimpleQueue()
        with _main_hidden():
            for _ in range(count):
                self._idle.put(self._start())
        self.stand_in = ProcessBox(self, function)
        self.batches = _Batches(self)

    def _start(self) -> _Worker:
        """A new process serving this box on one end of a pipe (started with the main module hidden)."""
        here, there = self._context.Pipe()
        process = self._context.Process(target=serve, args=(there, *self._args), daemon=True,
                                        name=f"snet-box-{self.name}")
        process.start()
        there.close()
        entry = _Worker(process, here)
        with self._lock:
            self._all.append(entry)
        return entry

    def closed(self) -> bool:
        return self._closed

    def take(self) -> "_Worker":
        """An idle process (waits for one); BoxProcessDied once the pool is shut down."""
        while True:
            try:
                return self._idle.get(timeout=0.1)
            except queue.Empty:
                if self._closed:
                    raise BoxProcessDied(f"the box processes of box '{self.name}' were shut down with the run") \
                        from None

    def put_back(self, entry: "_Worker") -> None:
        """A process whose answer was read: idle again, or replaced when it is spent."""
        if self._spent(entry):
            with self._lock:
                self.recycled += 1
            self._replace(entry)
        else:
            self._idle.put(entry)

    def lost(self, entry: "_Worker") -> None:
        """A process that died or whose answer was lost: replaced."""
        self._replace(entry)

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
        if late and timeout is not None:  # the call is abandoned with its process: a fresh one takes its place
            self._replace(entry)
            raise BoxTimeout(self.name, timeout)
        entry.calls += 1
        self.put_back(entry)
        got = self.settled(reply)
        return got.result() if type(got) is Settled else got

    def settled(self, reply: bytes) -> Any:
        """The outcome of a call from its pickled answer (read with :class:`_ReplyUnpickler`): its result, or a
        :class:`~snet.core.batching.Settled` failure."""
        try:
            ok, value = _ReplyUnpickler(io.BytesIO(reply)).load()
        except Exception as e:  # e.g. a class of the result that the parent cannot import
            error = RemoteBoxException(type(e).__name__, f"the answer of its box process cannot be read: "
                                                         f"{type(e).__name__}: {e}", self.name)
            error.__snet_traceback__ = ""
            return Settled(False, error)
        return outcome(ok, value)

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
        return self.max_memory is not None and resident_bytes(entry.process.pid) > self.max_memory

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


def outcome(ok: bool, value: Any) -> Any:
    """The outcome of a call from its answer's pair: its result, or a Settled failure whose exception carries the
    box's traceback in the process."""
    if ok:
        return Settled(True, value) if type(value) is Settled else value
    error, text = value
    error.__snet_traceback__ = text  # read by BoxCaller._raised: the box's frames in the process
    return Settled(False, error)


class _Batches:
    """The batched calls of one box's pool: a queue, and a dispatcher thread per process (snet.core.batching).

    ``submit`` queues a call (its ``(args, kwargs)``, the entity to deliver
    its outcome to, the record's number and item) and returns.  A
    dispatcher takes an idle process, gathers up to a batch of queued calls
    (as many as the sizer says, as many as the process may still answer
    under ``max_calls``), pickles their arguments in one message, sends it,
    waits for the answers without the GIL, and delivers every call's
    outcome at once.  The dispatchers start with the first call submitted.
    """

    def __init__(self, pool: _Pool):
        self.pool = pool
        self.sizer = BatchSizer()
        self._queue: deque = deque()
        self._cond = threading.Condition()
        self._waiting = 0
        self._started = False
        self.messages = 0  # batches sent to a process, for statistics and tests
        self.calls = 0  # the calls they carried

    def submit(self, work: tuple, entity: Any, seq: int, item: Any) -> None:
        self._queue.append((work, entity, seq, item))
        if not self._started:
            self._start()
        if self._waiting:
            with self._cond:
                self._cond.notify()

    def _start(self) -> None:
        with self._cond:
            if self._started:
                return
            self._started = True
        for i in range(self.pool.count):
            threading.Thread(target=self._dispatch, name=f"snet-box-batches-{self.pool.name}-{i}",
                             daemon=True).start()

    def _dispatch(self) -> None:
        pool, queue, closed = self.pool, self._queue, self.pool.closed
        while not pool.closed():
            if not queue:
                with self._cond:
                    self._waiting += 1
                    try:
                        if not queue and not pool.closed():
                            self._cond.wait(0.05)
                    finally:
                        self._waiting -= 1
                continue
            try:
                entry = pool.take()
            except BoxProcessDied:
                return  # the run is over
            size = self.sizer.size
            if pool.max_calls is not None:
                size = max(1, min(size, pool.max_calls - entry.calls))
            batch = gather(queue, size, closed)
            if not batch:
                pool.put_back(entry)
                continue
            try:
                outcomes = self._run(entry, [work for work, _, _, _ in batch])
            except BaseException as e:  # a fault of the dispatcher's own: the calls fail, the run does not hang
                outcomes = [Settled(False, e)] * len(batch)
            if pool.closed():
                return  # the run is over: nobody waits for these
            deliver([(entity, (seq, item, result)) for (_, entity, seq, item), result in zip(batch, outcomes)])

    def _run(self, entry: "_Worker", calls: list) -> list:
        """The outcomes of ``calls`` in process ``entry`` (handed back or replaced on every path)."""
        pool = self.pool
        try:
            data = pickle.dumps(calls, PROTOCOL)
        except Exception:  # some arguments do not pickle: those calls fail alone, the others go
            pool.put_back(entry)
            return self._sendable_only(calls)
        connection = entry.connection
        self.messages += 1
        self.calls += len(calls)
        started = time.perf_counter()
        try:
            connection.send_bytes(data)
            reply = connection.recv_bytes()
        except (EOFError, OSError):  # the process died in the batch: each call again alone, in a fresh one
            pool.lost(entry)
            return self._one_by_one(calls)
        except BaseException:
            pool.lost(entry)
            raise
        round_trip = time.perf_counter() - started
        try:
            answer = _ReplyUnpickler(io.BytesIO(reply)).load()
        except Exception:  # an answer refused or unreadable: the answers again, each read alone
            outcomes = self._separately(entry)
        else:
            if len(answer) == 2:  # (False, error): the process could not read the batch; each call alone tells
                pool.put_back(entry)  # whose value it was
                return self._one_by_one(calls)
            work, outcomes, failures = answer
            for i, pair in failures:
                outcomes[i] = outcome(False, pair)
            if len(outcomes) == len(calls):
                self.sizer.measured(len(calls), round_trip, work)
        entry.calls += len(outcomes)
        pool.put_back(entry)
        if len(outcomes) < len(calls):  # the process passed its memory limit: the rest in another
            outcomes += self._run(pool.take(), calls[len(outcomes):])
        return outcomes

    def _sendable_only(self, calls: list) -> list:
        pool = self.pool
        outcomes: list = []
        for args, kwargs in calls:
            error = _pickling_error((args, kwargs))
            if error is not None:
                outcomes.append(Settled(False, pool._not_sendable(args, kwargs, error)))
            else:
                outcomes += self._run(pool.take(), [(args, kwargs)])
        return outcomes

    def _separately(self, entry: "_Worker") -> list:
        """The last batch's answers again, each read on its own (one that cannot be read fails its call only)."""
        connection = entry.connection
        try:
            connection.send_bytes(pickle.dumps(None, PROTOCOL))
            parts = pickle.loads(connection.recv_bytes())
        except BaseException:
            self.pool.lost(entry)
            raise
        return [self.pool.settled(part) for part in parts]

    def _one_by_one(self, calls: list) -> list:
        outcomes = []
        for args, kwargs in calls:
            try:
                outcomes.append(outcome(True, self.pool.call(args, kwargs)))
            except BaseException as e:
                outcomes.append(Settled(False, e))
        return outcomes


def _pickling_error(call: tuple) -> Exception | None:
    try:
        pickle.dumps(call, PROTOCOL)
    except Exception as e:
        return e
    return None
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

    def __snet_batched__(self) -> "BatchedProcessBox":
        """The stand-in for an engine that overlaps calls: its calls are submitted and go in batches."""
        return BatchedProcessBox(self)


class BatchedProcessBox:
    """A box process stand-in whose call returns a :class:`~snet.core.boxes.Deferred` of its arguments.

    The engine submits it to the pool's batch queue (``_Batches.submit``);
    ``BATCH_LIMIT`` calls per unit of box concurrency may be in flight, so
    that one batch can fill while another is in a process.
    """

    BATCH_LIMIT = 2 * MAX_BATCH

    def __init__(self, box: ProcessBox):
        self._submit = box._pool.batches.submit
        signature = getattr(box, "__signature__", None)
        if signature is not None:
            self.__signature__ = signature
        self.__name__ = box.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Deferred:
        return Deferred((args, kwargs), self._submit)


__all__ = ["BatchedProcessBox", "BoxArgumentNotSendable", "BoxProcesses", "BoxProcessDied", "ProcessBox",
           "RemoteBoxException", "load_functions", "main_hidden", "process_context", "read_answer", "shipped_function"]
