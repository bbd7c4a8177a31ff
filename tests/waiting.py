"""Waiting on an event with an upper bound, never on a pace: :func:`until`."""

from __future__ import annotations

import time

WAIT = 60  # seconds: an upper bound for each step, never a pace


def until(condition, what: str, wait: float = WAIT):
    """``condition()``'s value once it is true, failing (not hanging) after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.005)
    raise AssertionError(f"{what} did not happen within {wait} s")
