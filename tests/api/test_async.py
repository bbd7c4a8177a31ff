"""``Network.asession`` and ``Network.arun``: asyncio fronts that never block the loop, on every engine."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import snet

DOUBLE = "box f ((x) -> (y)); net n connect f;"


def double(x):
    return {"y": 2 * x}


@pytest.mark.slow
def test_100_concurrent_tasks_each_get_their_own_outputs(engine_options):
    net = snet.load(DOUBLE, boxes={"f": double})

    async def main():
        async with net.asession(max_pending=16, **engine_options) as session:
            async def client(k):
                return [(i, await session.submit({"x": i, "client": k})) for i in range(k * 50, k * 50 + 50)]

            results = await asyncio.gather(*(client(k) for k in range(100)))
        for k, pairs in enumerate(results):
            for i, outputs in pairs:
                assert outputs == [{"y": 2 * i, "client": k}]
        return session

    session = asyncio.run(main())
    assert session.stats().records_in == 5000


def test_waiting_for_a_slow_box_does_not_block_the_loop(engine_options):
    gate = threading.Event()
    net = snet.load(DOUBLE, boxes={"f": lambda x: gate.wait(10) and {"y": x}})

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1
                if ticks == 20:
                    gate.set()

        task = asyncio.ensure_future(ticker())
        async with net.asession(**engine_options) as session:
            outputs = await session.submit({"x": 3})
        task.cancel()
        return outputs, ticks

    outputs, ticks = asyncio.run(main())
    assert outputs == [{"y": 3}]
    assert ticks >= 20  # the loop ran while the box held the request


def test_a_full_async_session_times_out(engine_options):
    gate = threading.Event()
    net = snet.load(DOUBLE, boxes={"f": lambda x: gate.wait(10) and {"y": x}})

    async def main():
        async with net.asession(max_pending=1, **engine_options) as session:
            first = asyncio.ensure_future(session.submit({"x": 1}))
            await asyncio.sleep(0.05)
            with pytest.raises(TimeoutError, match="max_pending: 1 inputs"):
                await session.feed({"x": 2}, timeout=0.2)
            gate.set()
            assert await first == [{"y": 1}]
            await session.feed({"x": 3})
            assert await session.get(timeout=10) == {"y": 3}

    asyncio.run(main())


def test_arun_takes_sync_and_async_iterables(engine_options):
    net = snet.load(DOUBLE, boxes={"f": double})

    async def source():
        for i in range(3000):
            if i % 500 == 0:
                await asyncio.sleep(0)
            yield {"x": i}

    async def main():
        from_async = [out["y"] async for out in net.arun(source(), **engine_options)]
        from_sync = [out["y"] async for out in net.arun(({"x": i} for i in range(3000)), **engine_options)]
        return from_async, from_sync

    from_async, from_sync = asyncio.run(main())
    assert sorted(from_async) == sorted(from_sync) == [2 * i for i in range(3000)]


def test_arun_raises_a_bad_record_after_the_outputs_before_it(engine_options):
    net = snet.load(DOUBLE, boxes={"f": double})

    async def main():
        got = []
        with pytest.raises(snet.SNetRecordError, match="input record 4"):
            async for out in net.arun([{"x": 1}, {"x": 2}, {"x": 3}, "not a record"], **engine_options):
                got.append(out["y"])
        return got

    assert sorted(asyncio.run(main())) == [2, 4, 6]


def test_arun_raises_the_runs_error(engine_options):
    net = snet.load(DOUBLE, boxes={"f": lambda x: {"y": 1 // x}})

    async def main():
        with pytest.raises(snet.SNetBoxError, match="ZeroDivisionError"):
            async for _ in net.arun([{"x": 1}, {"x": 0}, {"x": 2}], **engine_options):
                pass

    asyncio.run(main())


def test_arun_with_an_endless_source_reads_only_as_fast_as_the_consumer(engine_options):
    net = snet.load(DOUBLE, boxes={"f": double})
    pulled = 0

    async def endless():
        nonlocal pulled
        while True:
            pulled += 1
            yield {"x": pulled}

    async def main():
        taken = 0
        async for _ in net.arun(endless(), max_pending=32, **engine_options):
            taken += 1
            if taken % 100 == 0:
                await asyncio.sleep(0.005)  # a consumer slower than the network
            if taken == 5000:
                break
        return taken

    start = time.monotonic()
    assert asyncio.run(main()) == 5000
    assert time.monotonic() - start < 60
    from snet_front.runtime import OUTPUT_BOUND

    # at most: inputs inside, outputs not taken, and what the engine's own output buffer holds on the way
    assert pulled <= 5000 + 2 * 32 + OUTPUT_BOUND + 1


def test_async_def_boxes_are_awaited(engine_options):
    in_flight = 0
    most = 0

    async def fetch(x):
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        if x == 13:
            raise LookupError("no such page")
        return {"page": f"page {x}"} if x % 2 else [{"page": f"page {x}"}, {"page": "extra"}]

    net = snet.load("box fetch ((x) -> (page)); net n connect fetch;", boxes={"fetch": fetch})
    outputs = list(net.run([{"x": i} for i in range(12)], box_concurrency=4, **engine_options))
    assert sorted(o["page"] for o in outputs) == sorted([f"page {i}" for i in range(12)] + ["extra"] * 6)
    if engine_options.get("workers", 1) > 1:
        assert most > 1  # calls of different workers overlap on the runtime's loop
    with pytest.raises(snet.SNetBoxError, match="box 'fetch' raised LookupError: no such page"):
        list(net.run([{"x": 13}], **engine_options))


def test_front_overlaps_async_box_calls_beyond_its_workers():
    """On FRONT a waiting async call holds no worker: one worker keeps many calls in flight."""
    in_flight = 0
    most = 0

    async def fetch(x):
        nonlocal in_flight, most
        in_flight += 1  # the box loop's thread only: no race
        most = max(most, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1
        return {"page": x}

    net = snet.load("box fetch ((x) -> (page)); net n connect fetch .. [{page} -> {page}];", boxes={"fetch": fetch})
    outputs = list(net.run([{"x": i} for i in range(60)], engine="front", workers=1))
    assert [o["page"] for o in outputs] == list(range(60))  # a pipeline: the box's stream keeps input order
    assert most >= 20
    limited = list(net.run([{"x": i} for i in range(12)], engine="front", workers=1, box_concurrency=3))
    assert [o["page"] for o in limited] == list(range(12))


def test_async_boxes_with_skip_and_request_futures(engine_options):
    async def fetch(x):
        await asyncio.sleep(0.001)
        if x % 5 == 0:
            raise KeyError(x)
        return {"page": x}

    net = snet.load("box fetch ((x) -> (page)); net n connect fetch;", boxes={"fetch": fetch})
    with net.session(on_error="skip", **engine_options) as session:
        futures = {x: session.submit({"x": x}) for x in range(1, 31)}
        for x, future in futures.items():
            if x % 5 == 0:
                with pytest.raises(snet.SNetBoxError, match="box 'fetch' raised KeyError"):
                    future.result(timeout=30)
            else:
                assert future.result(timeout=30) == [{"page": x}]
    assert session.stats().failures == 6


def test_a_feed_waiting_for_the_consumer_is_refused_when_the_session_closes(engine_options):
    """With max_pending outputs not taken, a feed waits for the consumer; aclose() takes them, so it must not wait on."""
    net = snet.load(DOUBLE, boxes={"f": double})

    async def main() -> None:
        session = net.asession(max_pending=2, **engine_options)
        await session.feed({"x": 1})
        await session.feed({"x": 2})
        deadline = time.monotonic() + 30
        while session._outputs.qsize() < 2 and time.monotonic() < deadline:  # both outputs are waiting for us
            await asyncio.sleep(0.01)
        third = asyncio.ensure_future(session.feed({"x": 3}))
        await asyncio.sleep(0)  # it starts, finds max_pending outputs not taken, and waits
        assert not third.done()
        assert await session.aclose() == [{"y": 2}, {"y": 4}]
        with pytest.raises(snet.SNetUsageError, match="session is closed"):
            await asyncio.wait_for(third, 10)

    asyncio.run(main())
