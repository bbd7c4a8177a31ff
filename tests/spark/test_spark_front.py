"""Spark splits inside the FRONT engine: when a batch that is not full runs.

A FRONT run fills a batch while input flows and runs it early only when
nothing else is in flight and no input can come soon (docs/spark.md): the
input has ended, the throttle holds it back, or the input iterator has been
waiting for its next record.  These tests feed input that depends on the
outputs, so a batch that waited for more input would never finish.
"""

from __future__ import annotations

import itertools
import time
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import MASTER  # noqa: E402

import snet  # noqa: E402

pytestmark = pytest.mark.spark

NET = """
net work {
  box double ((v, <k>) -> (v, <k>));
} connect double ! <k>;
"""


def double(v, k):
    return {"v": 2 * v, "<k>": k}


def test_a_waiting_input_iterator_gets_the_outputs_of_what_it_gave(spark):
    net = snet.load(NET, boxes={"double": double})
    got = []
    answered = threading.Event()

    def records():
        for round_ in range(3):
            answered.clear()
            for i in range(5):
                yield {"v": 10 * round_ + i, "<k>": i % 2}
            # The next round is only given once this round's outputs are out:
            # the batch (far from full) must run while the iterator waits.
            assert answered.wait(60), f"round {round_}: no outputs while the input waited"

    execution = net.run(records(), engine="front", workers=2, spark_master=MASTER, spark_splits="all",
                        spark_batch=4096)
    for out in execution:
        got.append(out["v"])
        if len(got) % 5 == 0:
            answered.set()
    assert sorted(got) == sorted(2 * (10 * r + i) for r in range(3) for i in range(5))
    split = next(iter(execution.stats().spark.splits.values()))
    assert split.batches == 3 and split.records == 15


def test_throttled_endless_input_keeps_flowing_through_a_spark_split(spark):
    net = snet.load(NET, boxes={"double": double})
    endless = ({"v": i, "<k>": i % 4} for i in itertools.count())
    execution = net.run(endless, engine="front", workers=2, spark_master=MASTER, spark_splits="all",
                        spark_batch=32, throttle=(16, 1))
    try:
        got = [out["v"] for out in itertools.islice(execution, 100)]
        stats = execution.stats()
    finally:
        execution.close()
    assert len(got) == 100 and all(v % 2 == 0 for v in got)
    assert stats.records_in <= 16 + stats.records_out
    # the throttle admits at most 16 records ahead of the outputs, so batches run before they are full
    split = next(iter(stats.spark.splits.values()))
    assert split.batches >= 100 // 32


def test_full_batches_while_input_flows(spark):
    net = snet.load(NET, boxes={"double": double})
    records = [{"v": i, "<k>": i % 8} for i in range(200)]
    execution = net.run(records, engine="front", workers=2, spark_master=MASTER, spark_splits="all",
                        spark_batch=50)
    out = list(execution)
    assert sorted(r["v"] for r in out) == [2 * i for i in range(200)]
    split = next(iter(execution.stats().spark.splits.values()))
    assert split.records == 200 and split.batches == 4  # 4 full batches, none cut short


def slow(v, k):
    time.sleep(0.25)
    return {"v": v, "<k>": k}


def test_closing_early_cancels_the_running_batch(spark):
    """An execution closed while a worker waits for a Spark job (an error elsewhere, Ctrl-C,
    a caller that stops reading) cancels the job instead of waiting for it."""
    net = snet.load(NET.replace("double", "slow"), boxes={"slow": slow})
    records = [{"v": i, "<k>": i % 4} for i in range(64)]  # one batch: 64 x 0.25 s on 2 cores, about 8 s
    execution = net.run(records, engine="front", workers=2, spark_master=MASTER, spark_splits="all",
                        spark_batch=64)
    time.sleep(2.0)  # the batch is running now
    started = time.monotonic()
    execution.close()
    assert time.monotonic() - started < 5.0
    # the session is still usable afterwards
    again = net.run(records[:4], engine="front", workers=2, spark_master=MASTER, spark_splits="all")
    assert sorted(r["v"] for r in again) == [0, 1, 2, 3]
