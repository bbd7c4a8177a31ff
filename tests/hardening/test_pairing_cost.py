"""Pairing in a synchro-cell star costs the same per record however many records the cells hold.

Fed every ``{a}`` first and every ``{b}`` after, the k-th ``{b}`` used to pass
k fired cells (the reference engine: 47.7 s for 20,000 records; FRONT with a
``[]`` stage in the operand: 61 s).  Counting the cells offered a record
tells linear from quadratic without timing anything.
"""

from __future__ import annotations

import pytest

import snet
from snet.core.semantics import SyncCell

NETS = ["net s connect [| {a}, {b} |] * {a, b};", "net s connect ([| {a}, {b} |] .. []) * {a, b};"]


@pytest.mark.parametrize("source", NETS)
def test_each_record_is_offered_to_one_cell(engine_options, source, monkeypatch):
    offered = [0]
    accept = SyncCell.accept

    def counting(self, record):
        offered[0] += 1
        return accept(self, record)

    monkeypatch.setattr(SyncCell, "accept", counting)
    n = 2000
    records = [{"a": i} for i in range(n)] + [{"b": i} for i in range(n)]
    out = list(snet.load(source).run(records, **engine_options))
    assert sorted((r["a"], r["b"]) for r in out) == [(i, i) for i in range(n)]
    assert offered[0] <= 2 * n + 10, offered[0]  # quadratic: about n * n / 2
