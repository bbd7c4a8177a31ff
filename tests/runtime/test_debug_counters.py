"""The debug build of FRONT counts what it makes and frees, and the suite checks that it balances.

Built with ``SNET_FRONT_DEBUG=1 python3 setup.py build_ext --inplace``, the
runtime counts, for the whole process, the runtimes, entities and licences
it makes and frees (``snet_front.runtime.debug_counters()``), and
tests/conftest.py checks after every test that what the test made was freed
(its ``front_debug`` fixture gives the two functions the check uses).
These tests need that build; the ordinary build counts nothing.
"""

from __future__ import annotations

import pytest

import snet
import snet_front.runtime as runtime

debug_build = pytest.mark.skipif(
    not runtime.DEBUG_BUILD,
    reason="FRONT is built without its debug counters: build it with "
           "'SNET_FRONT_DEBUG=1 python3 setup.py build_ext --inplace' to run this test")

NET = """
box f ((x) -> (x, <k>) | (y, <k>));
net n connect f .. ([| {x}, {y} |] * {x, y}) ! <k>;
"""


def f(x):
    return [{"x": x, "<k>": x % 5}, {"y": -x, "<k>": x % 5}]


def test_the_ordinary_build_counts_nothing():
    if runtime.DEBUG_BUILD:
        pytest.skip("this is the debug build: it counts")
    assert runtime.debug_counters() is None


@debug_build
@pytest.mark.parametrize("workers", [1, 4])
def test_a_run_frees_everything_it_made(workers, front_debug):
    front_debug_counters, front_debug_unbalanced = front_debug
    before = front_debug_counters()
    out = list(snet.load(NET, boxes={"f": f}).run([{"x": i} for i in range(200)], engine="front", workers=workers))
    assert len(out) == 200
    after = front_debug_counters()
    assert after["runtimes_made"] == before["runtimes_made"] + 1
    assert after["entities_made"] > before["entities_made"]
    assert after["licences_made"] > before["licences_made"]
    assert front_debug_unbalanced(before) == {}


@debug_build
def test_a_run_closed_half_way_frees_everything_it_made(front_debug):
    front_debug_counters, front_debug_unbalanced = front_debug
    before = front_debug_counters()
    execution = snet.load(NET, boxes={"f": f}).run(({"x": i} for i in range(10**9)), engine="front", workers=2)
    assert next(execution) is not None
    execution.close()
    del execution
    assert front_debug_unbalanced(before) == {}


@debug_build
def test_the_balance_check_finds_a_run_still_held(front_debug):
    front_debug_counters, front_debug_unbalanced = front_debug
    before = front_debug_counters()
    execution = snet.load(NET, boxes={"f": f}).run([{"x": 1}], engine="front")
    left = front_debug_unbalanced(before, timeout=0.2)
    assert left.get("runtimes") == 1 and left.get("entities", 0) > 0, left
    assert list(execution) == [{"x": 1, "y": -1, "<k>": 1}]
    execution.close()
    del execution
    assert front_debug_unbalanced(before) == {}
