"""Bounded memory with a slow consumer, quiet idle workers, and a prompt stop while a box call runs."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import snet

PASS = "box f ((x) -> (y)); net n connect f;"


def endless(counter):
    for i in itertools.count():
        counter[0] = i + 1
        yield {"x": i}


@pytest.mark.parametrize("engine", [dict(engine="reference"), dict(engine="front", workers=1),
                                    dict(engine="front", workers=2), dict(engine="front", workers=4, throttle=(8, 1))])
def test_a_slow_consumer_holds_back_the_input(engine):
    """Outputs the consumer has not taken stop input admission: the run stays small."""
    from snet_front.runtime import OUTPUT_BOUND

    net = snet.load(PASS, boxes={"f": lambda x: {"y": x}})
    pulled = [0]
    taken = 0
    with net.run(endless(pulled), **engine) as execution:
        for out in execution:
            taken += 1
            if taken % 100 == 0:
                time.sleep(0.005)  # a consumer slower than the network
            if taken == 5000:
                break
    # Without backpressure the network pulls hundreds of thousands of records meanwhile.
    assert pulled[0] - taken <= OUTPUT_BOUND + 64, (pulled[0], taken)


def test_outputs_held_behind_a_stalled_call_hold_back_the_input():
    """A call that stalls holds the calls after it in the box's reorder buffer: they count as waiting outputs.

    With box concurrency 2 the second worker goes on past the stalled call;
    what it finishes cannot leave before it, and must stop the input as
    outputs waiting for the consumer do (it ran on without bound before).
    """
    from snet_front.runtime import OUTPUT_BOUND

    release = threading.Event()
    overrun = threading.Event()
    pulled = [0]

    def stalls_first(x):
        if x == 0:
            release.wait(30)
        return {"y": x}

    def source():
        for i in itertools.count():
            pulled[0] = i + 1
            if pulled[0] > OUTPUT_BOUND + 200:
                overrun.set()
            yield {"x": i}

    net = snet.load(PASS, boxes={"f": stalls_first})
    with net.run(source(), engine="front", workers=2, box_concurrency=2) as execution:
        try:
            assert not overrun.wait(2.0), pulled[0]  # (an event that must not come: the wait only bounds the test)
        finally:
            release.set()
        assert [next(execution) for _ in range(3)] == [{"y": 0}, {"y": 1}, {"y": 2}]


def test_the_output_bound_grows_for_a_consumer_faster_than_the_network_and_falls_back_for_a_slow_one():
    """The bound doubles when the outputs reached it and the consumer took them all faster than they came;
    a consumer that finds it reached at two takes in a row halves it, down to the run's own."""
    import queue

    from snet_front.runtime import OUTPUT_BOUND, OUTPUT_BOUND_MOST

    assert OUTPUT_BOUND_MOST == 16 * OUTPUT_BOUND
    given: queue.Queue = queue.Queue()

    def source():
        while (record := given.get()) is not None:
            yield record

    def f(x):
        if x == 0:
            time.sleep(0.3)  # the network makes the first outputs slowly: far slower than they are taken
        return {"y": x}

    def give(start, count):
        for x in range(start, start + count):
            given.put({"x": x})

    def backlog_reaches(waiting):  # (an event the test waits for; the deadline only bounds the test)
        deadline = time.monotonic() + 60
        while runtime.output_backlog()[0] < waiting:
            assert time.monotonic() < deadline, runtime.output_backlog()
            time.sleep(0.001)

    net = snet.load(PASS, boxes={"f": f})
    with net.run(source(), engine="front", workers=1) as execution:
        runtime = execution.inner.runtime
        give(0, OUTPUT_BOUND)
        backlog_reaches(OUTPUT_BOUND)
        assert runtime.output_backlog() == (OUTPUT_BOUND, OUTPUT_BOUND)
        assert [out["y"] for out in itertools.islice(execution, OUTPUT_BOUND)] == list(range(OUTPUT_BOUND))
        give(OUTPUT_BOUND, 1)
        assert next(execution) == {"y": OUTPUT_BOUND}  # (it found none waiting first)
        assert runtime.output_backlog() == (0, 2 * OUTPUT_BOUND)
        # Slow now: the outputs are at the bound each time the consumer takes one
        give(OUTPUT_BOUND + 1, 2 * OUTPUT_BOUND)
        backlog_reaches(2 * OUTPUT_BOUND)
        assert next(execution) == {"y": OUTPUT_BOUND + 1}
        give(3 * OUTPUT_BOUND + 1, 1)
        backlog_reaches(2 * OUTPUT_BOUND)
        assert next(execution) == {"y": OUTPUT_BOUND + 2}
        assert runtime.output_backlog() == (2 * OUTPUT_BOUND - 1, OUTPUT_BOUND)
        given.put(None)
        assert [out["y"] for out in execution] == list(range(OUTPUT_BOUND + 3, 3 * OUTPUT_BOUND + 2))


@pytest.mark.slow
def test_idle_workers_sleep():
    """A network waiting for input costs (almost) no CPU, however many workers."""
    net = snet.load(PASS, boxes={"f": lambda x: {"y": x}})
    with net.session(workers=4) as session:
        session.feed({"x": 1})
        assert session.get(timeout=5.0) == {"y": 1}
        time.sleep(0.3)  # past the short naps
        before = time.process_time()
        time.sleep(1.0)
        used = time.process_time() - before
    # Polling every 200 µs, four workers took about 0.2 s of CPU per second.
    assert used < 0.08, used


def test_closing_a_run_does_not_wait_for_a_box_call_that_does_not_return():
    started = threading.Event()

    release = threading.Event()

    def slow(x):
        if x:
            started.set()
            release.wait(300)  # released when the test ends
        return {"y": x}

    net = snet.load(PASS, boxes={"f": slow})
    execution = net.run([{"x": 0}, {"x": 1}], workers=2)
    try:
        assert next(execution) == {"y": 0}
        assert started.wait(120)
        t0 = time.monotonic()
        execution.close()
        # The box call still blocks (until `release`, 300 s): close did not wait for it.  About no time at
        # rest; the bound is generous, for a busy machine.
        assert time.monotonic() - t0 < 60
    finally:
        release.set()
BOXES = textwrap.dedent("""
    import time

    def f(x):
        if x:
            open("inside", "w").close()  # in the run's folder: the test's signal comes now
            time.sleep(1000)
        return {"y": x}
""")


def wait_inside(proc: subprocess.Popen, tmp_path) -> None:
    """Until the box call that sleeps has begun (300 s at most, an upper bound only)."""
    deadline = time.monotonic() + 300
    while not (tmp_path / "inside").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (tmp_path / "inside").exists(), "the second box call never began"


@pytest.mark.slow
def test_one_ctrl_c_stops_the_cli_while_a_box_sleeps(tmp_path):
    """The outputs so far are written, exit 1, without waiting for the box call (of 1,000 s): about a second
    at rest; the bound is generous, for a busy machine."""
    (tmp_path / "n.snet").write_text(PASS)
    (tmp_path / "n.py").write_text(BOXES)
    (tmp_path / "in.jsonl").write_text('{"x": 0}\n{"x": 1}\n')
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "snet", "run", str(tmp_path / "n.snet"), "-i",
                             str(tmp_path / "in.jsonl"), "-o", str(out), "-w", "2"],
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            # as a terminal delivers it, even where the tests run with SIGINT ignored
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not (out.exists() and out.read_text().strip()):
            time.sleep(0.05)
        # Flushed although the network is busy with the next record.
        assert out.read_text().replace(" ", "").strip() == '{"y":0}'
        wait_inside(proc, tmp_path)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=120)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 1
    assert elapsed < 60, elapsed
    assert "interrupted" in proc.stderr.read()
    assert out.read_text().replace(" ", "").splitlines() == ['{"y":0}']


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["front", "reference"])
def test_sigterm_stops_the_cli_like_ctrl_c(tmp_path, engine):
    """What a service manager sends: outputs so far written, exit 1, one clean line, statistics."""
    (tmp_path / "n.snet").write_text(PASS)
    (tmp_path / "n.py").write_text(BOXES)
    (tmp_path / "in.jsonl").write_text('{"x": 0}\n{"x": 1}\n')
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "snet", "run", str(tmp_path / "n.snet"), "-i",
                             str(tmp_path / "in.jsonl"), "-o", str(out), "--engine", engine, "--stats"],
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not (out.exists() and out.read_text().strip()):
            time.sleep(0.05)
        wait_inside(proc, tmp_path)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read()
    assert code == 1
    assert "error: terminated (SIGTERM); the outputs produced so far were written" in stderr
    assert "Traceback" not in stderr
    assert "snet run statistics:" in stderr and " read, 1 written" in stderr
    assert out.read_text().replace(" ", "").splitlines() == ['{"y":0}']


@pytest.mark.parametrize("workers", [1, 4])
def test_a_throttle_below_the_networks_ratio_never_stalls_the_run(tmp_path, workers):
    """Three inputs per output against a factor of 0.5: input is admitted whenever the network runs dry.

    Before, the throttle (4, 0.5) held the sixth input back while the only
    cell waited for its third record, and the run hung with no message.
    """
    (tmp_path / "n.snet").write_text("net three connect [| {a}, {b}, {c} |] * {a, b, c};")
    (tmp_path / "in.jsonl").write_text("".join(f'{{"{label}": {i}}}\n' for i in range(300) for label in "abc"))
    proc = subprocess.run([sys.executable, "-m", "snet", "run", str(tmp_path / "n.snet"), "-i",
                           str(tmp_path / "in.jsonl"), "--throttle", "4,0.5", "-w", str(workers)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    outputs = sorted(tuple(sorted(json.loads(line).items())) for line in proc.stdout.splitlines())
    assert outputs == sorted(tuple(sorted({"a": i, "b": i, "c": i}.items())) for i in range(300))
    warnings = [line for line in proc.stderr.splitlines() if "throttle (4, 0.5)" in line]
    assert len(warnings) == 1, proc.stderr
    assert "needs more inputs per output than the factor 0.5 allows" in warnings[0]


def test_a_throttle_the_network_keeps_up_with_gives_no_warning(caplog):
    net = snet.load(PASS, boxes={"f": lambda x: {"y": x}})
    with caplog.at_level("WARNING", logger="snet"):
        with net.run(({"x": i} for i in range(2000)), throttle=(4, 1), workers=2) as execution:
            assert sorted(out["y"] for out in execution) == list(range(2000))
    assert not [r for r in caplog.records if "throttle" in r.getMessage()]
