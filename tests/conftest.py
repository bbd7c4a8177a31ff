"""Fixtures shared by every test folder."""

from __future__ import annotations

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
