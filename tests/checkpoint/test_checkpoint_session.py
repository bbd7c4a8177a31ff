"""``net.session(checkpoint=DIR)`` and ``session.checkpoint()``: a service's state survives a restart."""

from __future__ import annotations

import pytest

import snet
from snet.errors import SNetUsageError

PAIRS = "net pairs connect [| {a}, {b} |] * {a, b};"


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_a_session_started_again_holds_the_records_of_its_checkpoint(engine, tmp_path):
    net = snet.load(PAIRS)
    first = net.session(engine=engine, workers=2, checkpoint=tmp_path / "ck")
    for i in range(50):
        assert first.submit({"a": i}).result(timeout=60) == []  # stored, waiting for a b
    first.checkpoint(timeout=60)
    first.submit({"a": 99}).result(timeout=60)  # after the snapshot: lost with the session
    first.abort()
    second = net.session(engine=engine, workers=2, checkpoint=tmp_path / "ck")
    outs = [second.submit({"b": -i}).result(timeout=60) for i in range(51)]
    second.close()
    assert outs[:50] == [[{"a": i, "b": -i}] for i in range(50)]
    assert outs[50] == []  # {a: 99} came after the snapshot


HELD = "net held { box hold((a) -> (a)); } connect (hold | []) .. [| {a}, {b} |] * {a, b};"


@pytest.mark.parametrize("engine, workers", [("reference", 1), ("front", 1), ("front", 4)])
def test_a_checkpoint_covers_the_inputs_fed_before_it_that_still_wait_in_the_queue(engine, workers, tmp_path):
    """Inputs fed before ``checkpoint()`` and still queued (the network is busy with the first) are in the
    snapshot: a session resumed from it pairs every one of them."""
    import threading

    opened = threading.Event()

    def hold(a):
        opened.wait(60)  # the first record holds the network until the checkpoint has been asked for
        return {"a": a}

    net = snet.load(HELD, {"hold": hold})
    first = net.session(engine=engine, workers=workers, checkpoint=tmp_path / "ck")
    for i in range(50):
        first.feed({"a": i})
    asked = threading.Thread(target=first.checkpoint, kwargs={"timeout": 60})
    asked.start()
    opened.set()
    asked.join(60)
    assert not asked.is_alive()
    first.abort()
    second = net.session(engine=engine, workers=workers, resume=tmp_path / "ck")
    outs = [second.submit({"b": -i}).result(timeout=60) for i in range(50)]
    second.close()
    assert sorted(o["a"] for out in outs for o in out) == list(range(50))  # (one pair per fed input)


def test_a_session_without_a_directory_refuses_checkpoint(tmp_path):
    with snet.load(PAIRS).session(engine="reference") as session:
        with pytest.raises(SNetUsageError, match="start it with net.session"):
            session.checkpoint()


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_resume_continues_from_the_snapshot_and_goes_on_taking_them(engine, tmp_path):
    net = snet.load(PAIRS)
    first = net.session(engine=engine, checkpoint=tmp_path / "ck")
    assert first.submit({"a": 1}).result(timeout=60) == []
    first.checkpoint(timeout=60)
    first.abort()
    second = net.session(engine=engine, resume=tmp_path / "ck")
    assert second.submit({"a": 2}).result(timeout=60) == []
    second.checkpoint(timeout=60)  # into the same directory
    second.abort()
    third = net.session(engine=engine, resume=str(tmp_path / "ck"))
    outs = [third.submit({"b": -i}).result(timeout=60) for i in (1, 2)]
    third.close()
    assert sorted(o["a"] for out in outs for o in out) == [1, 2]


def test_resume_refuses_a_directory_without_a_snapshot(tmp_path):
    net = snet.load(PAIRS)
    with pytest.raises(SNetUsageError, match="no such directory"):
        net.session(engine="reference", resume=tmp_path / "typo")
    assert not (tmp_path / "typo").exists()  # not made: nothing was resumed, nothing started
    (tmp_path / "empty").mkdir()
    with pytest.raises(SNetUsageError, match="holds no snapshot"):
        net.session(engine="reference", resume=tmp_path / "empty")


def test_resume_with_another_directory_or_a_reset_is_refused(tmp_path):
    net = snet.load(PAIRS)
    with net.session(engine="reference", checkpoint=tmp_path / "ck") as s:
        s.checkpoint(timeout=60)
    with pytest.raises(SNetUsageError, match="two directories"):
        net.session(engine="reference", resume=tmp_path / "ck", checkpoint=tmp_path / "other")
    with pytest.raises(SNetUsageError, match="contradict"):
        net.session(engine="reference", resume=tmp_path / "ck", checkpoint_reset=True)
    net.session(engine="reference", resume=tmp_path / "ck", checkpoint=tmp_path / "ck").close()


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_an_asyncio_session_takes_checkpoints_and_resumes(engine, tmp_path):
    import asyncio

    net = snet.load(PAIRS)

    async def first():
        s = net.asession(engine=engine, checkpoint=tmp_path / "ck")
        for i in range(20):
            assert await s.submit({"a": i}, timeout=60) == []
        await s.checkpoint(timeout=60)
        s.abort()

    async def second():
        async with net.asession(engine=engine, resume=tmp_path / "ck") as s:
            return [await s.submit({"b": -i}, timeout=60) for i in range(20)]

    asyncio.run(first())
    outs = asyncio.run(second())
    assert outs == [[{"a": i, "b": -i}] for i in range(20)]


def test_an_asyncio_session_without_a_directory_refuses_checkpoint():
    import asyncio

    async def main():
        async with snet.load(PAIRS).asession(engine="reference") as s:
            with pytest.raises(SNetUsageError, match="start it with net.session"):
                await s.checkpoint()

    asyncio.run(main())
