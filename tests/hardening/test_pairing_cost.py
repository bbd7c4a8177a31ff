"""Pairing in a synchro-cell star costs the same per record however many records the cells hold.

Fed every ``{a}`` first and every ``{b}`` after, the k-th ``{b}`` used to pass
k fired cells (the reference engine: 47.7 s for 20,000 records; FRONT with a
``[]`` stage in the operand: 61 s).  Both engines keep a sync-star's cells in
one :class:`snet.core.cells.SyncStarIndex`, which counts the cells it looks
at (``probes``): linear tells from quadratic without timing anything.  The
index is driven here as the engines drive it (tests/core/test_cells.py runs
the same on the source), and the networks then run on every engine.
"""

from __future__ import annotations

import pytest

import snet
from snet.core.cells import SyncStarIndex, patterns_matched
from snet.core.semantics import SyncPatterns

NETS = ["net s connect [| {a}, {b} |] * {a, b};", "net s connect ([| {a}, {b} |] .. []) * {a, b};"]
N = 2000


def records(n: int) -> list:
    return [{"a": i} for i in range(n)] + [{"b": i} for i in range(n)]


def test_each_record_is_offered_to_one_cell():
    graph = snet.load(NETS[0]).graph
    index = SyncStarIndex(SyncPatterns(next(n for n in graph.nodes if n.kind == "sync")))
    out = []
    for record in records(N):  # as the engines do: a record to its cell, a merged one on after that cell
        after = -1
        while "a" not in record or "b" not in record:
            hits = patterns_matched(record, index.shape.matcher.labels, None)
            cell = index.find(hits, after) or index.open()
            record = index.offer(cell, record, hits)
            if record is None:
                break
            after = cell.replica
        else:
            out.append(record)
    assert out == [{"a": i, "b": i} for i in range(N)]
    assert index.probes <= 2 * N + 10, index.probes  # quadratic: about N * N / 2


@pytest.mark.parametrize("source", NETS)
def test_every_engine_pairs_the_kth_with_the_kth(engine_options, source):
    out = list(snet.load(source).run(records(N), **engine_options))
    assert sorted((r["a"], r["b"]) for r in out) == [(i, i) for i in range(N)]
