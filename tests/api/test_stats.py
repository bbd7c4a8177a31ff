"""``Execution.stats()``: a typed snapshot with the same figures on every engine, and its two formatters."""

from __future__ import annotations

import json
import threading

import pytest

import snet
from waiting import WAIT, until
from snet.stats import LATENCY_BOUNDS, LATENCY_BUCKETS, BoxStats, FrontStats, ReferenceStats, RunStats

SOURCE = "net n { box double ((a) -> (a)); box keep ((a) -> (a) | (b)); } connect double .. keep;"


def double(a):
    return {"a": 2 * a}


def keep(a):
    return {"a": a} if a % 4 == 0 else {"b": a}


@pytest.fixture
def net():
    return snet.load(SOURCE, boxes={"double": double, "keep": keep})


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_stats_of_a_finished_run(net, engine):
    execution = net.run([{"a": i} for i in range(10)], engine=engine, workers=1)
    assert len(list(execution)) == 10
    stats = execution.stats()
    assert isinstance(stats, RunStats)
    assert stats.engine == engine and stats.workers == 1
    assert stats.records_in == 10 and stats.records_out == 10
    assert 0 < stats.seconds < 60
    assert set(stats.boxes) == {"double", "keep"}
    assert all(isinstance(b, BoxStats) and b.calls == 10 and b.seconds >= 0 for b in stats.boxes.values())
    assert stats.spark is None
    if engine == "front":
        assert isinstance(stats.front, FrontStats) and stats.reference is None
        assert len(stats.front.workers) == 1 and stats.front.workers[0].inputs == 10
        assert stats.front.entities.created >= 2
        assert stats.front.entities.peak >= stats.front.entities.alive
        assert stats.front.steals == 0  # one worker has no one to steal from
    else:
        assert isinstance(stats.reference, ReferenceStats) and stats.front is None
        assert stats.reference.instances >= 2


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_the_json_form_keeps_the_keys_of_the_stats_line(net, engine):
    execution = net.run([{"a": 1}, {"a": 2}], engine=engine, workers=1)
    list(execution)
    data = json.loads(json.dumps(execution.stats().to_json()))
    assert data["engine"] == engine and data["records_in"] == 2 and data["records_out"] == 2
    double = data["boxes"]["double"]
    # what FRONT says of a box now, and the level box concurrency auto (the default) gave it
    live = {"queued", "limit", "concurrency"} if engine == "front" else set()
    assert ("auto" in data) == (engine == "front")
    assert set(double) == {"calls", "seconds", "histogram"} | live and double["calls"] == 2
    assert len(double["histogram"]) == len(data["latency_bounds"]) + 1 and sum(double["histogram"]) == 2
    assert data["resident_bytes"] > 1 << 20
    if engine == "front":
        assert set(data["entities"]) == {"created", "alive", "peak", "reclaimed"}
        assert {"invocations", "continuations", "steals", "licences_stolen",
                "records_moved_past_identities"} <= set(data)
        assert [set(w) for w in data["workers"]] == [{"busy_seconds", "invocations", "continuations", "inputs",
                                                      "licences_stolen"}]
    else:
        assert data["instances"] >= 2 and "workers" not in data


def test_the_summary_says_what_ran_in_words(net):
    execution = net.run([{"a": i} for i in range(3)], engine="front", workers=1)
    list(execution)
    lines = [line.strip() for line in execution.stats().summary().splitlines()]
    assert lines[0] == "snet run statistics:"
    assert lines[1].endswith("s on the front engine with 1 worker")
    assert lines[2].startswith("records: 3 read, 3 written (")
    assert lines[3].split()[:2] == ["box", "calls"]
    assert sorted(line.split()[:2] for line in lines[4:6]) == [["double", "3"], ["keep", "3"]]
    assert any(line.startswith("peak entities (box, combinator and cell instances alive at once): ")
               for line in lines)
    assert "records held in synchro-cells that never fired: 0" in lines


def test_a_session_reports_the_same_object(net):
    with net.session(engine="reference") as session:
        session.feed({"a": 4})
        assert session.get(timeout=5.0) == {"a": 8}
        stats = session.stats()
    assert isinstance(stats, RunStats) and stats.records_in == 1 and stats.records_out == 1


def test_a_snapshot_is_frozen(net):
    execution = net.run([{"a": 1}], engine="reference")
    list(execution)
    with pytest.raises(AttributeError):
        execution.stats().records_in = 0


def test_front_box_time_of_short_calls_is_sampled_and_of_long_calls_exact():
    # FRONT times every call of a box until a worker has made 64, then one short call in 16
    # (counted 16 times); a box whose calls average 20 us or more has every call timed.
    import time

    def quick(a):
        return {"a": a + 1}

    def turns_slow(a):
        if a >= 100:
            time.sleep(0.002)
        return {"a": a}

    net = snet.load("net n { box quick ((a) -> (a)); box turns_slow ((a) -> (a)); } connect quick .. turns_slow;",
                    boxes={"quick": quick, "turns_slow": turns_slow})
    with net.run([{"a": i - 1} for i in range(200)], engine="front", workers=1) as execution:
        assert len(list(execution)) == 200
        stats = execution.stats()
    assert stats.boxes["quick"].calls == stats.boxes["turns_slow"].calls == 200
    assert stats.boxes["quick"].seconds > 0
    # 100 calls of 2 ms: at most the 15 calls before the first sampled slow one go uncounted
    assert stats.boxes["turns_slow"].seconds >= 85 * 0.002


def test_a_session_gives_each_box_s_figures_while_it_runs():
    """session.stats(): calls, histogram, p99, the records queued for a box now, its limit, the memory."""
    release = threading.Event()

    def gate(a):
        if a == 100:
            release.wait(WAIT)  # the call in progress: later records queue for the gate
        return {"a": a}

    net = snet.load("net g { box f ((a) -> (a)); box gate ((a) -> (a)); } connect f .. gate;",
                    boxes={"f": lambda a: {"a": a}, "gate": gate})
    with net.session(engine="front", workers=2, box_concurrency=1) as session:
        try:
            for a in range(3):
                session.feed({"a": a})
            got: list = []
            until(lambda: got.extend(session.poll()) or len(got) == 3, "three outputs")
            assert sorted(r["a"] for r in got) == [0, 1, 2]
            stats = session.stats()
            for name in ("f", "gate"):
                box = stats.boxes[name]
                assert box.calls == 3 and sum(box.histogram) == 3 and len(box.histogram) == LATENCY_BUCKETS
                assert 0 < box.p99 <= LATENCY_BOUNDS[-1] and box.limit == 1 and box.queued == 0
            assert stats.resident_bytes > 1 << 20
            session.feed({"a": 100})
            session.feed({"a": 101})
            session.feed({"a": 102})
            # The gate holds record 100; the other worker brings what the input throttle admits after it
            # through f to the gate's inbox, where it waits.
            queued = until(lambda: (now := session.stats()).boxes["gate"].queued and now, "a record queued")
            assert 1 <= queued.boxes["gate"].queued <= queued.records_in - 4
            assert queued.boxes["gate"].calls == 3 and queued.records_out == 3
            shown = queued._repr_html_()
            assert shown.count("<tr>") == 3 and "<td>gate</td>" in shown and "held in synchro-cells 0" in shown
        finally:
            release.set()
        outs = session.close()
    final = session.stats()
    assert sorted(r["a"] for r in outs) == [100, 101, 102]
    assert final.boxes["gate"].calls == 6 and final.boxes["gate"].queued == 0
    assert final.boxes["gate"].quantile(1.0) >= final.boxes["f"].quantile(1.0)  # the held call is the longest


def test_the_records_queued_for_a_chain_that_ends_inside_a_split_are_its_last_box_s():
    """``f .. (gate ! <k>)`` is one fused chain whose outputs leave by the split; its queue is ``gate``'s."""
    release = threading.Event()

    def gate(a, k):
        if a == 100:
            release.wait(WAIT)
        return {"a": a, "<k>": k}

    net = snet.load("net g { box f ((a, <k>) -> (a, <k>)); box gate ((a, <k>) -> (a, <k>)); } connect f .. (gate ! <k>);",
                    boxes={"f": lambda a, k: {"a": a, "<k>": k}, "gate": gate})
    with net.session(engine="front", workers=2, box_concurrency=1) as session:
        try:
            session.feed({"a": 0, "<k>": 0})
            got: list = []
            until(lambda: got.extend(session.poll()) or len(got) == 1, "one output")
            for a in (100, 101, 102):
                session.feed({"a": a, "<k>": a % 2})
            queued = until(lambda: (now := session.stats()).boxes["gate"].queued and now, "a record queued")
            assert 1 <= queued.boxes["gate"].queued <= 2 and queued.records_out == 1
        finally:
            release.set()
        outs = session.close()
    assert sorted(r["a"] for r in outs) == [100, 101, 102] and session.stats().boxes["gate"].queued == 0
    assert session.stats().front.entities.created == 2  # the chain and the sink, as for `f .. gate`


def test_the_engines_and_the_metrics_keep_one_set_of_buckets():
    """FRONT's C constant is the length of snet.stats's bounds; a call lands in the first bucket bounding it."""
    import snet_front.runtime as runtime

    from snet.stats import latency_bucket

    assert runtime.LATENCY_BUCKETS_COUNT == LATENCY_BUCKETS == len(LATENCY_BOUNDS) + 1
    assert LATENCY_BOUNDS[:5] == (1e-6, 1.5e-6, 2e-6, 3e-6, 4e-6)
    assert all(b < c for b, c in zip(LATENCY_BOUNDS, LATENCY_BOUNDS[1:]))
    for i, bound in enumerate(LATENCY_BOUNDS):
        assert latency_bucket(bound * 0.999) == i and latency_bucket(bound * 1.001) == i + 1
    assert latency_bucket(0.0) == 0 and latency_bucket(3600.0) == LATENCY_BUCKETS - 1
    box = BoxStats(100, 1.0, histogram=(0,) * 10 + (100,) + (0,) * (LATENCY_BUCKETS - 11))
    assert LATENCY_BOUNDS[9] < box.p99 <= LATENCY_BOUNDS[10]
    assert BoxStats(3, 1.0).p99 is None  # an engine that keeps no histogram


def test_a_snapshot_draws_the_table_of_top_with_rich(net):
    """``rich.print(stats)``: the heading and a row per box, the columns of ``snet run --top``."""
    rich_console = pytest.importorskip("rich.console", reason="drawing a snapshot needs rich")
    import io

    execution = net.run([{"a": i} for i in range(8)], engine="front", workers=1)
    list(execution)
    screen = io.StringIO()
    rich_console.Console(file=screen, width=120, color_system=None).print(execution.stats())
    lines = screen.getvalue().splitlines()
    assert lines[0].startswith("snet: ") and "in 8, out 8" in lines[0]
    header = [c.strip() for c in lines[3].split("┃") if c.strip()]
    assert header == ["box", "calls", "calls/s", "mean", "p99", "share", "queued", "limit"]
    rows = {cells[0]: cells for cells in ([c.strip() for c in line.split("│") if c.strip()]
                                          for line in lines[5:-1])}
    assert set(rows) == {"double", "keep"} and rows["double"][1] == rows["keep"][1] == "8"
    assert rows["double"][6:] == ["0", "1"]  # nothing queued at the end; one call at a time on one worker


def test_an_async_session_gives_the_same_figures(net):
    import asyncio

    async def main():
        async with net.asession(engine="front", workers=1) as session:
            outputs = [await session.submit({"a": i}) for i in range(5)]
            return outputs, session.stats()

    outputs, stats = asyncio.run(main())
    assert len(outputs) == 5 and isinstance(stats, RunStats)
    assert stats.boxes["double"].calls == sum(stats.boxes["double"].histogram) == 5
    assert stats.boxes["double"].limit == 1 and stats.boxes["double"].p99 is not None
