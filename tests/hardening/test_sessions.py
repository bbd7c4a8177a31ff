"""Sessions keep what was produced before an error, raise it on every later call, and abort at once."""

from __future__ import annotations

import threading
import time

import pytest

import snet
from snet.errors import SNetBoxError

NET = "box f ((x) -> (y)); net n connect f;"


def fails_on_three(x):
    if x == 3:
        raise ValueError("three")
    return {"y": x}


def test_poll_returns_the_outputs_before_the_error_then_every_call_raises(engine_options):
    net = snet.load(NET, boxes={"f": fails_on_three})
    session = net.session(**engine_options)
    for x in range(3):
        session.feed({"x": x})
    deadline = time.monotonic() + 10
    got = []
    while len(got) < 3 and time.monotonic() < deadline:
        got += session.poll()
    session.feed({"x": 3})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            got += session.poll()
        except SNetBoxError:
            break
        time.sleep(0.01)
    else:
        pytest.fail("the error never came")
    assert got == [{"y": 0}, {"y": 1}, {"y": 2}]
    for call in (session.poll, lambda: session.feed({"x": 9}), lambda: session.get(timeout=0.1), session.close):
        with pytest.raises(SNetBoxError, match="box 'f' raised ValueError: three"):
            call()


def test_abort_does_not_wait_for_a_running_box_call(engine_options):
    started, release = threading.Event(), threading.Event()

    def slow(x):
        started.set()
        release.wait(300)  # released when the test ends
        return {"y": x}

    net = snet.load(NET, boxes={"f": slow})
    session = net.session(**engine_options)
    try:
        session.feed({"x": 1})
        assert started.wait(120)
        t0 = time.monotonic()
        session.abort()
        # The box call still blocks (until `release`, 300 s): abort did not wait for it.  About no time at
        # rest; the bound is generous, for a busy machine.
        assert time.monotonic() - t0 < 60
    finally:
        release.set()
