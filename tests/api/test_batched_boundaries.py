"""Batched boundaries: box process calls and ``async def`` box calls go in batches on FRONT, each record's own.

The batch layer (snet.core.batching) is driven here both through whole
runs and directly, with a collecting entity standing where FRONT's box
entity stands (it receives the batches of finished calls).
"""

from __future__ import annotations

import threading
import time

import pytest

import snet
from snet.core.batching import BatchSizer, Settled
from snet.core.processes import BoxProcessDied, BoxProcesses

WAIT_S = 60  # an upper bound for a loaded machine, never a tuned delay

BOXES = '''
import os

def bump(n):
    if n % 100 == 37:
        raise ValueError(f"unlucky {n}")
    return {"n": n + 1}

def fragile(n):
    if n == 57:
        os._exit(3)
    return {"n": n}
'''


@pytest.fixture
def boxes_file(tmp_path):
    path = tmp_path / "bboxes.py"
    path.write_text(BOXES)
    return str(path)


class Collector:
    """Where FRONT's box entity would be: takes each delivery of finished calls ``(seq, item, outcome)``."""

    def __init__(self, expected: int):
        self.calls: dict = {}
        self.deliveries = 0
        self.expected = expected
        self.all_in = threading.Event()
        self.lock = threading.Lock()

    def deliver(self, finished: list) -> None:
        with self.lock:
            self.deliveries += 1
            for seq, item, outcome in finished:
                assert seq not in self.calls
                self.calls[seq] = (item, outcome)
            if len(self.calls) >= self.expected:
                self.all_in.set()


def _submit_all(pools, name, values, sink):
    batched = pools.function(name).__snet_batched__()
    for i, value in enumerate(values):
        deferred = batched(value)
        deferred.submit(deferred.work, sink, i, {"n": value})


def test_many_calls_travel_in_few_messages_and_each_failure_stays_its_records(boxes_file):
    from snet.core.boxes import load_module_from_path

    bump = load_module_from_path(boxes_file).bump
    pools = BoxProcesses({"bump": bump}, {"bump": 1})
    try:
        sink = Collector(3000)
        _submit_all(pools, "bump", list(range(3000)), sink)
        assert sink.all_in.wait(WAIT_S)
        messages, calls = pools.batches()
    finally:
        pools.close()
    assert calls == 3000
    assert messages < 3000 / 4, messages  # batches, not a message per call
    for seq, (item, outcome) in sorted(sink.calls.items()):
        assert item == {"n": seq}
        if seq % 100 == 37:
            assert type(outcome) is Settled
            with pytest.raises(ValueError, match=f"unlucky {seq}"):
                outcome.result()
            assert f"unlucky {seq}" in outcome.value.__snet_traceback__  # the box's traceback in the process
        else:
            assert outcome == {"n": seq + 1}


def test_a_process_dying_in_a_batch_fails_only_the_record_that_kills_it(boxes_file):
    from snet.core.boxes import load_module_from_path

    fragile = load_module_from_path(boxes_file).fragile
    pools = BoxProcesses({"fragile": fragile}, {"fragile": 1})
    try:
        sink = Collector(200)
        _submit_all(pools, "fragile", list(range(200)), sink)
        assert sink.all_in.wait(WAIT_S)
    finally:
        pools.close()
    failed = {seq: outcome for seq, (_, outcome) in sink.calls.items() if type(outcome) is Settled}
    assert list(failed) == [57]
    assert isinstance(failed[57].value, BoxProcessDied)
    assert all(sink.calls[seq][1] == {"n": seq} for seq in range(200) if seq != 57)


def test_skip_policy_sees_each_failing_record_alone_through_a_batched_run(boxes_file):
    net = snet.load("box bump ((n) -> (n)); net p connect bump;", boxes=boxes_file)
    errors = []
    records = [{"n": n} for n in range(2000)]
    outputs = list(net.run(records, engine="front", workers=2, processes=1, on_error=errors.append))
    assert [o["n"] for o in outputs] == [n + 1 for n in range(2000) if n % 100 != 37]  # input order kept
    # (the policy hears of failures as calls finish: in any order across workers)
    assert sorted(e["record"]["n"] for e in errors) == [n for n in range(2000) if n % 100 == 37]
    assert all(e["error"].startswith(f"box 'bump' raised ValueError: unlucky {e['record']['n']}") for e in errors)


def test_a_lone_record_is_answered_without_waiting_for_a_batch_to_fill(boxes_file):
    """A session fed one record at a time: each result comes while no more input follows it."""
    net = snet.load("box bump ((n) -> (n)); net p connect bump;", boxes=boxes_file)
    with net.session(engine="front", workers=1, processes=1) as session:
        for n in range(5):
            assert session.submit({"n": n}).result(timeout=WAIT_S) == [{"n": n + 1}]


def test_async_box_failures_under_skip_are_per_record_and_outputs_keep_order():
    async def halve(n):
        if n % 7 == 3:
            raise ValueError(f"odd one {n}")
        return {"n": n // 2}

    net = snet.load("box halve ((n) -> (n)); net p connect halve;", boxes={"halve": halve})
    errors = []
    outputs = list(net.run([{"n": n} for n in range(1500)], engine="front", workers=2, on_error=errors.append))
    assert [o["n"] for o in outputs] == [n // 2 for n in range(1500) if n % 7 != 3]
    assert sorted(e["record"]["n"] for e in errors) == [n for n in range(1500) if n % 7 == 3]


def test_the_sizer_grows_batches_while_overhead_dominates_and_shrinks_them_for_slow_boxes():
    sizer = BatchSizer(limit=64)
    for _ in range(10):  # 100 µs of overhead around 1 µs of box time per call
        sizer.measured(sizer.size, 100e-6 + sizer.size * 1e-6, sizer.size * 1e-6)
    assert sizer.size == 64
    for _ in range(10):  # now 5 ms of box work per call: overhead far below the share
        sizer.measured(sizer.size, 100e-6 + sizer.size * 5e-3, sizer.size * 5e-3)
    assert sizer.size == 1
    sizer.measured(1, 1e-3, 0.0)  # all overhead: a full batch doubles the size
    assert sizer.size == 2
    sizer.measured(1, 1e-3, 0.0)  # a batch smaller than the size does not make it grow
    assert sizer.size == 2
    sizer.measured(2, 1e-3, 0.0)
    assert sizer.size == 4


def test_a_guarded_box_process_is_not_batched(boxes_file):
    net = snet.load("box bump ((n) -> (n)); net p connect bump;", boxes=boxes_file)
    import snet.core.processes as processes

    seen = []
    original = processes.BoxProcesses.close

    def spy(self):
        seen.append(self.batches())
        original(self)

    try:
        processes.BoxProcesses.close = spy
        outputs = list(net.run([{"n": n} for n in range(50) if n % 100 != 37], engine="front", workers=1,
                               processes=1, box_timeout=30))
    finally:
        processes.BoxProcesses.close = original
    assert [o["n"] for o in outputs] == [n + 1 for n in range(50) if n % 100 != 37]
    assert seen and seen[0] == (0, 0)  # each call alone: its timeout is its record's own


def test_the_dispatcher_threads_end_with_their_runs(boxes_file):
    net = snet.load("box bump ((n) -> (n)); net p connect bump;", boxes=boxes_file)
    for _ in range(3):
        assert len(list(net.run([{"n": n} for n in range(300)], engine="front", workers=1, processes=2,
                                on_error="skip"))) == 297
    deadline = time.monotonic() + WAIT_S
    while any(t.name.startswith("snet-box-batches-") for t in threading.enumerate()):
        assert time.monotonic() < deadline, [t.name for t in threading.enumerate()]
        time.sleep(0.05)


REFUSED = '''
import os


class Exits:
    """Unpickled, this calls os._exit: an answer the parent refuses to read."""

    def __reduce__(self):
        return (os._exit, (7,))


def f(x):
    return {"y": Exits() if x == 150 else x}
'''


def test_an_answer_the_parent_refuses_fails_its_record_alone_in_a_batch(tmp_path):
    (tmp_path / "refused.py").write_text(REFUSED)
    net = snet.load("box f ((x) -> (y)); net n connect f;", boxes=str(tmp_path / "refused.py"))
    errors = []
    outputs = list(net.run([{"x": x} for x in range(400)], engine="front", workers=1, processes=1,
                           on_error=errors.append))
    assert [o["y"] for o in outputs] == [x for x in range(400) if x != 150]
    assert [e["record"] for e in errors] == [{"x": 150}]
    assert "_exit in the parent process" in errors[0]["error"]
