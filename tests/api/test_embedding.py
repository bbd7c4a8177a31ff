"""The embedding API (interfaces.md §4): load, run, sessions."""

from __future__ import annotations

import threading
import time

import pytest

import snet
from snet.errors import SNetBoxError, SNetUsageError

def test_run_is_repeatable(engine_options):
    net = snet.load("box inc ((a) -> (a)); net n connect inc;", boxes={"inc": lambda a: {"a": a + 1}})
    for _ in range(3):
        assert list(net.run(({"a": i} for i in range(5)), **engine_options)) == [{"a": i + 1} for i in range(5)]


def test_run_streams_from_an_endless_iterator(engine_options):
    net = snet.load("box inc ((a) -> (a)); net n connect inc;", boxes={"inc": lambda a: {"a": a + 1}})
    pulled = []

    def endless():
        i = 0
        while True:
            pulled.append(i)
            yield {"a": i}
            i += 1

    with net.run(endless(), **engine_options) as execution:
        assert next(execution) == {"a": 1}
        assert next(execution) == {"a": 2}
    # The reference engine reads one record at a time; FRONT admits input until
    # its outputs waiting for the consumer reach the bound (backpressure).
    from snet_front.runtime import OUTPUT_BOUND
    assert len(pulled) <= OUTPUT_BOUND + 64


def test_mappings_in_any_form_are_accepted(engine_options):
    from types import MappingProxyType
    net = snet.load("net n connect [];")
    assert list(net.run([MappingProxyType({"a": 1})], **engine_options)) == [{"a": 1}]


def test_load_errors():
    with pytest.raises(SNetUsageError, match="network file not found"):
        snet.load("missing.snet")
    with pytest.raises(snet.SNetCompileError):
        snet.load("net n connect f;")


def test_signature_and_name():
    net = snet.load("box f ((a) -> (b)); net n connect f;", boxes={"f": lambda a: {"b": a}})
    assert net.name == "n"
    assert "{a}" in net.signature and "{b}" in net.signature


def test_session_survives_many_feeds(engine_options):
    net = snet.load("box inc ((a) -> (a)); net n connect inc;", boxes={"inc": lambda a: {"a": a + 1}})
    with net.session(**engine_options) as session:
        got = []
        for batch in range(50):
            for i in range(20):
                session.feed({"a": batch * 20 + i})
            deadline = time.monotonic() + 120  # an upper bound only, for a busy machine
            while len(got) < (batch + 1) * 20 and time.monotonic() < deadline:
                out = session.get(timeout=1.0)
                if out is not None:
                    got.append(out)
            assert len(got) == (batch + 1) * 20
        rest = session.close()
    assert rest == []
    assert sorted(r["a"] for r in got) == list(range(1, 1001))


def test_session_keeps_state_between_feeds(engine_options):
    net = snet.load("net n connect [| {a}, {b} |] * {a, b};")
    session = net.session(**engine_options)
    session.feed({"a": 1})
    session.feed({"a": 2})
    time.sleep(0.05)
    assert session.poll() == []
    session.feed({"b": 10})
    first = session.get(timeout=5)
    assert first == {"a": 1, "b": 10}
    session.feed({"b": 20})
    assert session.close() == [{"a": 2, "b": 20}]
    assert session.warnings == []


def test_session_error_is_raised_to_the_caller(engine_options):
    def boom(a):
        raise RuntimeError("boom")

    net = snet.load("box boom ((a) -> (a)); net n connect boom;", boxes={"boom": boom})
    session = net.session(**engine_options)
    session.feed({"a": 1})
    with pytest.raises(SNetBoxError, match="box 'boom' raised RuntimeError: boom"):
        session.close(timeout=10)


def test_session_iteration_ends_after_close(engine_options):
    net = snet.load("net n connect [{a} -> {a}; {b=a}];")
    session = net.session(**engine_options)
    session.feed_many({"a": i} for i in range(3))

    def closer():
        time.sleep(0.1)
        session.close()

    t = threading.Thread(target=closer)
    t.start()
    out = list(session)
    t.join()
    assert out == [{"a": 0}, {"b": 0}, {"a": 1}, {"b": 1}, {"a": 2}, {"b": 2}]
    with pytest.raises(SNetUsageError, match="session is closed"):
        session.feed({"a": 9})


def test_session_abort_stops_a_looping_network(engine_options):
    net = snet.load("net n connect [];")
    session = net.session(**engine_options)
    session.feed({"a": 1})
    assert session.get(timeout=5) == {"a": 1}
    session.abort()


def test_a_loop_left_early_and_next_share_one_order(engine_options):
    """The outputs a loop did not reach come from ``next()`` in order, and a new loop takes the rest."""
    net = snet.load("box inc ((a) -> (a)); net n connect inc;", boxes={"inc": lambda a: {"a": a + 1}})
    with net.run([{"a": i} for i in range(3000)], **engine_options) as execution:
        got = [next(execution)]
        for out in execution:
            got.append(out)
            if len(got) == 10:
                break
        got.append(next(execution))
        it = iter(execution)
        got.append(next(it))
        got.append(next(execution))
        got.extend(it)
    assert got == [{"a": i + 1} for i in range(3000)]
