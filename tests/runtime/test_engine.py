"""Behaviour of the FRONT engine that the conformance cases do not pin down.

Errors and early stops (every worker joined), input exceptions, box
concurrency keeping order, GIL-releasing boxes overlapping, initialisers on
empty input, termination warnings, statistics and the input throttle.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

import snet
from snet.errors import SNetBoxError, SNetRuntimeError


def front_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("snet-front-worker"))


def run(source, records, boxes=None, **options):
    net = snet.load(source, boxes=boxes or {})
    with net.run(records, engine="front", **options) as execution:
        outputs = list(execution)
    return outputs, execution


PIPE = """
net pipe {
  box slow ((a) -> (a));
  box fast ((a) -> (a));
} connect fast .. slow .. fast;
"""


def sleepy_boxes(active=None, peak=None, lock=None):
    def slow(a):
        if lock is not None:
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
        time.sleep(random.random() * 0.002)  # releases the GIL
        if lock is not None:
            with lock:
                active[0] -= 1
        return {"a": a * 10}

    def fast(a):
        return {"a": a + 1}

    return {"slow": slow, "fast": fast}


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_concurrent_box_calls_keep_stream_order(workers):
    records = [{"a": i} for i in range(300)]
    outputs, _ = run(PIPE, records, sleepy_boxes(), workers=workers, box_concurrency=4)
    assert [r["a"] for r in outputs] == [(i + 1) * 10 + 1 for i in range(300)]


def test_gil_releasing_box_calls_overlap_on_two_workers():
    active, peak, lock = [0], [0], threading.Lock()
    records = [{"a": i} for i in range(200)]
    outputs, _ = run(PIPE, records, sleepy_boxes(active, peak, lock), workers=2)
    assert len(outputs) == 200
    assert peak[0] >= 2  # two calls of the same box instance were in flight at once


def test_box_concurrency_one_never_overlaps():
    active, peak, lock = [0], [0], threading.Lock()
    records = [{"a": i} for i in range(100)]
    run(PIPE, records, sleepy_boxes(active, peak, lock), workers=4, box_concurrency={"slow": 1})
    assert peak[0] == 1


def test_box_error_stops_the_run_and_joins_every_worker():
    source = """
    net fails { box boom ((a) -> (a)); } connect [{a} -> {a}] .. boom;
    """

    def boom(a):
        if a == 50:
            raise ValueError("fifty")
        return {"a": a}

    net = snet.load(source, boxes={"boom": boom})
    seen = []
    with pytest.raises(SNetBoxError, match="fifty"):
        with net.run(({"a": i} for i in range(10**9)), engine="front", workers=3) as execution:
            for record in execution:
                seen.append(record["a"])
    assert 49 in seen or len(seen) <= 50  # outputs that reached the output came first
    assert all(a != 50 for a in seen)
    assert front_threads() == 0


def test_routing_error_is_a_runtime_error():
    with pytest.raises(SNetRuntimeError, match="cannot route"):
        run("net r { box f ((a) -> (a)); } connect f | [{b} -> {b}];", [{"c": 1}], {"f": lambda a: {"a": a}},
            workers=2)
    assert front_threads() == 0


def test_a_parallel_routes_records_of_each_label_set_as_the_reference_engine_does():
    """Records of the last record's labels reuse its branch (no label set built); any other shape, the same
    labels in another order included, looks its branch up again; a record no branch takes still fails."""
    source = "net r { box f ((a) -> (a)); box g ((b) -> (b)); } connect f | g | [{a, b} -> {a, b, <both>}];"
    boxes = {"f": lambda a: {"a": a + 1}, "g": lambda b: {"b": -b}}
    records = [{"a": i} if i % 5 else {"b": i} for i in range(200)]
    records += [{"a": 1, "b": 2}, {"b": 3, "a": 4}, {"a": 5, "b": 6}, {"a": 7}, {"b": 8, "x": 0}, {"x": 0, "b": 9}]
    want = sorted(map(repr, snet.load(source, boxes=boxes).run(records, engine="reference")))
    for workers in (1, 2):
        got, _ = run(source, records, boxes, workers=workers)
        assert sorted(map(repr, got)) == want  # (a non-deterministic parallel: compared as multisets)
    with pytest.raises(SNetRuntimeError, match="cannot route"):
        run(source, [{"a": 1}, {"a": 2}, {"c": 3}], boxes, workers=1)


def test_input_exception_is_raised_after_earlier_outputs():
    def records():
        for i in range(20):
            yield {"a": i}
        raise ValueError("bad input record")

    net = snet.load("net p { box f ((a) -> (a)); } connect f;", boxes={"f": lambda a: {"a": a}})
    seen = []
    with pytest.raises(ValueError, match="bad input record"):
        with net.run(records(), engine="front", workers=2) as execution:
            for record in execution:
                seen.append(record["a"])
    assert sorted(seen) == list(range(20))
    assert front_threads() == 0


def test_close_stops_an_endless_run():
    net = snet.load("net p { box f ((a) -> (a)); } connect f;", boxes={"f": lambda a: {"a": a}})
    execution = net.run(({"a": i} for i in range(10**12)), engine="front", workers=2)
    for n, _ in enumerate(execution):
        if n == 1000:
            break
    execution.close()
    execution.close()
    assert front_threads() == 0


def test_top_level_initialiser_fires_on_empty_input():
    source = "net s { box init ( -> (x)); } connect init | [];"
    outputs, _ = run(source, [], {"init": lambda: [{"x": 1}, {"x": 2}]}, workers=2)
    assert outputs == [{"x": 1}, {"x": 2}]


def test_initialiser_outputs_come_first_in_every_replica():
    source = "net s { box init ( -> (<x>)); } connect (init | []) !! <k>;"
    records = [{"<k>": 1}, {"<k>": 2}, {"<k>": 1}]
    for workers in (1, 2, 4):
        outputs, _ = run(source, records, {"init": lambda: [{"<x>": 0}, {"<x>": 1}]}, workers=workers)
        assert outputs == [{"<x>": 0}, {"<x>": 1}, {"<k>": 1}, {"<x>": 0}, {"<x>": 1}, {"<k>": 2}, {"<k>": 1}]


def test_unfinished_cells_warn_at_termination():
    outputs, execution = run("net s connect [| {a}, {b} |] * {a, b};", [{"a": 1}, {"a": 2}, {"b": 3}], workers=2)
    assert outputs == [{"a": 1, "b": 3}]
    assert len(execution.warnings) == 1
    assert "synchro-cell discarded with 1 of 2 patterns filled" in execution.warnings[0]


def test_outputs_are_counted_exactly_while_every_worker_writes_to_the_output():
    # Two boxes end at the output and run on different workers at once, so
    # outputs are counted by several threads together (without the GIL a
    # plain increment loses counts).
    source = "box f ((a) -> (a)); box g ((b) -> (b)); net n connect f | g;"
    records = [{"a": i} if i % 2 else {"b": i} for i in range(40_000)]
    outputs, execution = run(source, records, {"f": lambda a: {"a": a}, "g": lambda b: {"b": b}}, workers=4)
    assert len(outputs) == 40_000
    stats = execution.stats()
    assert stats.records_in == 40_000 and stats.records_out == 40_000


@pytest.mark.parametrize("fuse", [False, True])
def test_statistics_report_what_the_runtime_did(fuse):
    records = [{"a": i} for i in range(500)]
    _, execution = run(PIPE, records, sleepy_boxes(), workers=2, fuse=fuse)
    stats = execution.stats()
    assert stats.engine == "front" and stats.workers == 2
    assert stats.records_in == 500 and stats.records_out == 500
    assert stats.boxes["slow"].calls == 500 and stats.boxes["fast"].calls == 1000
    assert stats.boxes["slow"].seconds > 0 and stats.boxes["fast"].seconds > 0
    front = stats.front
    # the three boxes and the output; fused, the boxes are one chain
    assert front.entities.created == (2 if fuse else 4) and front.entities.peak >= front.entities.alive
    assert len(front.workers) == 2
    assert sum(w.inputs for w in front.workers) == stats.records_in
    assert front.invocations == sum(w.invocations for w in front.workers)
    assert front.continuations == sum(w.continuations for w in front.workers)
    assert front.licences_stolen == sum(w.licences_stolen for w in front.workers)


def test_throttle_bounds_records_in_flight():
    net = snet.load("net p { box f ((a) -> (a)); } connect f;", boxes={"f": lambda a: {"a": a}})
    execution = net.run(({"a": i} for i in range(10**12)), engine="front", workers=2, throttle=(8, 1))
    with execution:
        for n, _ in enumerate(execution):
            stats = execution.stats()
            assert stats.records_in < 8 + stats.records_out + 1
            if n == 2000:
                break
    assert front_threads() == 0


@pytest.mark.slow
def test_steal_off_and_seeds_give_the_same_results():
    records = [{"a": i} for i in range(200)]
    expected = [(i + 1) * 10 + 1 for i in range(200)]
    for steal in (True, False):
        for seed in (0, 1, 2):
            outputs, _ = run(PIPE, records, sleepy_boxes(), workers=3, steal=steal, seed=seed)
            assert [r["a"] for r in outputs] == expected


def test_a_dropped_execution_stops_its_workers():
    import gc

    net = snet.load("net p { box f ((a) -> (a)); } connect f;", boxes={"f": lambda a: {"a": a}})
    execution = net.run(({"a": i} for i in range(10**12)), engine="front", workers=2)
    assert next(execution) == {"a": 0}
    del execution
    gc.collect()
    assert front_threads() == 0


def test_leaving_the_loop_keeps_the_outputs_a_batch_took():
    """Iteration takes outputs many at a time; what the loop did not reach comes from next(), in order."""
    net = snet.load("net p { box f ((a) -> (a)); } connect f;", boxes={"f": lambda a: {"a": a}})
    with net.run([{"a": i} for i in range(1000)], engine="front", workers=2) as execution:
        first = []
        for record in execution:
            first.append(record["a"])
            if len(first) == 10:
                break
        rest = [next(execution)["a"] for _ in range(5)]
        rest += [record["a"] for record in execution]
    assert first + rest == list(range(1000))


SERIAL_FG = "box f ((x) -> (x)); box g ((x) -> (y)); net p connect f .. g;"


def fails_at_three(failed):
    """Box f of SERIAL_FG: raises for x == 3, after setting ``failed``."""
    def f(x):
        if x == 3:
            failed.set()
            raise ValueError("three")
        return {"x": x}
    return f


def test_records_queued_before_a_failing_one_are_finished_and_their_outputs_come_before_the_error():
    """Record 1 is inside g, record 2 queued behind it, record 3 fails in f on a third worker: the workers
    finish record 2 before the run ends, so both outputs come, then the error (as on the reference engine).
    (Unfused: a fused f .. g would hold records 2 and 3 behind record 1's walk.)"""
    failed = threading.Event()

    f = fails_at_three(failed)

    def g(x):
        if x == 1:
            failed.wait(10)
            time.sleep(0.05)  # (so that the failure reaches the run before this call ends)
        return {"y": x}

    net = snet.load(SERIAL_FG, boxes={"f": f, "g": g})
    got = []
    with pytest.raises(SNetBoxError, match="three"):
        for out in net.run([{"x": 1}, {"x": 2}, {"x": 3}], engine="front", workers=3, box_concurrency=1,
                           fuse=False):
            got.append(out)
    assert failed.is_set()
    assert got == [{"y": 1}, {"y": 2}]


def test_a_failure_behind_a_box_call_that_does_not_return_still_ends_the_run():
    """Record 2 waits behind a call of g that does not return: finishing it cannot happen, and the error
    comes once the workers have made no progress for a second, not never."""
    failed, release = threading.Event(), threading.Event()

    f = fails_at_three(failed)

    def g(x):
        if x == 1:
            release.wait(300)  # released when the test ends
        return {"y": x}

    net = snet.load(SERIAL_FG, boxes={"f": f, "g": g})
    execution = net.run([{"x": 1}, {"x": 2}, {"x": 3}], engine="front", workers=3, box_concurrency=1, fuse=False)
    try:
        with pytest.raises(SNetBoxError, match="three"):
            list(execution)
        assert failed.is_set()
    finally:
        release.set()
        execution.close()


def test_outputs_of_calls_in_flight_when_another_fails_come_before_the_error():
    """Two calls at once, the later record's fails first: the earlier record's output is still delivered
    (it comes before the failure in order, as on the reference engine), then the error."""
    import threading

    started, failed = threading.Event(), threading.Event()

    def f(x):
        if x == 1:
            started.set()
            failed.wait(10)  # until the next record's call has raised
            time.sleep(0.05)  # (so that the failure reaches the run before this call ends)
            return {"y": 1}
        started.wait(10)
        failed.set()
        raise ValueError("two")

    net = snet.load("net p { box f ((x) -> (y)); } connect f;", boxes={"f": f})
    got = []
    with pytest.raises(snet.SNetRuntimeError, match="two"):
        for record in net.run([{"x": 1}, {"x": 2}], engine="front", workers=2, box_concurrency=2):
            got.append(record)
    assert got == [{"y": 1}]
