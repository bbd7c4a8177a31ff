"""Fixtures shared by every test folder."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Every engine must pass the behaviour suite: the tests that take `run_net` or
# `engine_options` run once per entry (Spark splits have their own suite in tests/spark).
ENGINES = {
    "reference": {"engine": "reference"},
    "front-w1": {"engine": "front", "workers": 1},
    "front-w4": {"engine": "front", "workers": 4},
}


@pytest.fixture(params=sorted(ENGINES))
def engine_options(request) -> dict:
    """The options that select one engine (and its worker count) for a run."""
    return dict(ENGINES[request.param])


@pytest.fixture
def run_net(engine_options):
    """``run_net(source, records, boxes=None, **options) -> (outputs, warnings)`` on each engine in turn."""
    import snet

    def run(source: str, records, boxes=None, **options):
        net = snet.load(source, boxes=boxes if boxes is not None else {})
        execution = net.run(records, **{**engine_options, **options})
        outputs = list(execution)
        return outputs, list(execution.warnings)

    return run


@pytest.fixture
def snet_in_process(monkeypatch):
    """``snet_in_process(*args, cwd=FOLDER)``: a compile-only command (``check``, ``fmt``) run by
    :func:`snet.cli.main` in this process, as a :class:`subprocess.CompletedProcess`.

    For the tests that check hundreds of programs: a child interpreter per
    program costs a third of a second of start-up each, which made those
    tests most of the quick loop.  The command's code is the same; the tests
    of the command line itself (exit statuses, signals, ``python -m snet``)
    keep running it in a child.
    """
    from snet.cli import main

    def run(*args: str, cwd: Path | str) -> subprocess.CompletedProcess:
        out, err = io.StringIO(), io.StringIO()
        with monkeypatch.context() as patch:
            patch.chdir(cwd)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status = main(list(args))
                except SystemExit as stop:
                    status = stop.code if isinstance(stop.code, int) else 1
        return subprocess.CompletedProcess(["snet", *args], status, out.getvalue(), err.getvalue())

    return run


# Fixtures that start Spark (a JVM) for a test, in this process or in a child: such tests are slow.
SPARK_FIXTURES = {"spark", "spark_installed", "spark_options", "cluster", "standalone_cluster"}
SPARK_TESTS = ROOT / "tests" / "spark"


def pytest_collection_modifyitems(items) -> None:
    """Mark every test that starts Spark ``slow``: ``python3 -m pytest -m "not slow"`` is the quick loop
    of work in progress (CONTRIBUTING.md), and CI runs everything.

    Those are the tests that take a Spark fixture, and every test of
    ``tests/spark`` (most start ``spark-submit`` or a Spark-native run in a child).
    """
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())) or SPARK_TESTS in Path(item.path).parents:
            item.add_marker(pytest.mark.slow)


def pytest_configure(config) -> None:
    """The quick loop (``-m "not slow"``) runs a sixth of each property test's examples
    (``tests/quickloop.py``); a full run, as CI's, runs them all."""
    import quickloop
    from hypothesis import settings

    if "not slow" in (config.getoption("markexpr") or ""):
        quickloop.QUICK = True
        settings.register_profile("quick", max_examples=quickloop.examples(100))
        settings.load_profile("quick")


def pytest_sessionstart(session) -> None:
    """Refuse to test compiled modules older than their sources.

    Editing a ``.pxi`` (or the box caller) and running pytest without a
    rebuild would test the old compiled module and pass or fail for the wrong
    reason; the runtime carries the digest of its sources (snet_front/sources.py).
    """
    try:
        import snet_front.runtime as runtime
    except ImportError:
        return  # an unbuilt tree: the tests that need FRONT fail and say why
    from snet_front.sources import sources_digest

    root = Path(runtime.__file__).resolve().parents[1]
    if getattr(runtime, "SOURCES_DIGEST", "") != sources_digest(root):
        pytest.exit(f"the compiled modules in {root} were built from other sources than those there now: "
                    f"rebuild them first ('python3 setup.py build_ext --inplace', or "
                    f"'python3 -m pip install -e .')", returncode=pytest.ExitCode.USAGE_ERROR)


# -- the debug build's balance (SNET_FRONT_DEBUG=1 python3 setup.py build_ext --inplace) --------------

#: Seconds a test's runtimes may take to be freed after it ends (a worker abandoned in a box call by
#: `close` lets its runtime go when the call returns); an upper bound, polled, never waited out.
DEBUG_BALANCE_S = 10.0


def front_debug_counters() -> dict | None:
    """The FRONT debug build's counters (snet_front/includes/debug.h), or None: not a debug build, or not built."""
    try:
        import snet_front.runtime as runtime
    except ImportError:
        return None
    return runtime.debug_counters()


def front_debug_unbalanced(before: dict, timeout: float = DEBUG_BALANCE_S) -> dict:
    """What was made since ``before`` and is still not freed, after a garbage collection ({}: nothing).

    For each kind (runtimes, entities, licences), made minus freed must be
    back at most where it was; polled until ``timeout``, so that threads
    that still hold a runtime for a moment can let it go.
    """
    import gc
    import time

    deadline = time.monotonic() + timeout
    while True:
        gc.collect()
        now = front_debug_counters()
        left = {kind: (now[f"{kind}_made"] - now[f"{kind}_freed"]) - (before[f"{kind}_made"] - before[f"{kind}_freed"])
                for kind in ("runtimes", "entities", "licences")}
        left = {kind: n for kind, n in left.items() if n > 0}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def front_debug_balance():
    """On a debug build of FRONT, every runtime, entity and licence a test made is freed when it ends.

    The ordinary build counts nothing and this checks nothing.
    """
    before = front_debug_counters()
    yield
    if before is None:
        return
    left = front_debug_unbalanced(before)
    assert not left, f"the FRONT runtime's debug counters do not balance after the test: still alive {left}"


RECURSION_LIMIT = sys.getrecursionlimit()  # the interpreter's, as the session found it


@pytest.fixture(autouse=True)
def recursion_limit_as_found():
    """Every test starts with the recursion limit the session started with.

    The limit is the process's, and an import can change it for good:
    PySpark's error helpers import IPython where it is installed, whose jedi
    sets 3,000 at import.  The compiler's depth checks and the record
    writers' nesting checks rely on the limit, so a test run after a Spark
    test would see another limit than one run alone.  (snet's own raises
    put it back: tests/core/test_recursion_limit.py.)
    """
    sys.setrecursionlimit(RECURSION_LIMIT)
    yield
    sys.setrecursionlimit(RECURSION_LIMIT)


@pytest.fixture
def front_debug():
    """``(counters, unbalanced)``: :func:`front_debug_counters` and :func:`front_debug_unbalanced`."""
    return front_debug_counters, front_debug_unbalanced
