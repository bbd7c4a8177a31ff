"""Box concurrency ``auto``: the controller's decisions, and the runtime that applies them.

The decision function (:class:`snet.autoconc.Controller`) is tested on
synthetic windows from a model of a network, so that its choices do not
depend on the machine; the end-to-end tests use a box that sleeps (it
releases the GIL), where the gain of concurrency is unmistakable on any
machine, and assert the direction of the change, not its size.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import subprocess
import sys
import threading
import time

import pytest

import snet
from snet.autoconc import (BACKOFF_S, LOWER_WINDOWS, MAX_LEVEL, MORE_FIRST_S, QUIET_WINDOW_S, SETTLE_S, SHORT_CALL_S,
                           TURNS_BACKOFF_S, WINDOW_S, Controller, Window, _gil_enabled, first_workers)
from snet.errors import SNetUsageError
from snet.options import RunOptions


# -- a model of a network, for the decision function -----------------------------

class Model:
    """One box of ``service`` seconds per call behind cheap stages: the windows the counters would give.

    ``releases``: the box's calls overlap (they release the GIL), so ``level`` calls run at once;
    otherwise they take turns and each call's wall time grows with the calls in flight.  ``overhead``:
    seconds of GIL-bound work per record outside the box, a bit more per extra active worker
    (contention), a bit less on one worker (``one_worker_gain``).  ``noise``: relative noise of the rates.
    """

    def __init__(self, controller: Controller, node: int, *, service: float, releases: bool,
                 overhead: float = 20e-6, invocations: int = 30, noise: float = 0.0, one_worker_gain: float = 0.0,
                 seed: int = 0):
        self.c, self.node = controller, node
        self.service, self.releases, self.overhead = service, releases, overhead
        self.invocations, self.noise, self.one_worker_gain = invocations, noise, one_worker_gain
        self.random = random.Random(seed)

    def window(self, seconds: float = 0.2) -> Window:
        level, active = self.c.levels[self.node], self.c.active()
        overhead = self.overhead * (1 + 0.05 * (active - 2)) * (1 - self.one_worker_gain if active == 1 else 1)
        if self.releases:  # the call waits (a sleep): 5% of it on the CPU
            per_record = max(self.service / level, overhead)
            wall, cpu = self.service, 0.05 * self.service
        else:  # the GIL: one call at a time whatever the level, and a little worse with more threads
            per_record = self.service * (1 + 0.05 * (level - 1)) + overhead
            wall, cpu = self.service * level, self.service
        rate = (1 / per_record) * (1 + self.random.uniform(-self.noise, self.noise))
        calls = int(rate * seconds)
        return Window(seconds, calls * self.invocations, {self.node: (calls, calls * wall, calls * cpu)})

    def run(self, seconds: float, step: float = 0.2) -> list:
        """Windows of ``step`` seconds until ``seconds`` have passed, and then until no trial is in flight."""
        decisions, now = [], 0.0
        while now < seconds or self.c.trial is not None:
            now += step
            decisions += self.c.decide(self.window(step), now)
        return decisions


def controller(**kw) -> Controller:
    return Controller({7: "box"}, cores=kw.pop("cores", 2), max_workers=kw.pop("max_workers", 18), **kw)


def test_a_gil_releasing_box_is_raised_to_the_top_level_and_stays():
    c = controller()
    decisions = Model(c, 7, service=0.005, releases=True, noise=0.05).run(30.0)
    assert c.levels[7] == MAX_LEVEL
    kept = [d for d in decisions if d.node == 7 and d.reason.startswith("kept")]
    # calls that wait 95 % of their time: one step, to one core's worth of their computing parts (capped)
    assert [(d.old, d.new) for d in kept] == [(1, MAX_LEVEL)]
    undone = [d for d in decisions if d.node == 7 and d.reason.startswith("undone")]
    assert all("16 is needed" in d.reason for d in undone)  # only checks that 16 is still needed, undone
    assert 1 <= len(undone) <= 4  # at 4, 8, 16 s after the raise and so on: rarer and rarer
    assert c.summary()["workers"] in (1 + MAX_LEVEL, 2 + MAX_LEVEL)  # the box's calls, and the rest besides


def test_a_gil_releasing_box_settles_within_two_seconds_of_windows():
    c = controller()
    Model(c, 7, service=0.005, releases=True).run(2.0, step=0.1)
    assert c.levels[7] == MAX_LEVEL and c.settled_at <= 2.0


def _raise_trials(model: Model, seconds: float, step: float = 0.2) -> tuple[list[float], list]:
    """Run ``model`` for ``seconds``: when each raise of its box was tried, and the decisions that undid one."""
    c, tried_at, undone, now = model.c, [], [], 0.0
    while now < seconds or c.trial is not None:
        now += step
        for d in c.decide(model.window(step), now):
            if d.node == model.node and not d.kept and d.new > d.old:
                tried_at.append(now)
            if d.node == model.node and d.reason.startswith("undone"):
                undone.append(d)
    return tried_at, undone


def test_a_pure_python_box_is_not_raised():
    c = controller()
    tried_at, undone = _raise_trials(Model(c, 7, service=0.001, releases=False, noise=0.05), 60.0)
    assert c.levels[7] == 1
    assert tried_at and len(undone) == len(tried_at)  # every trial undone
    # each call took twice as long at level 2: the calls take turns, which the load does not change, so the
    # next trial waits 8 s, then 16, 32 (over a minute at most four trials)
    assert all("calls take turns" in d.reason for d in undone), [d.reason for d in undone]
    gaps = [b - a for a, b in zip(tried_at, tried_at[1:])]
    assert len(tried_at) <= 4 and all(gap >= TURNS_BACKOFF_S for gap in gaps), tried_at


def test_a_raise_that_gains_nothing_but_does_not_take_turns_is_tried_again_sooner():
    """A box whose calls overlap but that is not what limits the run (the stages around it are slower):
    each call takes as long at level 2, the work rate stays; the back-off starts at 1 s and doubles."""
    c = controller()
    tried_at, undone = _raise_trials(Model(c, 7, service=0.001, releases=True, overhead=0.0012), 20.0)
    assert c.levels[7] == 1
    assert len(undone) == len(tried_at) >= 4
    assert all("calls do not overlap (or the box is not the bottleneck)" in d.reason for d in undone)
    assert tried_at[1] - tried_at[0] < TURNS_BACKOFF_S


def test_a_cheap_gil_bound_pipeline_parks_a_worker():
    c = controller()
    decisions = Model(c, 7, service=20e-6, releases=False, overhead=40e-6, one_worker_gain=0.3).run(10.0)
    assert c.summary()["workers"] == 1
    assert any(d.node is None and d.old == 2 and d.new == 1 and d.reason.startswith("kept") for d in decisions)


def test_under_the_gil_a_box_of_calls_too_short_to_overlap_is_not_raised_but_the_workers_are_tried():
    # five cheap boxes fused, as sampled: 0.8 µs a call, 0.75 calls in flight at level 1, all of it computing
    busy = Window(0.1, 150_000, {7: (150_000, 0.1 * 0.75, 0.1 * 0.75)})
    c = controller(gil=True)
    c.skip = 0
    decisions = c.decide(busy, 0.1)
    assert [(d.node, d.old, d.new) for d in decisions] == [(None, 2, 1)], [d.describe() for d in decisions]
    assert c.levels[7] == 1
    # a free-threaded interpreter runs such calls at once: the raise is tried
    free = controller(gil=False)
    free.skip = 0
    assert [(d.node, d.old, d.new) for d in free.decide(busy, 0.1)] == [(7, 1, 2)]
    # and under the GIL, calls of SHORT_CALL_S or longer are tried as before
    longer = Window(0.1, 3_000, {7: (3_000, 0.1 * 0.75, 0.1 * 0.75)})  # 25 µs a call
    assert longer.service_time(7) >= SHORT_CALL_S
    slow = controller(gil=True)
    slow.skip = 0
    assert [(d.node, d.old, d.new) for d in slow.decide(longer, 0.1)] == [(7, 1, 2)]


def test_fewer_workers_are_undone_when_slower():
    c = controller()
    model = Model(c, 7, service=0.001, releases=False, overhead=40e-6)
    model.window = _slower_on_one_worker(model.window, c)
    decisions = model.run(3.0)
    assert c.summary()["workers"] == 2
    assert any(d.node is None and d.new == 2 and d.reason.startswith("undone") for d in decisions)


def _slower_on_one_worker(window, c):
    def slower(seconds=0.2):
        w = window(seconds)
        if c.active() > 1:
            return w
        halved = {n: (calls // 2, s / 2, u / 2) for n, (calls, s, u) in w.boxes.items()}
        return Window(w.seconds, w.invocations // 2, halved)
    return slower


def test_the_work_rate_is_the_box_calls_where_invocations_a_record_change_with_the_workers():
    # One worker admits runs of input into a fused chain, two hand each record on: fewer invocations a
    # record on one.  The boxes' calls a record stay, so they judge the trial, not the invocations.
    c = controller()
    model = Model(c, 7, service=20e-6, releases=False, overhead=40e-6, one_worker_gain=0.3)
    window = model.window

    def fewer_invocations_on_one_worker(seconds=0.2):
        w = window(seconds)
        return w if c.active() > 1 else Window(w.seconds, w.invocations // 3, w.boxes)

    model.window = fewer_invocations_on_one_worker
    decisions = model.run(10.0)
    assert c.summary()["workers"] == 1
    kept = [d for d in decisions if d.node is None and d.new == 1 and d.reason.startswith("kept")]
    assert kept and "box calls/s" in kept[0].reason


def test_a_network_without_box_calls_is_judged_by_its_invocations():
    c = controller(start_workers=2)
    c.skip = 0
    a = Window(0.2, 60_000, {})
    assert c.decide(a, 0.2)[0].reason.endswith("invocations/s: trying one worker fewer")
    assert c.decide(Window(0.05, 15_000, {}), 0.25) == []  # discarded
    undone = c.decide(Window(0.2, 30_000, {}), 0.45)
    assert undone[0].reason.startswith("undone: work rate 300,000 -> 150,000 invocations/s (-50%)")


def test_an_idle_box_is_lowered_after_the_observation_windows_and_not_raised_back():
    c = controller(cores=1)  # (no worker trial in between)
    c.levels[7] = 8
    c.skip = 0
    quiet = Window(0.2, 1000, {7: (100, 0.2 * 0.5)})  # half a call in flight at level 8
    decisions = []
    for i in range(LOWER_WINDOWS - 1):
        decisions += c.decide(quiet, 0.2 * (i + 1))
    assert c.levels[7] == 8 and not decisions  # not before the observation windows
    decisions += c.decide(quiet, 0.2 * LOWER_WINDOWS)
    assert c.levels[7] == 4 and "slots unused" in decisions[0].reason
    for i in range(20):  # the same load: lowered while below LOWER_AT (0.5 of 2 is not), never raised back
        decisions += c.decide(quiet, 1.0 + 0.2 * i)
    assert c.levels[7] == 2
    assert all(d.new < d.old for d in decisions if d.node == 7)


def test_the_settled_level_leaves_out_an_open_trial():
    c = controller()
    c.skip = 0
    busy = Window(0.2, 6000, {7: (200, 0.2)})
    (d,) = c.decide(busy, 0.2)
    assert d.new == 2 and not d.kept and c.levels[7] == 2  # (no CPU time measured: one doubling)
    summary = c.summary()
    assert summary["levels"] == {"box": 1} and summary["workers"] == 2 and summary["trials"] == 1


def test_decisions_never_exceed_the_workers_started():
    c = controller(max_workers=4)
    Model(c, 7, service=0.005, releases=True).run(10.0)
    assert c.levels[7] == 4 and c.active() <= 4


# -- the runtime -------------------------------------------------------------------

PIPE = """
net pipe {
  box slow ((a) -> (a));
  box fast ((a) -> (a));
} connect fast .. slow .. fast;
"""


def boxes(seconds=0.005, jitter=False):
    def slow(a):
        time.sleep(seconds * (random.random() if jitter else 1.0))  # releases the GIL
        return {"a": a * 10}

    def fast(a):
        return {"a": a + 1}

    return {"slow": slow, "fast": fast}


def test_a_sleeping_box_is_raised_while_the_run_goes_on_and_order_is_kept():
    net = snet.load(PIPE, boxes=boxes(jitter=True))
    # about 10 s at one call at a time: the run lasts beyond the trial of a higher level, well under a second
    records = [{"a": i} for i in range(4000)]
    with net.run(records, engine="front", box_concurrency="auto") as execution:
        outputs = list(execution)
    assert [r["a"] for r in outputs] == [(i + 1) * 10 + 1 for i in range(4000)]  # input order, levels changing
    stats = execution.stats()
    assert stats.boxes["slow"].concurrency >= 2
    assert stats.boxes["fast"].concurrency is not None
    assert stats.auto is not None and stats.auto.changes >= 1 and 1 <= stats.auto.workers <= stats.auto.max_workers
    alive = [t.name for t in threading.enumerate() if t.is_alive()]
    assert not [name for name in alive if name == "snet-box-concurrency-auto" or name.startswith("snet-front-worker")]


def test_workers_beyond_the_active_ones_start_only_when_the_count_reaches_them(caplog):
    """The pool holds the cores and the highest level; a thread starts when the active count first reaches its
    worker, so a run whose controller never raises the count starts as many threads as it starts with: one
    under the GIL, the cores without it."""
    net = snet.load(PIPE, boxes=boxes(seconds=0.0))
    cores = os.cpu_count() or 1
    first = first_workers(cores, held=False)
    assert first == (1 if _gil_enabled() else cores)
    with caplog.at_level(logging.INFO, logger="snet"):
        with net.run([{"a": i} for i in range(200)], engine="front", box_concurrency="auto") as execution:
            assert len(list(execution)) == 200
    auto = execution.stats().auto
    active = [int(n) for n in re.findall(r"; workers active: (\d+)$", caplog.text, re.M)]
    assert auto is not None and auto.max_workers == cores + MAX_LEVEL
    assert auto.started == max([first] + active), (auto, caplog.text)
    if not active:  # (the usual case: the run is over before the controller's first window)
        assert auto.started == first


def test_a_run_starts_on_one_worker_under_the_gil_unless_workers_are_held_apart_from_the_automatic_boxes(caplog):
    assert first_workers(4, held=False, gil=True) == 1
    assert first_workers(4, held=True, gil=True) == 4  # a split executor's batch, a box given a number
    assert first_workers(4, held=False, gil=False) == 4  # every worker runs Python at once
    net = snet.load(PIPE, boxes=boxes(seconds=0.0))
    cores = os.cpu_count() or 1
    # a box given a number above one holds as many workers in its calls: the run starts at the cores
    for fast, first in ((2, cores), (1, first_workers(cores, held=False))):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="snet"):
            with net.run([{"a": i} for i in range(50)], engine="front",
                         box_concurrency={"slow": "auto", "fast": fast}) as ex:
                assert len(list(ex)) == 50
        active = [int(n) for n in re.findall(r"; workers active: (\d+)$", caplog.text, re.M)]  # (a trial, if any)
        assert ex.stats().auto.started == max([first] + active), (fast, caplog.text)


def _worker_trials(model: Model, seconds: float, step: float = 0.2) -> tuple[list[float], list]:
    """Run ``model`` for ``seconds``: when each trial of one worker more started, and every decision."""
    c, tried_at, decisions, now = model.c, [], [], 0.0
    while now < seconds or c.trial is not None:
        now += step
        for d in c.decide(model.window(step), now):
            decisions.append(d)
            if d.node is None and not d.kept and d.new > d.old:
                tried_at.append(now)
    return tried_at, decisions


def test_a_run_started_on_one_worker_tries_one_more_after_a_second_and_stays_on_one_where_it_is_faster():
    c = controller(start_workers=1)
    assert c.active() == 1
    model = Model(c, 7, service=20e-6, releases=False, overhead=40e-6, one_worker_gain=0.3)
    tried_at, decisions = _worker_trials(model, 20.0)
    assert c.summary()["workers"] == 1
    assert tried_at and tried_at[0] >= MORE_FIRST_S, tried_at  # a run over within a second stays on one
    assert all("trying one worker more" in d.reason for d in decisions if d.node is None and not d.kept)
    undone = [d for d in decisions if d.node is None and d.kept]
    assert len(undone) == len(tried_at) and all(d.reason.startswith("undone") for d in undone)
    gaps = [b - a for a, b in zip(tried_at, tried_at[1:])]
    assert all(later > earlier for earlier, later in zip(gaps, gaps[1:])), tried_at  # backing off


def test_a_run_started_on_one_worker_keeps_a_second_where_it_is_faster_within_two_seconds():
    c = controller(start_workers=1)
    model = Model(c, 7, service=0.001, releases=False, overhead=40e-6)
    model.window = _slower_on_one_worker(model.window, c)
    _, decisions = _worker_trials(model, 2.0, step=0.1)
    assert c.active() == 2 and c.settled_at <= 2.0
    (kept,) = [d for d in decisions if d.node is None and d.kept]
    assert (kept.old, kept.new) == (1, 2) and kept.reason.startswith("kept") and "faster with more" in kept.reason


def test_a_box_given_a_number_keeps_it_beside_automatic_boxes():
    net = snet.load(PIPE, boxes=boxes(seconds=0.001))
    with net.run([{"a": i} for i in range(300)], engine="front", box_concurrency={"slow": "auto", "fast": 1}) as ex:
        assert len(list(ex)) == 300
    stats = ex.stats()
    assert stats.boxes["slow"].concurrency is not None and stats.boxes["fast"].concurrency is None


def test_the_reference_engine_accepts_auto_and_runs_one_call_at_a_time():
    net = snet.load(PIPE, boxes=boxes(seconds=0.0))
    with net.run([{"a": i} for i in range(20)], engine="reference", box_concurrency="auto") as ex:
        assert [r["a"] for r in ex] == [(i + 1) * 10 + 1 for i in range(20)]
    assert ex.stats().auto is None


@pytest.mark.parametrize("value", ["automatic", 0, 2.5])
def test_a_bad_concurrency_is_refused(value):
    with pytest.raises(SNetUsageError, match="box_concurrency must be"):
        RunOptions.from_keywords(box_concurrency=value)
    with pytest.raises(SNetUsageError, match="box_concurrency must be at least 1 for box 'f'"):
        RunOptions.from_keywords(box_concurrency={"f": value})


def test_auto_is_an_option_value():
    assert RunOptions.from_keywords(box_concurrency="auto").box_concurrency == "auto"
    assert RunOptions.from_keywords(box_concurrency={"f": "auto"}).box_concurrency_per_box == {"f": "auto"}


# -- the command line ----------------------------------------------------------------

def test_verbose_prints_each_change_and_stats_show_the_levels(tmp_path):
    (tmp_path / "net.snet").write_text(PIPE)
    (tmp_path / "net.py").write_text("import time\n\ndef slow(a):\n    time.sleep(0.005)\n    return {'a': a * 10}\n\n"
                                     "def fast(a):\n    return {'a': a + 1}\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(1500)))
    result = subprocess.run([sys.executable, "-m", "snet", "run", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl",
                             "--box-concurrency", "auto", "-v", "--stats", "--stats-json", "stats.json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    err = result.stderr
    # calls that sleep wait nearly all their time: the first trial is a level of 4 or more (as many as one core's
    # worth of their computing parts, at most 16), on as many workers besides the base
    trial = re.search(r"^info: box concurrency auto: box slow: level 1 -> (\d+) \([\d.]+ calls in flight at level 1, "
                      r"[\d.]+ ms per call, \d+% of it waiting: trying \1\); workers active: (\d+)$", err, re.M)
    assert trial is not None, err
    level = int(trial.group(1))
    base = first_workers(os.cpu_count() or 1, held=False)  # (no worker trial before a second)
    assert level in (4, 8, 16) and int(trial.group(2)) == base + level, err
    assert re.search(rf"^info: box concurrency auto: box slow: level 1 -> {level} \(kept( at once)?: work rate .* "
                     r"calls overlap\)",
                     err, re.M), err
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["boxes"]["slow"]["concurrency"] >= 2 and stats["boxes"]["fast"]["concurrency"] >= 1
    assert set(stats["auto"]) == {"workers", "max_workers", "changes", "trials", "settled_seconds", "started"}
    # a worker's thread starts when the active count first reaches it: as many as were ever active at once
    active = [int(n) for n in re.findall(r"; workers active: (\d+)$", err, re.M)]
    assert stats["auto"]["started"] == max([os.cpu_count() or 1] + active), (stats["auto"], active)
    assert re.search(r"^  box concurrency auto: \d+ of \d+ workers active; levels fast \d+, slow \d+; settled after",
                     err, re.M), err
    assert re.search(r"^  [\d.]+ m?s on the front engine with up to \d+ workers$", err, re.M), err
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 1500


def test_the_flag_refuses_other_words(tmp_path):
    (tmp_path / "net.snet").write_text(PIPE)
    result = subprocess.run([sys.executable, "-m", "snet", "run", "net.snet", "--box-concurrency", "slow=auto2"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60, input="")
    assert result.returncode == 2
    assert "--box-concurrency takes N, auto, NAME=N or NAME=auto, not 'slow=auto2'" in result.stderr


def test_an_idle_network_changes_nothing():
    c = controller()
    idle = Window(0.2, 0, {7: (0, 0.0, 0.0)})
    decisions = [d for i in range(100) for d in c.decide(idle, 0.2 * (i + 1))]
    assert not decisions and c.summary()["workers"] == 2 and c.levels[7] == 1


def test_windows_that_decide_nothing_grow_to_a_second_and_a_decision_shortens_them_again():
    c = controller(cores=1)  # (no worker trial)
    c.skip = 0
    c.judged = True
    quiet = Window(0.2, 6000, {7: (200, 0.2 * 0.3, 0.2 * 0.3)})  # 0.3 in flight at level 1: no raise
    lengths = []
    for i in range(6):
        lengths.append(c.window_length())
        assert not c.window_done(Window(c.window_length() - 0.01, 6000, quiet.boxes))
        assert c.window_done(Window(c.window_length(), 6000, quiet.boxes))
        assert c.decide(quiet, i + 1.0) == []
    assert lengths == [WINDOW_S, 2 * WINDOW_S, 4 * WINDOW_S, QUIET_WINDOW_S, QUIET_WINDOW_S, QUIET_WINDOW_S]
    busy = Window(1.0, 30_000, {7: (1000, 1.0 * 0.9, 1.0 * 0.9)})  # 0.9 in flight: a raise is tried
    assert c.decide(busy, 7.0)[0].new == 2
    assert c.window_length() == SETTLE_S  # the window after the change, discarded
    c.decide(Window(SETTLE_S, 1500, busy.boxes), 7.05)
    assert c.window_length() == WINDOW_S  # the trial's windows keep their length


def test_calls_in_flight_are_bounded_by_the_active_workers():
    # Five cheap boxes fused on two workers, as sampled in one window: 3.99 calls in flight in all
    boxes = {1: (1000, 0.116), 2: (1000, 0.082), 3: (1000, 0.072), 4: (1000, 0.276), 5: (1000, 0.252)}
    raw = Window(0.2, 5000, boxes)
    assert raw.in_flight(4) == pytest.approx(1.38)
    bounded = Window(0.2, 5000, boxes, workers=2)
    assert sum(bounded.in_flight(n) for n in boxes) == pytest.approx(2.0)
    assert bounded.in_flight(4) == pytest.approx(1.38 * 2 / 3.99)
    assert Window(0.2, 5000, {7: (100, 0.1)}, workers=2).in_flight(7) == pytest.approx(0.5)  # within: as measured
    c = Controller({n: f"b{n}" for n in boxes}, cores=2, max_workers=18)
    c.skip = 0
    # the controller bounds each window by the workers active during it: no box reaches 0.7 of its level
    assert not [d for d in c.decide(raw, 0.2) if d.node is not None]
    assert Controller({n: f"b{n}" for n in boxes}, cores=2, max_workers=18)._raise(raw, 0.2)  # unbounded


def test_noise_alone_cannot_make_the_levels_oscillate():
    """Rates that depend on nothing but noise (±40 %): some changes pass the dead band, but fewer and fewer."""
    c = controller()
    rng = random.Random(3)

    def window(seconds=0.2):
        calls = int(1000 * seconds * (1 + rng.uniform(-0.4, 0.4)))
        return Window(seconds, 30 * calls, {7: (calls, seconds * c.levels[7] * 0.9, seconds * 0.9)})

    kept_at = []
    for i in range(3000):  # ten minutes of windows
        now = 0.2 * (i + 1)
        kept_at += [now for d in c.decide(window(), now) if d.reason.startswith("kept")]
    assert len(kept_at) <= 16 and len([t for t in kept_at if t > 300]) <= 4, kept_at


def test_a_gain_without_more_calls_in_flight_is_not_the_raise():
    """The machine got faster while the box kept one call in flight: its second slot did nothing."""
    c = controller()
    c.skip = 0
    a = Window(0.2, 6000, {7: (200, 0.2 * 0.9, 0.2 * 0.9)})  # 0.9 in flight, 0.9 ms per call
    (start,) = c.decide(a, 0.2)
    assert start.new == 2 and not start.kept
    assert c.decide(Window(0.05, 1500, {7: (50, 0.045, 0.045)}), 0.25) == []  # discarded
    b = Window(0.2, 9000, {7: (300, 0.2 * 0.9, 0.2 * 0.9)})  # 1.5x the rate and the calls, still 0.9 in flight
    (verdict,) = c.decide(b, 0.45)
    assert verdict.reason.startswith("undone") and c.levels[7] == 1


def test_replicas_of_a_split_share_the_level_and_keep_their_order():
    source = """
    net keyed {
      box slow ((a, <k>) -> (a, <k>));
      box fast ((a, <k>) -> (a, <k>));
    } connect (fast .. slow .. fast) ! <k>;
    """
    def slow(a, k):
        time.sleep(0.004 * random.random())
        return {"a": a * 10, "<k>": k}

    def fast(a, k):
        return {"a": a + 1, "<k>": k}

    net = snet.load(source, boxes={"slow": slow, "fast": fast})
    records = [{"a": i, "<k>": i % 8} for i in range(2000)]
    with net.run(records, engine="front", box_concurrency="auto") as execution:
        outputs = list(execution)
    by_key = {}
    for r in outputs:
        by_key.setdefault(r["<k>"], []).append(r["a"])
    assert by_key == {k: [(i + 1) * 10 + 1 for i in range(k, 2000, 8)] for k in range(8)}
    assert execution.stats().auto.trials >= 1  # (about 2 s at level 1: the level changed while the records ran)
