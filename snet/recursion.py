"""A raised recursion limit that threads share: :func:`deep_recursion`."""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Iterator

DEEP_RECURSION = 20000  # the recursion limit while replicas are pickled
_deep_lock = threading.Lock()
_deep_users = 0
_deep_saved = 0


@contextlib.contextmanager
def deep_recursion() -> Iterator[None]:
    """Raise the interpreter's recursion limit to ``DEEP_RECURSION`` while the block runs.

    The limit is the process's, and threads pickle deep state at once (a
    split's replicas on FRONT's workers): each
    setting it and putting back what it found, a thread could put back
    another's raised limit, which then stayed raised for good (the
    compiler's depth checks, which rely on the limit, then let a program
    too deep through).  So the first user raises it and the last one puts
    the original back.
    """
    global _deep_users, _deep_saved
    with _deep_lock:
        if _deep_users == 0:
            _deep_saved = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_deep_saved, DEEP_RECURSION))
        _deep_users += 1
    try:
        yield
    finally:
        with _deep_lock:
            _deep_users -= 1
            if _deep_users == 0:
                sys.setrecursionlimit(_deep_saved)
