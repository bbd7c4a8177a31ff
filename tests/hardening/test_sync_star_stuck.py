"""A record no pattern of a synchro-cell star matches stays in the star (language.md §9, §10).

Both engines keep it (it is no error in itself, and the other records go on
pairing), warn once, and, when the input has ended with only such records
left, end the run with an error instead of running for ever.
"""

from __future__ import annotations

import logging

import pytest

import snet
from snet.errors import SNetRuntimeError

NET = "net ss connect [| {a}, {b} |] * {a, b};"


def test_the_stuck_record_does_not_stop_the_others_and_the_run_ends_with_an_error(engine_options, caplog):
    net = snet.load(NET)
    got = []
    with caplog.at_level(logging.WARNING, logger="snet"):
        with pytest.raises(SNetRuntimeError, match=r"cannot terminate: 1 record\(s\) stay in the synchro-cell star"):
            for out in net.run([{"a": 1}, {"c": 5}, {"b": 2}, {"b": 3}, {"a": 4}], **engine_options):
                got.append(out)
    assert sorted(map(sorted, (r.items() for r in got))) == [[("a", 1), ("b", 2)], [("a", 4), ("b", 3)]]
    assert "record {c} matches neither an exit pattern nor a synchro-cell pattern" in caplog.text


def test_a_session_stays_up_with_a_stuck_record(engine_options):
    net = snet.load(NET)
    session = net.session(**engine_options)
    try:
        session.feed({"c": 1})
        session.feed({"a": 1})
        session.feed({"b": 2})
        assert session.get(timeout=10.0) == {"a": 1, "b": 2}
    finally:
        with pytest.raises(SNetRuntimeError, match="cannot terminate"):
            session.close(timeout=30)
