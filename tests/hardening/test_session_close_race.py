"""A session closed while threads feed it: every accepted record's outputs are delivered, every refused feed raises.

Admission and the end of the input are one atomic step (snet/session.py,
``_Run``): a ``feed`` or ``submit`` that returns has its record queued
before the end marker, so the network processes it; one that comes after
``close()`` raises "session is closed".  The soak closes 200 sessions while
six threads feed each one (and, in a second pass, while six threads submit)
and compares, per session, the accepted inputs with the outputs exactly.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from concurrent.futures import wait

import pytest

import snet
from snet.errors import SNetUsageError

# A soak: hundreds of sessions per engine (CI runs it; the quick loop leaves it out).
pytestmark = pytest.mark.slow

NET = "box f ((x) -> (y)); net n connect f;"
SESSIONS = 200
FEEDERS = 6
WARM = 8  # records each feeder has offered when the close comes
BOUND = 10 ** 6  # records one feeder offers at most: the close always comes first


def double(x):
    return {"y": 2 * x}


def _race(session, offer) -> tuple:
    """Six threads call ``offer(session, n)`` with unique numbers until it raises; returns once each has offered some.

    Each feeder offers ``WARM`` records, then all of them and the caller
    (who closes next) pass one barrier together, so the close lands among
    their calls.  Returns the threads, what they got back for the accepted
    numbers, the number of refused offers (each with "session is closed")
    and any other error.
    """
    accepted: list = []
    refused = [0]
    errors: list = []
    together = threading.Barrier(FEEDERS + 1)
    lock = threading.Lock()

    def feeder(k: int) -> None:
        mine = []
        for i in range(BOUND):
            n = k * BOUND + i
            if i == WARM:
                together.wait(60)
            try:
                mine.append((n, offer(session, n)))
            except SNetUsageError as e:
                if "session is closed" not in str(e):
                    errors.append(e)
                with lock:
                    refused[0] += 1
                break
            except BaseException as e:  # anything else is a failure of the test
                errors.append(e)
                together.abort()
                break
        with lock:
            accepted.extend(mine)

    threads = [threading.Thread(target=feeder, args=(k,)) for k in range(FEEDERS)]
    for t in threads:
        t.start()
    together.wait(60)  # every feeder is feeding: the close lands in the middle of their calls
    return threads, accepted, refused, errors


@pytest.fixture(autouse=True)
def often_switching_threads():
    """Threads switch every 20 microseconds instead of 5 ms: many more interleavings per session."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(2e-5)
    yield
    sys.setswitchinterval(interval)


def _feed(session, n):
    session.feed({"x": n})


def _submit(session, n):
    return session.submit({"x": n})


def test_feeds_racing_close_are_each_delivered_or_refused(engine_options):
    net = snet.load(NET, boxes={"f": double})
    lost = []
    for round_ in range(SESSIONS):
        options = dict(engine_options, max_pending=64) if round_ % 2 else dict(engine_options)
        session = net.session(**options)
        threads, accepted, refused, errors = _race(session, _feed)
        got = session.close(timeout=60)
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert refused[0] == FEEDERS
        expected = sorted(2 * n for n, _ in accepted)
        outputs = sorted(r["y"] for r in got)
        if outputs != expected:
            lost.append((round_, len(expected) - len(outputs)))
    assert not lost, f"sessions whose accepted records were not all delivered (round, records missing): {lost}"


def test_submits_racing_close_each_complete_or_are_refused(engine_options):
    net = snet.load(NET, boxes={"f": double})
    for round_ in range(SESSIONS):
        options = dict(engine_options, max_pending=64) if round_ % 2 else dict(engine_options)
        session = net.session(**options)
        threads, accepted, refused, errors = _race(session, _submit)
        session.close(timeout=60)
        for t in threads:
            t.join(60)
        assert not errors, errors
        futures = [f for _, f in accepted]
        done, pending = wait(futures, timeout=60)
        assert not pending, f"round {round_}: {len(pending)} accepted futures never completed"
        for n, future in accepted:
            assert future.result() == [{"y": 2 * n}], f"round {round_}: input {n}"


def test_async_feeds_racing_aclose_are_each_delivered_or_refused(engine_options):
    """The asyncio session: six tasks feed (and submit) while another closes; every outcome is accounted for.

    The tasks share the loop's thread, so this holds the asyncio front to the
    same rule rather than racing threads (the tests above do that).
    """
    net = snet.load(NET, boxes={"f": double})

    async def one(bounded: bool) -> None:
        options = dict(engine_options, max_pending=64) if bounded else dict(engine_options)
        session = net.asession(**options)
        accepted, futures, refused = [], [], []
        going = [asyncio.Event() for _ in range(FEEDERS)]

        async def feeder(k: int) -> None:
            for i in range(BOUND):
                n = k * BOUND + i
                if i == WARM:
                    going[k].set()
                try:
                    if i % 2:
                        futures.append((n, asyncio.ensure_future(session.submit({"x": n}))))
                        await asyncio.sleep(0)
                    else:
                        await session.feed({"x": n})
                        accepted.append(n)
                except SNetUsageError as e:
                    assert "session is closed" in str(e)
                    refused.append(k)
                    break
                await asyncio.sleep(0)  # let the other feeders and the closer run
            going[k].set()

        tasks = [asyncio.ensure_future(feeder(k)) for k in range(FEEDERS)]
        for event in going:
            await asyncio.wait_for(event.wait(), 60)
        got = await asyncio.wait_for(session.aclose(), 60)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        assert sorted(refused) == list(range(FEEDERS))
        assert sorted(r["y"] for r in got) == sorted(2 * n for n in accepted)
        for n, task in futures:  # a submit either failed with "session is closed" or has the output
            try:
                assert await asyncio.wait_for(task, 60) == [{"y": 2 * n}]
            except SNetUsageError as e:
                assert "session is closed" in str(e)

    async def main() -> None:
        for round_ in range(40):
            await one(bool(round_ % 2))

    asyncio.run(main())
