"""Fixtures shared by every test folder."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# CI checks the project out with the shared specification folder beside it.
SHARED = (ROOT / ".." / "shared").resolve()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    assert SHARED.is_dir(), f"the shared folder is expected beside the repository: {SHARED}"
    return SHARED


@pytest.fixture
def run_net():
    """``run_net(source, records, boxes=None, engine="reference", **options) -> (outputs, warnings)``."""
    import snet

    def run(source: str, records, boxes=None, engine: str = "reference", **options):
        net = snet.load(source, boxes=boxes if boxes is not None else {})
        execution = net.run(records, engine=engine, **options)
        outputs = list(execution)
        return outputs, list(execution.warnings)

    return run
