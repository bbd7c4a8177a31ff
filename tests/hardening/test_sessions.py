"""Sessions keep what was produced before an error, raise it on every later call, and abort at once."""

from __future__ import annotations

import asyncio
import gc
import threading
import time

import pytest

import snet
from snet.errors import SNetBoxError, SNetRuntimeError

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


@pytest.mark.slow
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


@pytest.mark.slow
def test_abort_fails_the_future_of_a_running_box_call_at_once(engine_options):
    started, release = threading.Event(), threading.Event()

    def held(x):
        started.set()
        release.wait(300)  # released when the test ends
        return {"y": x}

    net = snet.load(NET, boxes={"f": held})
    session = net.session(**engine_options)
    future = session.submit({"x": 1})
    try:
        assert started.wait(120)
        session.abort()
        # The call still blocks: the future fails without waiting for it (a generous bound, for a busy machine).
        with pytest.raises(SNetRuntimeError, match="the session ended before this input was done"):
            future.result(timeout=60)
    finally:
        release.set()


def _session_threads() -> set:
    return {t for t in threading.enumerate() if t is not threading.main_thread()}


def test_a_session_dropped_without_close_ends_its_threads(engine_options):
    before = _session_threads()
    net = snet.load(NET, boxes={"f": lambda x: {"y": x}})
    session = net.session(**engine_options)
    session.feed({"x": 1})
    future = session.submit({"x": 2})
    assert future.result(timeout=120) == [{"y": 2}]
    started = _session_threads() - before
    assert started, "the session runs in threads of its own"
    del session
    gc.collect()
    deadline = time.monotonic() + 30
    while any(t.is_alive() for t in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t.name for t in started if t.is_alive()] == []


def test_an_async_session_dropped_without_aclose_ends_its_threads(engine_options):
    before = _session_threads()
    net = snet.load(NET, boxes={"f": lambda x: {"y": x}})

    async def use_and_drop() -> None:
        session = net.asession(**engine_options)
        assert await session.submit({"x": 2}) == [{"y": 2}]
        await session.feed({"x": 1})

    asyncio.run(use_and_drop())
    started = _session_threads() - before
    gc.collect()
    deadline = time.monotonic() + 30
    while any(t.is_alive() for t in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t.name for t in started if t.is_alive()] == []


def test_a_session_closed_with_its_run_s_error_is_freed(engine_options):
    """The error ``close`` raises reaches back to the caller's frame, which holds the session: the run, its
    error and the session form a cycle, which a finalizer left registered for the closed session would keep
    alive (with the whole run) until the process ends."""
    import weakref

    session = snet.load("net ss connect [| {a}, {b} |] * {a, b};").session(**engine_options)
    session.feed({"c": 1})  # stays in the star for ever: the run ends with an error
    with pytest.raises(SNetRuntimeError, match="cannot terminate"):
        session.close(timeout=30)
    gone = weakref.ref(session)
    del session
    gc.collect()
    assert gone() is None
