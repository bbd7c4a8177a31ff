"""Soak: ten million records through a stateful network, read by a slow consumer, in constant memory.

The network pairs records in a synchro-cell star after a box; the consumer
naps now and then, so output backpressure holds the input back.  Resident
memory is sampled after the first tenth and must not grow by more than a
small margin afterwards.  ``SNET_SOAK_RECORDS`` lowers the size for a quick run.
"""

from __future__ import annotations

import os
import time

import pytest

import snet

RECORDS = int(os.environ.get("SNET_SOAK_RECORDS", "10000000"))
NET = """
net soak {
  box tag ((x) -> (x, <k>));
} connect (tag | [{y} -> {y}]) .. ([| {x, <k>}, {y} |] * {x, y});
"""


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def stream(n):
    for i in range(n // 2):
        yield {"x": i}
        yield {"y": i}


@pytest.mark.slow
def test_ten_million_records_through_a_stateful_network_with_a_slow_consumer():
    net = snet.load(NET, boxes={"tag": lambda x: {"x": x, "<k>": x % 7}})
    outputs = 0
    early = None
    with net.run(stream(RECORDS), workers=2) as execution:
        for out in execution:
            outputs += 1
            if outputs % 50_000 == 0:
                time.sleep(0.002)  # a consumer that falls behind now and then
            if outputs == RECORDS // 20:
                early = rss_bytes()
    assert outputs == RECORDS // 2
    grown = rss_bytes() - early
    assert grown < 48 * 2**20, f"resident memory grew by {grown / 2**20:.0f} MB"
    assert execution.stats().front.entities.alive < 16
