"""The cyclic garbage collector paused while the front end builds a program, and while a split batch is out.

Parsing and checking a program allocates hundreds of thousands of objects
that all stay alive (tokens, parse-tree nodes, the AST, types, the graph).
Each collection of the young generation walks the survivors again and the
older generations grow with them, so on a large program about a quarter of
the compile went into collections that found almost nothing to free
(docs/performance.md, "Front end").  Reference counting still frees
everything that is not in a cycle while the collector is paused, and the
collector runs again as soon as the outermost pause ends.  ``compile_source``
pauses it for the whole compile; ``resolve`` and ``find_warnings`` (the check
stage's entries for embedders that call them directly) pause it themselves.
A split executor's batch (``snet.splitexec.SplitExecutor.run``) is the same
case at run time: its items, groups and results live until it returns.

A cache whose entries live long in a process that runs full collections
often (a Python worker Spark reuses: pyspark's daemon collects after every
task) builds its entries in :func:`frozen_after`, which freezes what is
alive then out of later collections (``gc.freeze``).

The pause is process-wide, as the collector is: when several threads
compile at once, the collector stays paused until the last of them is done.
A collector that the program turned off itself is left off.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
from typing import Callable, Iterator, TypeVar

F = TypeVar("F", bound=Callable)

_lock = threading.Lock()
_depth = 0  # pauses in progress, in all threads
_resume = False  # whether the outermost pause found the collector on


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the duration of the block (reentrant, thread-safe)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            if _resume:
                gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()


@contextlib.contextmanager
def frozen_after(freeze: bool = True) -> Iterator[None]:
    """With ``freeze``: the frozen objects unfrozen for the block (what it drops can be collected), then one
    collection and everything still alive frozen, so that later collections do not walk it again."""
    if freeze:
        gc.unfreeze()
    yield
    if freeze:
        gc.collect()
        gc.freeze()


def paused(function: F) -> F:
    """`function` with the collector paused while it runs (see :func:`gc_paused`)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with gc_paused():
            return function(*args, **kwargs)
    return wrapper  # type: ignore[return-value]
