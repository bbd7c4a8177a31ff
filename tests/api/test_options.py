"""Run options are checked before a run starts: a bad one is a usage error naming it.

Each case would otherwise hang (a throttle that admits nothing), crash the
interpreter (a negative worker count reaching the runtime), or quietly mean
something else (0 workers read as "all cores").
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import snet
from snet.errors import EXIT_STARTUP, SNetUsageError
from snet.options import RunOptions

ROOT = Path(__file__).resolve().parents[2]

BAD = [
    ({"throttle": (0, 0)}, r"^throttle needs OFFSET >= 1 and FACTOR >= 0.*not \(0, 0\)"),
    ({"throttle": (1, -1)}, r"^throttle needs OFFSET >= 1 and FACTOR >= 0"),
    ({"throttle": "10,1"}, r"^throttle takes \(OFFSET, FACTOR\)"),
    ({"workers": 0}, r"^workers must be at least 1, not 0$"),
    ({"workers": True}, r"^workers must be an int >= 1 or None, not True$"),
    ({"workers": 2.5}, r"^workers must be an int >= 1 or None, not 2.5$"),
    ({"engine": "warp"}, r"^engine: unknown engine 'warp' \(engines: front, reference\)$"),
    ({"box_concurrency": -1}, r"^box_concurrency must be at least 1, not -1$"),
    ({"box_concurrency": {"f": 0}}, r"^box_concurrency must be at least 1 for box 'f', not 0$"),
    ({"box_concurrency_per_box": {"f": 0}}, r"^box_concurrency_per_box must be at least 1 for box 'f'"),
    ({"wokers": 2}, r"^unknown run option 'wokers' \(did you mean 'workers'\?\)$"),
    ({"box_concurency": 2}, r"did you mean 'box_concurrency'\?"),
    ({"spark_batch": 0}, r"^spark_batch must be at least 1, not 0$"),
    ({"spark_master": ""}, r"^spark_master must be a non-empty string"),
    ({"spark_conf": {"spark.x": 1}}, r"^spark_conf must be a mapping from str to str"),
    ({"spark_splits": ""}, r"^spark_splits must be a non-empty string"),
    ({"seed": 2**40}, r"^seed must be an int from"),
    ({"steal": "no"}, r"^steal must be True or False"),
    ({"spark_batch": 64}, r"^spark_batch applies to Spark: give spark_master \(--spark MASTER\) too$"),
    ({"spark_splits": "all", "split_processes": 2}, r"^spark_splits applies to Spark: give spark_master .*; the "
                                                     r"splits in split processes take process_splits"),
    ({"spark_conf": {"spark.x": "1"}}, r"^spark_conf applies to Spark"),
]


@pytest.fixture
def net():
    return snet.load("net n { box f ((a) -> (a)); } connect f;", boxes={"f": lambda a: {"a": a}})


def untouched_input(pulled: list):
    def records():
        pulled.append(True)
        yield {"a": 1}
    return records()


def front_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("snet-front-worker"))


@pytest.mark.parametrize("options,message", BAD, ids=[str(o) for o, _ in BAD])
def test_run_refuses_a_bad_option_before_starting(net, options, message):
    pulled: list = []
    before = front_threads()
    with pytest.raises(SNetUsageError, match=message):
        net.run(untouched_input(pulled), **options)
    assert pulled == [] and front_threads() == before


@pytest.mark.parametrize("options,message", BAD[:8], ids=[str(o) for o, _ in BAD[:8]])
def test_session_refuses_a_bad_option_before_starting(net, options, message):
    before = threading.active_count()
    with pytest.raises(SNetUsageError, match=message):
        net.session(**options)
    assert threading.active_count() == before


def test_negative_workers_is_a_usage_error_not_a_crash():
    # In a child process: before the check, the runtime took the count and the interpreter died.
    code = textwrap.dedent("""
        import sys, snet
        net = snet.load("net n { box f ((a) -> (a)); } connect f;", boxes={"f": lambda a: {"a": a}})
        try:
            list(net.run([{"a": 1}], workers=-1))
        except snet.SNetUsageError as e:
            print(e)
            sys.exit(e.exit_status)
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == EXIT_STARTUP, result.stderr
    assert result.stdout.strip() == "workers must be at least 1, not -1"


def test_an_unknown_option_with_nothing_close_lists_the_options(net):
    with pytest.raises(SNetUsageError, match=r"unknown run option 'colour' \(options: engine, workers, throttle"):
        net.run([], colour="blue")


def test_good_options_are_normalised():
    options = RunOptions.from_keywords(throttle=[4, 1], box_concurrency={"f": 2}, spark_conf={"k": "v"},
                                         spark_master="local[1]")
    assert options.throttle == (4.0, 1.0)
    assert options.box_concurrency is None and options.box_concurrency_per_box == {"f": 2}
    assert RunOptions.from_keywords(box_concurrency=3).box_concurrency == 3
    assert RunOptions(workers=1, engine="reference", seed=-5).workers == 1


def test_per_box_limits_given_twice_are_refused():
    with pytest.raises(SNetUsageError, match="either as box_concurrency or as box_concurrency_per_box"):
        RunOptions.from_keywords(box_concurrency={"f": 1}, box_concurrency_per_box={"g": 1})


def test_options_are_frozen():
    options = RunOptions(workers=2)
    with pytest.raises(AttributeError):
        options.workers = 0


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_valid_options_still_run(net, engine):
    out = list(net.run([{"a": i} for i in range(20)], engine=engine, workers=1, throttle=(2, 1),
                       box_concurrency={"f": 1}, seed=3, steal=False))
    assert out == [{"a": i} for i in range(20)]
