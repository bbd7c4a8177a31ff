"""What a Python worker builds for a run stays out of the collections its reused worker runs after each task."""

from __future__ import annotations

import gc
import sys
import weakref

from snet.spark.tasks import RunCache


class Node:
    pass


def cyclic() -> Node:
    """An entry that only the cyclic collector can free once it is dropped (as a plan or replica host can)."""
    node = Node()
    node.itself = node
    return node


def test_a_freezing_cache_leaves_its_entries_out_of_collections_and_collects_those_it_drops():
    cache = RunCache(freeze=True)
    try:
        entry = cache.get("plan", "run-0", cyclic)
        assert gc.get_freeze_count() > 0
        assert not any(o is entry for o in gc.get_objects())  # frozen: no collection walks it
        assert cache.get("plan", "run-0", cyclic) is entry  # a hit builds nothing, freezes nothing new
        dropped = weakref.ref(entry)
        del entry
        for i in range(1, RunCache.KEEP + 1):  # run-0 is dropped by the last of these misses
            cache.get("plan", f"run-{i}", cyclic)
        assert ("plan", "run-0") not in cache.entries
        assert dropped() is None  # unfrozen by that miss and collected by its collection
    finally:
        gc.unfreeze()


def test_a_cache_outside_a_reused_spark_worker_freezes_nothing():
    before = gc.get_freeze_count()
    cache = RunCache()
    entry = cache.get("plan", "run-0", cyclic)
    assert gc.get_freeze_count() == before
    assert any(o is entry for o in gc.get_objects())


def probe(_rows):
    import gc as collector

    from snet.spark.tasks import RUNS

    RUNS.get("probe", "run-probe", cyclic)
    yield RUNS.freeze, collector.get_freeze_count() > 0


def test_spark_reuses_its_python_workers_and_their_cache_freezes(spark):
    from pyspark import cloudpickle

    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)  # (the workers cannot import the tests)
    try:
        found = spark.sparkContext.parallelize([0, 1], 2).mapPartitions(probe).collect()
    finally:
        cloudpickle.unregister_pickle_by_value(module)
    assert found == [(True, True), (True, True)]
