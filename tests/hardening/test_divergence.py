"""A network that unfolds for ever stops with an error, and never freezes its process.

A misspelt label in a star's exit pattern, or a record that no step of a
stateful star changes, unfolds the star without end (language.md §10: a
network that does not terminate).  Both engines see the sync-star case at
once, and bound the others (``max_held``, ``memory_limit``:
snet.core.limits) with an error naming the star's position and the record
that entered it.  While such a network runs, FRONT's workers reach safe
points: Ctrl-C and SIGTERM end ``snet run`` within 2 s, and the other
threads of an embedding process keep running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import snet
from snet.errors import SNetRuntimeError

ROOT = Path(__file__).resolve().parents[2]

PAIRS = "net pairs connect [| {a}, {b} |] * {a, bb};"  # the exit pattern's `bb` is a typo for `b`
RUNSUM = textwrap.dedent("""\
    net runsum {
      net merge connect [| {<v>}, {<acc>} |];
      net update connect [{<v>, <acc>} -> {<acc=acc+v>}; {<out=acc+v>}];
    } connect (merge .. ([] | update)) * {<out>};
    """)
# A star whose operand is the identity: every step is the runtime's own C code (no bytecode runs).
LOOP = "net loop connect ([]) * {y};"
DOUBLING = "net dbl connect ([{<n>} -> if <n <= 0> then {<leaf>} else {<n=n-1>}; {<n=n-1>}]) * {<leaf>};"

SMALL_BOUND = 20_000  # small enough to reach in well under a second on a busy machine


def test_a_record_filling_a_fresh_cell_alone_is_found_at_once(engine_options):
    net = snet.load(PAIRS)
    with pytest.raises(SNetRuntimeError) as info:
        list(net.run([{"a": 1}, {"b": 2}], **engine_options))
    text = str(info.value)
    assert text.startswith("<string>:1:34: error: the network cannot terminate: the record {a, b} fills every pattern")
    assert "unfolds the star for ever" in text


def test_a_legitimate_sync_star_is_unaffected(engine_options):
    net = snet.load("net pairs connect [| {a}, {b} |] * {a, b};")
    outs = list(net.run([{"a": 1}, {"b": 2}, {"b": 3}, {"a": 4}], **engine_options))
    assert sorted(map(sorted, (o.items() for o in outs))) == [[("a", 1), ("b", 2)], [("a", 4), ("b", 3)]]


def test_a_stateful_star_that_keeps_unfolding_stops_at_the_bound(engine_options):
    net = snet.load(RUNSUM)
    t0 = time.monotonic()
    with pytest.raises(SNetRuntimeError) as info:
        list(net.run([{"<acc>": 0}, {"<p>": 3}], max_held=SMALL_BOUND, **engine_options))
    text = str(info.value)
    assert text.startswith("<string>:4:36: error: the network keeps growing and may never terminate: ")
    assert f"past the bound of {SMALL_BOUND:,} (--max-held, max_held=)" in text
    assert "entered by the record {<p>}" in text
    assert time.monotonic() - t0 < 60


@pytest.mark.slow
def test_the_memory_limit_stops_a_growing_run(engine_options):
    net = snet.load(RUNSUM)
    with pytest.raises(SNetRuntimeError, match=r"the run's memory grew by \d+ MB, past its limit of 20 MB "
                                               r"\(--memory-limit, memory_limit=\); .* record \{<p>\}"):
        list(net.run([{"<acc>": 0}, {"<p>": 3}], max_held=None, memory_limit="20M", **engine_options))


def test_a_session_fails_the_futures_with_the_bound_error(engine_options):
    net = snet.load(RUNSUM)
    session = net.session(max_held=SMALL_BOUND, **engine_options)
    try:
        future = session.submit({"<p>": 3})
        with pytest.raises(SNetRuntimeError, match=r"keeps growing .* record \{<p>\}"):
            future.result(timeout=60)
    finally:
        with pytest.raises(SNetRuntimeError, match="keeps growing"):
            session.close(timeout=30)


def test_bad_bounds_are_refused():
    net = snet.load(RUNSUM)
    with pytest.raises(snet.SNetError, match="max_held must be at least 1"):
        net.run([], max_held=0)
    with pytest.raises(snet.SNetError, match="memory_limit must be a size in bytes"):
        net.run([], memory_limit="lots")


def test_the_default_bound_holds_legitimate_networks(engine_options):
    """The sieve and a deep doubling star run under the default bound to their right results."""
    case = ROOT / "tests" / "conformance" / "cases" / "sieve_star"
    if not case.is_dir():
        pytest.skip(f"the conformance case {case} is not in this checkout")
    net = snet.load(str(case / "net.snet"))
    primes = list(net.run([{"<limit>": 1000}], **engine_options))
    assert len(primes) == 168
    leaves = list(snet.load(DOUBLING).run([{"<n>": 12}], **engine_options))
    assert leaves == [{"<leaf>": 0}] * 2 ** 12


def test_front_holds_a_doubling_star_at_a_bounded_size():
    """A consumer that takes nothing: the workers stop at OUTPUT_BOUND outputs instead of unfolding on."""
    from snet_front.runtime import OUTPUT_BOUND

    net = snet.load(DOUBLING)
    with net.run([{"<n>": 40}], engine="front", workers=2) as execution:
        next(execution)
        first = execution.stats().records_out
        time.sleep(0.5)  # the workers get every chance to run ahead meanwhile
        later = execution.stats().records_out
    assert first <= OUTPUT_BOUND + 64 and later <= OUTPUT_BOUND + 64, (first, later)


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_front_unfolds_a_doubling_star_depth_first_with_several_workers(workers):
    """Every stage of the shared operand takes the deepest record first: the records in flight stay few.

    With the depth-first order at the star's incarnation only, a second worker queued records
    in the busy filter's FIFO and the star unfolded breadth first: 800,000 records in flight
    after 100,000 outputs.
    """
    net = snet.load(DOUBLING)
    taken = 0
    with net.run([{"<n>": 40}], engine="front", workers=workers, max_held=60_000) as execution:
        for _ in execution:
            taken += 1
            if taken == 150_000:
                break
    assert taken == 150_000


# -- in a child process: the command line, signals, an embedding process ----------

def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_run(tmp_path, program: str, records: list, *extra: str, busy: bool = True) -> subprocess.Popen:
    """`snet run -v` on ``program``; returns once the child says it starts and (``busy``) has run for 0.2 s of
    CPU."""
    (tmp_path / "net.snet").write_text(program)
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    child = subprocess.Popen([sys.executable, "-m", "snet", "run", "-v", "-i", str(tmp_path / "in.jsonl"),
                              str(tmp_path / "net.snet"), *extra], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=_env(), text=True)
    try:
        line = "-"
        while line and " engine" not in line:  # "info: front engine; input ...": the run starts now
            line = child.stderr.readline()
        assert line, "the child ended before its run started"
        started = _cpu_seconds(child.pid) if busy else 0.0
        deadline = time.monotonic() + 30
        while busy and _cpu_seconds(child.pid) - started < 0.2:  # the network is running (it takes a core)
            assert child.poll() is None, child.stderr.read()
            assert time.monotonic() < deadline, "the child never got busy"
            time.sleep(0.01)
    except BaseException:
        child.kill()  # a network that runs for ever must not outlive the test
        child.wait()
        raise
    return child


def _signalled(child: subprocess.Popen, signum: int) -> tuple[str, float]:
    """Send ``signum`` to the child: its standard error, and the seconds it took to end."""
    try:
        sent = time.monotonic()
        child.send_signal(signum)
        child.wait(timeout=30)
        return child.stderr.read(), time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see the child busy")


@pytest.mark.slow
@needs_proc
@pytest.mark.parametrize("engine", ["front", "reference"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("program,records,bound", [(LOOP, [{"x": 1}], []),
                                                   (RUNSUM, [{"<acc>": 0}, {"<p>": 3}], ["--max-held", "0"])],
                         ids=["identity-star", "runsum-unbounded"])
def test_a_signal_ends_a_diverging_run_within_two_seconds(tmp_path, engine, signum, program, records, bound):
    child = _start_run(tmp_path, program, records, "--engine", engine, "-w", "2", "--memory-limit", "2G", *bound)
    err, took = _signalled(child, signum)
    assert child.returncode == 1, err
    assert ("terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted") in err
    assert "Traceback" not in err
    assert took < 2.0, took


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["front", "reference"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_engine_starts_is_reported_as_that_signal(tmp_path, engine, signum):
    """Sent as soon as the run says it starts: the engine may still be starting, before its first output."""
    child = _start_run(tmp_path, LOOP, [{"x": 1}], "--engine", engine, "-w", "2", "--memory-limit", "2G", busy=False)
    err, _ = _signalled(child, signum)
    assert child.returncode == 1, err
    what = "terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted"
    assert err.strip().splitlines()[-1] == f"error: {what}; the outputs produced so far were written", err
    assert "Traceback" not in err


@pytest.mark.parametrize("engine", ["front", "reference"])
def test_snet_run_reports_the_divergence_and_exits_1(tmp_path, engine):
    (tmp_path / "net.snet").write_text(RUNSUM)
    (tmp_path / "in.jsonl").write_text('{"<acc>": 0}\n{"<p>": 3}\n')
    done = subprocess.run([sys.executable, "-m", "snet", "run", "--engine", engine, "--max-held", str(SMALL_BOUND),
                           "-i", str(tmp_path / "in.jsonl"), str(tmp_path / "net.snet")],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 1, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith(f"{tmp_path / 'net.snet'}:4:36: error: the network keeps growing and may never "
                            f"terminate: "), first
    assert "entered by the record {<p>}" in first
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


EMBEDDED = textwrap.dedent("""\
    import json, sys, threading, time
    import snet

    beats = [0]
    stop = threading.Event()

    def heartbeat():
        while not stop.is_set():
            beats[0] += 1
            time.sleep(0.001)

    threading.Thread(target=heartbeat, daemon=True).start()
    while beats[0] == 0:
        time.sleep(0.001)
    net = snet.load(sys.argv[1])
    before = beats[0]
    t0 = time.monotonic()
    error = None
    try:
        list(net.run([{"<acc>": 0}, {"<p>": 3}], engine="front", workers=2, max_held=int(sys.argv[2])))
    except snet.SNetError as e:
        error = str(e)
    seconds = time.monotonic() - t0
    stop.set()
    print(json.dumps({"beats": beats[0] - before, "seconds": seconds, "error": error}))
    """)


@pytest.mark.slow
def test_other_threads_of_an_embedding_process_keep_running(tmp_path):
    """A heartbeat thread counts on while FRONT unfolds the star, until the bound's error ends the run."""
    (tmp_path / "net.snet").write_text(RUNSUM)
    (tmp_path / "host.py").write_text(EMBEDDED)
    done = subprocess.run([sys.executable, str(tmp_path / "host.py"), str(tmp_path / "net.snet"), "200000"],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert "keeps growing" in result["error"] and "{<p>}" in result["error"]
    # A frozen host counts nothing while the run goes (and the run never ends: no bound is reached
    # before memory runs out); a live one counts on, however busy the machine.
    assert result["beats"] >= 20, result
