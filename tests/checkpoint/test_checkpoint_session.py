"""``net.session(checkpoint=DIR)`` and ``session.checkpoint()``: a service's state survives a restart."""

from __future__ import annotations

import pytest

import snet
from snet.errors import SNetUsageError

PAIRS = "net pairs connect [| {a}, {b} |] * {a, b};"


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_a_session_started_again_holds_the_records_of_its_checkpoint(engine, tmp_path):
    net = snet.load(PAIRS)
    first = net.session(engine=engine, workers=2, checkpoint=tmp_path / "ck")
    for i in range(50):
        assert first.submit({"a": i}).result(timeout=60) == []  # stored, waiting for a b
    first.checkpoint(timeout=60)
    first.submit({"a": 99}).result(timeout=60)  # after the snapshot: lost with the session
    first.abort()
    second = net.session(engine=engine, workers=2, checkpoint=tmp_path / "ck")
    outs = [second.submit({"b": -i}).result(timeout=60) for i in range(51)]
    second.close()
    assert outs[:50] == [[{"a": i, "b": -i}] for i in range(50)]
    assert outs[50] == []  # {a: 99} came after the snapshot


def test_a_session_without_a_directory_refuses_checkpoint(tmp_path):
    with snet.load(PAIRS).session(engine="reference") as session:
        with pytest.raises(SNetUsageError, match="start it with net.session"):
            session.checkpoint()
