"""Synchro-cells and the sync-star index as built (compiled by Cython) and as plain Python source.

``snet/core/cells.py`` holds the one implementation of a cell's state and
rules and of a synchro-cell star's index, which the reference engine and
FRONT both use; it is compiled at install time and also runs uncompiled.
Every case here runs on the compiled module and on the source loaded as
Python, so the two cannot drift apart.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect
import io
import pickle
import sys

import pytest

import snet
import snet.core.cells as compiled_cells
from snet.core.semantics import SyncPatterns
from snet.errors import SNetRuntimeError


def _source_module():
    path = inspect.getsourcefile(compiled_cells) or compiled_cells.__file__
    path = path[: path.rindex("cells")] + "cells.py"
    loader = importlib.machinery.SourceFileLoader("snet_core_cells_source", path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module  # importable by name: pickle finds its classes
    loader.exec_module(module)
    return module


SOURCE = _source_module()
BOTH = pytest.mark.parametrize("module", [compiled_cells, SOURCE], ids=["compiled", "source"])


def shape_of(source: str) -> SyncPatterns:
    graph = snet.load(source).graph
    return SyncPatterns(next(n for n in graph.nodes if n.kind == "sync"))


def test_the_installed_cells_module_is_compiled():
    assert compiled_cells.__file__.endswith((".so", ".pyd")), compiled_cells.__file__
    assert SOURCE.__file__.endswith(".py")


@BOTH
def test_a_cell_stores_passes_and_fires_with_the_merged_record(module):
    cell = module.new_cell(shape_of("net n connect [| {a}, {b, <t>} |];"))
    assert (cell.replica, cell.filled(), cell.stored_records(), cell.fired) == (-1, 0, 0, False)
    first = {"a": 1, "c": 7}
    assert cell.accept(first) is None
    assert cell.accept({"a": 2}) == {"a": 2}  # slot 1 is full: it passes unchanged
    assert cell.accept({"c": 9}) == {"c": 9}
    assert (cell.filled(), cell.stored_records(), cell.empty) == (1, 1, [1])
    assert cell.accept({"b": 2, "<t>": 5, "d": 0}) == {"a": 1, "c": 7, "b": 2, "<t>": 5}
    assert (cell.fired, cell.slots, cell.filled(), cell.stored_records()) == (True, None, 0, 0)
    assert cell.accept({"a": 3}) == {"a": 3}  # fired: an identity
    assert first == {"a": 1, "c": 7}  # records are never changed


@BOTH
def test_a_record_matching_every_pattern_fills_them_all_at_once(module):
    cell = module.new_cell(shape_of("net n connect [| {a}, {b} |];"))
    assert cell.take({"a": 1, "b": 2}, [0, 1]) == {"a": 1, "b": 2}
    assert cell.fired


@BOTH
def test_a_record_given_its_patterns_fills_only_the_empty_ones(module):
    cell = module.new_cell(shape_of("net n connect [| {a}, {b}, {c} |];"))
    assert cell.take({"a": 1, "b": 1}, [0, 1]) is None
    assert (cell.stored_records(), cell.filled()) == (1, 2)
    assert cell.take({"a": 2, "b": 2}, [0, 1]) == {"a": 2, "b": 2}  # both slots full: passes
    assert cell.take({"c": 3}, [2]) == {"a": 1, "b": 1, "c": 3}


@BOTH
def test_an_untested_record_raises_the_guard_error_of_an_empty_slot(module):
    cell = module.new_cell(shape_of("net n connect [| {a} if <u == 1>, {b} |];"))
    with pytest.raises(SNetRuntimeError, match="synchro-cell guard reads absent tag <u>"):
        cell.accept({"a": 1})
    assert cell.accept({"a": 1, "<u>": 1}) is None
    assert cell.accept({"a": 2}) == {"a": 2}  # the guarded slot is full: its guard is not evaluated


@BOTH
def test_patterns_matched_tests_labels_or_calls_the_guards(module):
    plain = shape_of("net n connect [| {a}, {a, b} |];").matcher
    assert list(module.patterns_matched({"a": 1, "b": 2}, plain.labels, None)) == [0, 1]
    assert list(module.patterns_matched({"a": 1}, plain.labels, None)) == [0]
    assert list(module.patterns_matched({"b": 2}, plain.labels, None)) == []
    later = shape_of("net n connect [| {a}, {b}, {c} |];").matcher
    assert list(module.patterns_matched({"c": 1}, later.labels, None)) == [2]
    assert list(module.patterns_matched({"a": 1, "b": 1, "c": 1}, later.labels, None)) == [0, 1, 2]
    guarded = shape_of("net n connect [| {a} if <u == 1>, {b} |];").matcher
    assert guarded.labels is None
    assert module.patterns_matched({"a": 1, "<u>": 1}, None, guarded.raw_all) == [0]
    assert module.patterns_matched({"a": 1}, None, guarded.raw_all) is None  # the guard cannot be evaluated


def offer_all(module, index, records):
    """Drive ``index`` as an engine does: each record to its cell, merged records on from the next replica."""
    out = []
    matcher = index.shape.matcher
    for record in records:
        after = -1
        while True:
            hits = module.patterns_matched(record, matcher.labels, matcher.raw_all)
            cell = index.find(hits, after)
            if cell is None:
                cell = index.open()
            result = index.offer(cell, record, hits)
            if result is None:
                break
            if "b" in result and "a" in result and cell.fired:
                out.append(result)
                break
            after, record = cell.replica, result
    return out


@BOTH
def test_the_index_pairs_the_kth_with_the_kth_and_forgets_fired_cells(module):
    index = module.SyncStarIndex(shape_of("net n connect [| {a}, {b} |];"))
    out = offer_all(module, index, [{"a": 0}, {"a": 1}, {"b": 0}, {"a": 2}, {"b": 1}, {"b": 2}])
    assert out == [{"a": 0, "b": 0}, {"a": 1, "b": 1}, {"a": 2, "b": 2}]
    assert (index.replicas, index.unfired(), index.cells) == (3, 0, {})
    assert all(len(queue) == 0 for queue in index.waiting)


@BOTH
def test_an_untested_record_walks_to_the_first_unfired_cell_after_its_position(module):
    index = module.SyncStarIndex(shape_of("net n connect [| {a} if <u == 1>, {b} |];"))
    first = index.open()
    assert index.offer(first, {"a": 1, "<u>": 1}, None) is None
    assert index.find(None, -1) is first
    assert index.offer(first, {"a": 2}, None) == {"a": 2}  # slot 1 full: it passes
    assert index.find(None, first.replica) is None  # a new replica's cell would test it, and fail
    assert index.find([1], -1) is first


@BOTH
def test_long_waiting_lists_keep_pairing_in_constant_probes(module):
    index = module.SyncStarIndex(shape_of("net n connect [| {a}, {b} |];"))
    n = 500
    out = offer_all(module, index, [{"a": i} for i in range(n)] + [{"b": i} for i in range(n)])
    assert out == [{"a": i, "b": i} for i in range(n)]
    assert index.probes <= 4 * n, index.probes  # a walk along the held cells: about n * n / 2


class _StatePickler(pickle.Pickler):
    """Leaves the static patterns behind, as the Spark replica state does (snet.spark.replicas)."""

    def __init__(self, file, shape):
        super().__init__(file)
        self.shape = shape

    def persistent_id(self, obj):
        return "shape" if obj is self.shape else None


class _StateUnpickler(pickle.Unpickler):
    def __init__(self, file, shape):
        super().__init__(file)
        self.shape = shape

    def persistent_load(self, pid):
        return self.shape


@BOTH
def test_cells_and_indexes_pickle_with_their_state(module):
    shape = shape_of("net n connect [| {a}, {b} |];")
    index = module.SyncStarIndex(shape)
    cell = index.open()
    index.offer(cell, {"a": 1}, [0])
    index.open()
    buffer = io.BytesIO()
    _StatePickler(buffer, shape).dump(index)
    copy = _StateUnpickler(io.BytesIO(buffer.getvalue()), shape).load()
    assert copy.shape is shape
    assert (copy.replicas, sorted(copy.cells), copy.cells[0].slots, copy.cells[0].empty) == \
        (2, [0, 1], [{"a": 1}, None], [1])
    assert copy.waiting[1][0] is copy.cells[0]  # the cells on the waiting lists are the cells of the index
    assert copy.offer(copy.find([1], -1), {"b": 2}, [1]) == {"a": 1, "b": 2}
    assert copy.unfired() == 1
