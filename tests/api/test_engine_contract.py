"""The engine contract of snet.execution: engines declare what they can do, and are given what they report.

An engine is an :class:`snet.execution.Engine` found through
``snet.options.ENGINES``; :func:`snet.backends.start` lowers the plan as
the engine declares (``overlaps_async_boxes``: ``async def`` boxes become
deferred calls) and gives the execution the run's error policy and guards
when it is made.  The probe engine here is a registered engine of its own
that runs the real reference or FRONT engine and keeps what it was given.
"""

from __future__ import annotations

import sys
import types

import pytest

import snet
from snet.backends import engine
from snet.execution import Engine
from snet.options import ENGINES
from snet.plan import BoxPlan

SOURCE = "box slow ((a) -> (a));  box bad ((a) -> (a));  net n connect slow .. bad;"


async def slow(a):
    return {"a": a}


def bad(a):
    if a == 2:
        raise ValueError("two")
    return {"a": a}


def test_every_registered_engine_is_an_engine_object_under_its_name():
    for name in ENGINES:
        found = engine(name)
        assert isinstance(found, Engine)
        assert found.name == name
    assert engine("front").overlaps_async_boxes
    assert not engine("reference").overlaps_async_boxes


@pytest.mark.parametrize("inner", ["reference", "front"])
def test_start_lowers_for_the_engine_and_makes_the_execution_with_the_run_s_error_policy(monkeypatch, inner):
    real = engine(inner)
    seen = {}

    def start(plan, records, options=None, *, error_policy=None, guards=None):
        seen.update(plan=plan, error_policy=error_policy)
        return real.start(plan, records, options, error_policy=error_policy, guards=guards)

    module = types.ModuleType("snet_probe_engine")
    module.ENGINE = Engine(name="probe", start=start, overlaps_async_boxes=real.overlaps_async_boxes)
    monkeypatch.setitem(sys.modules, "snet_probe_engine", module)
    monkeypatch.setitem(ENGINES, "probe", "snet_probe_engine:ENGINE")

    net = snet.load(SOURCE, boxes={"slow": slow, "bad": bad})
    execution = net.run([{"a": i} for i in range(4)], engine="probe", on_error="skip", workers=2)
    outputs = sorted(r["a"] for r in execution)
    assert outputs == [0, 1, 3]
    boxes = {node.name: node for node in seen["plan"].nodes if isinstance(node, BoxPlan)}
    assert boxes["slow"].deferred is real.overlaps_async_boxes  # the async box, as the engine declared
    assert boxes["bad"].deferred is False
    assert seen["error_policy"] is not None
    assert execution.error_policy is seen["error_policy"]
    assert execution.failures == 1
