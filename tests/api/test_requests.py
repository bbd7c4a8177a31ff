"""``Session.submit`` futures and ``max_pending`` (interfaces.md §4 "Services"), on every engine."""

from __future__ import annotations

import collections
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pytest

import snet

THREE = """
box split ((x) -> (y) | (y, <even>));
box twice ((y) -> (z));
box label ((z) -> (w));
net n connect split .. (twice || [{y, <even>} -> {z = y}]) .. label;
"""


def split(x):
    if x % 3 == 0:
        return None  # no output for this input
    if x % 2 == 0:
        return [{"y": x, "<even>": 1}, {"y": -x, "<even>": 1}]
    return {"y": x}


def twice(y):
    return {"z": 2 * y}


def label(z):
    return {"w": f"w{z}"}


BOXES = {"split": split, "twice": twice, "label": label}


def expected(i):
    """The outputs of input ``{"x": i, "id": i}``: what a user computes by hand.

    Odd: ``twice`` (the only branch that takes ``{y}``); even: the filter
    (the best match for ``{y, <even>}``), which consumes the tag.
    """
    if i % 3 == 0:
        return []
    if i % 2:
        return [{"w": f"w{2 * i}", "id": i}]
    return [{"w": f"w{i}", "id": i}, {"w": f"w{-i}", "id": i}]


def canonical(records):
    return sorted(json.dumps(r, sort_keys=True) for r in records)


def test_every_future_holds_exactly_its_own_outputs_with_8_threads_submitting(engine_options):
    net = snet.load(THREE, boxes=BOXES)
    with net.session(**engine_options) as session:
        def client(ids):
            return [(i, session.submit({"x": i, "id": i})) for i in ids]

        with ThreadPoolExecutor(8) as pool:
            batches = list(pool.map(client, [range(k, 10_000, 8) for k in range(8)]))
        for batch in batches:
            for i, future in batch:
                outputs = future.result(timeout=60)
                assert canonical(outputs) == canonical(expected(i)), i
                # a deterministic region keeps the order of the outputs of one input
                if i % 2 == 0 and i % 3:
                    assert [o["w"] for o in outputs] == [f"w{i}", f"w{-i}"]
        assert session.poll() == []  # submitted inputs' outputs go to their futures only
    assert session.stats().records_in == 10_000


def test_fed_and_submitted_inputs_share_a_session(engine_options):
    net = snet.load(THREE, boxes=BOXES)
    with net.session(**engine_options) as session:
        session.feed({"x": 1, "id": "fed"})
        future = session.submit({"x": 5, "id": "sub"})
        assert future.result(timeout=30) == [{"w": "w10", "id": "sub"}]
        assert session.get(timeout=30) == {"w": "w2", "id": "fed"}


def test_a_synchro_cell_consumes_what_it_stores_and_its_merge_belongs_to_the_completing_input(engine_options):
    net = snet.load("net n connect [| {a}, {b} |] * {a, b};", boxes={})
    with net.session(**engine_options) as session:
        first = session.submit({"a": 1})
        assert first.result(timeout=30) == []  # stored: nothing from it is left in flight
        second = session.submit({"b": 2})
        assert second.result(timeout=30) == [{"a": 1, "b": 2}]


@pytest.mark.slow
def test_max_pending_blocks_feed_and_submit_and_times_out(engine_options):
    gate = threading.Event()
    net = snet.load("box wait ((x) -> (x)); net n connect wait;", boxes={"wait": lambda x: gate.wait(30) and {"x": x}})
    with net.session(max_pending=2, **engine_options) as session:
        a = session.submit({"x": 1})
        session.feed({"x": 2})
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="max_pending: 2 inputs are inside the network"):
            session.submit({"x": 3}, timeout=0.3)
        with pytest.raises(TimeoutError):
            session.feed({"x": 3}, timeout=0.3)
        assert time.monotonic() - started >= 0.5
        blocked = threading.Thread(target=session.feed, args=({"x": 4},))
        blocked.start()
        time.sleep(0.2)
        assert blocked.is_alive()  # no timeout: it waits for room
        gate.set()
        blocked.join(30)
        assert not blocked.is_alive()
        assert a.result(timeout=30) == [{"x": 1}]
        outputs = session.close()
    assert sorted(o["x"] for o in outputs) == [2, 4]


def test_a_bounded_session_fed_for_ever_stays_small(engine_options):
    net = snet.load(THREE, boxes=BOXES)
    with net.session(max_pending=64, **engine_options) as session:
        taken = 0
        high = 0
        for i in range(30_000):
            session.feed({"x": i % 7 + 1, "id": i})
            high = max(high, len(session._live))
            taken += len(session.poll())
        taken += len(session.close())
    assert high <= 64
    assert taken == sum(len(expected(i % 7 + 1)) for i in range(30_000))


def test_skip_fails_the_future_of_the_failing_input_only(engine_options):
    net = snet.load("box f ((x) -> (y)); net n connect f;", boxes={"f": lambda x: {"y": 10 // x}})
    with net.session(on_error="skip", **engine_options) as session:
        futures = [session.submit({"x": x}) for x in (5, 0, 2)]
        assert futures[0].result(timeout=30) == [{"y": 2}]
        with pytest.raises(snet.SNetBoxError, match="box 'f' raised ZeroDivisionError"):
            futures[1].result(timeout=30)
        assert futures[2].result(timeout=30) == [{"y": 5}]
    assert session.stats().failures == 1


def test_a_failed_stop_session_fails_open_futures_and_every_later_call(engine_options):
    gate = threading.Event()

    def f(x):
        if x == 0:
            raise ValueError("bad request")
        gate.wait(30)
        return {"y": x}

    net = snet.load("box f ((x) -> (y)); net n connect f;", boxes={"f": f})
    session = net.session(**engine_options)
    bad = session.submit({"x": 0})
    with pytest.raises(snet.SNetBoxError, match="bad request"):
        bad.result(timeout=30)
    deadline = time.monotonic() + 30
    while session._error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    gate.set()
    for call in (lambda: session.feed({"x": 1}), lambda: session.submit({"x": 1}), lambda: session.get(0.1),
                 session.close):
        with pytest.raises(snet.SNetBoxError, match="bad request"):
            call()


@pytest.mark.slow
def test_aborting_fails_the_open_futures_instead_of_leaving_them_hanging(engine_options):
    gate = threading.Event()
    net = snet.load("box f ((x) -> (y)); net n connect f;", boxes={"f": lambda x: gate.wait(5) and {"y": x}})
    session = net.session(**engine_options)
    futures = [session.submit({"x": i}) for i in range(5)]
    time.sleep(0.1)
    session.abort()
    gate.set()
    done, not_done = wait(futures, timeout=10)
    assert not not_done
    for future in futures:
        if future.exception() is not None:
            assert "the session ended before this input was done (it was aborted)" in str(future.exception())


def test_records_that_stay_in_a_sync_star_fail_their_futures_when_the_session_closes(engine_options):
    net = snet.load("net n connect [| {a}, {b} |] * {a, b};", boxes={})
    session = net.session(**engine_options)
    stuck = session.submit({"c": 1})  # matches no pattern: it stays in the star for ever
    with pytest.raises(snet.SNetRuntimeError, match="the network cannot terminate"):
        session.close(timeout=30)
    with pytest.raises(snet.SNetRuntimeError, match="the network cannot terminate"):
        stuck.result(timeout=10)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "8"])
def test_max_pending_is_checked(value):
    net = snet.load("box f ((x) -> (y)); net n connect f;", boxes={"f": lambda x: {"y": x}})
    with pytest.raises(snet.SNetUsageError, match="max_pending must be an int >= 1 or None"):
        net.session(max_pending=value)


# -- every shared case: the futures together hold exactly what a run gives ------------------

CASES_DIR = Path(__file__).resolve().parents[1] / "conformance" / "cases"  # the project's copy


def _cases():
    found = []
    for folder in sorted(CASES_DIR.iterdir()) if CASES_DIR.is_dir() else []:
        spec_file = folder / "case.json"
        if not spec_file.is_file():
            continue
        spec = json.loads(spec_file.read_text())
        if spec.get("exit", 0) != 0 or spec.get("args") or not (folder / "input.jsonl").is_file():
            continue
        found.append(folder)
    assert found, f"no acceptance cases found in {CASES_DIR}"
    return found


@pytest.mark.parametrize("folder", _cases(), ids=lambda p: p.name)
def test_submitted_inputs_give_what_a_run_gives(folder, engine_options):
    net = snet.load(str(folder / "net.snet"), boxes=str(folder / "net.py") if (folder / "net.py").exists() else {})
    records = [json.loads(line) for line in (folder / "input.jsonl").read_text().splitlines() if line.strip()]
    whole = list(net.run(records, **engine_options))
    session = net.session(**engine_options)
    futures = [session.submit(r) for r in records]
    parts = [f.result(timeout=60) for f in futures]
    from_no_input = session.close(timeout=60)  # an initialiser's outputs come from no input
    assert collections.Counter(map(json.dumps, [o for part in parts for o in part] + from_no_input)) == \
        collections.Counter(map(json.dumps, whole))


def test_the_reference_engine_closed_during_a_box_call_leaves_the_request_undone():
    """Closed from another thread while a tracked input's box call runs: the request is not finished with a partial
    result when the call returns (the session fails it); it must never succeed with []."""
    from concurrent.futures import Future

    from snet.options import RunOptions
    from snet.requests import Request

    started, release = threading.Event(), threading.Event()

    def held(x):
        started.set()
        release.wait(30)
        return {"y": x}

    net = snet.load("box f ((x) -> (y)); net n connect f;", boxes={"f": held})
    future: Future = Future()
    request = Request({"x": 1}, future)
    execution = net.execute(iter([request]), RunOptions(engine="reference"))
    reader = threading.Thread(target=lambda: list(execution))
    reader.start()
    assert started.wait(10)
    execution.close()  # from this thread while the engine's thread is in the box call
    release.set()
    reader.join(30)
    assert not reader.is_alive()
    assert not request.finished and not future.done()
