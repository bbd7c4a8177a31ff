"""Boxes of the checkpoint tests' networks: a little work each, so that a run lasts long enough to be killed."""

import time

PAUSE = 0.0003  # seconds per call: some hundreds of records a second, however busy the machine


def inc(x):
    time.sleep(PAUSE)
    return {"x": x + 1}


def double(x):
    time.sleep(PAUSE)
    return {"x": 2 * x}


def square(x):
    time.sleep(PAUSE)
    return {"x": x * x}


def left(x):
    time.sleep(PAUSE)
    return {"l": x + 1000}


def right(x):
    time.sleep(PAUSE)
    return {"r": x - 1000}


def init():
    return [{"x": -1}, {"note": "started"}]


def picky(x):
    """Fails on one record in 13: with --on-error skip, an error record each in the --errors file."""
    time.sleep(PAUSE)
    if x % 13 == 5:
        raise ValueError(f"{x} is not welcome")
    return {"x": x + 3}
