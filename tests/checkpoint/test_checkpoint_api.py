"""``net.run(records, checkpoint=DIR)``: a run stopped midway and started again yields the rest of the outputs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import snet
from snet.errors import SNetUsageError

sys.path.insert(0, str(Path(__file__).parent))

from checkpoint_harness import NETS, NETWORKS  # noqa: E402

SPLIT_SYNC = next(n for n in NETWORKS if n.name == "split_sync")


def _committed(directory: Path) -> int:
    return json.loads((directory / "manifest.json").read_text())["output"]["records"]


@pytest.fixture
def net():
    return snet.load(NETS / SPLIT_SYNC.snet, boxes=str(NETS / "boxes.py"))


@pytest.mark.parametrize("engine", ["reference", "front"])
@pytest.mark.parametrize("source", ["list", "file"])
def test_a_run_stopped_midway_goes_on_from_its_last_snapshot(net, engine, source, tmp_path):
    want = list(net.run(SPLIT_SYNC.records, engine=engine, workers=2))
    records = SPLIT_SYNC.records if source == "list" else str(SPLIT_SYNC.write_input(tmp_path))
    ck = tmp_path / "ck"
    first = net.run(records, engine=engine, workers=2, checkpoint=ck, checkpoint_interval=0.01)
    taken = []
    for record in first:
        taken.append(record)
        if (ck / "manifest.json").exists() and _committed(ck) >= 100:
            break
    first.close()  # as if the caller had crashed: what it took after the snapshot is taken again
    committed = _committed(ck)
    assert 100 <= committed <= len(taken) < len(want)
    rest = list(net.run(records, engine=engine, workers=2, checkpoint=ck, checkpoint_interval=0.01))
    assert taken[:committed] + rest == want
    assert list(net.run(records, engine=engine, workers=2, checkpoint=ck)) == []  # done: nothing more


def test_a_generator_is_refused(net, tmp_path):
    with pytest.raises(SNetUsageError, match="a generator or iterator cannot be replayed"):
        net.run((r for r in SPLIT_SYNC.records), checkpoint=tmp_path / "ck")
    assert not (tmp_path / "ck").exists()  # refused before the directory is made


def test_changed_records_are_refused(net, tmp_path):
    ck = tmp_path / "ck"
    assert len(list(net.run(SPLIT_SYNC.records, engine="reference", checkpoint=ck))) > 0
    changed = [dict(SPLIT_SYNC.records[0], x=-5)] + SPLIT_SYNC.records[1:]
    with pytest.raises(SNetUsageError, match="changed since the checkpoint"):
        net.run(changed, engine="reference", checkpoint=ck)
    assert len(list(net.run(changed, engine="reference", checkpoint=ck, checkpoint_reset=True))) > 0


# A box in process that sleeps before a split run in split processes: the checkpoint timer (every 10 ms) fires
# during the sleep, so a snapshot comes due while records wait in the split processes' partial batch
NAPPING = "net napping {\n  box nap((x, <k>) -> (x, <k>));\n  box inc((x) -> (x));\n} connect nap .. (inc !! <k>);\n"
NAPPING_BOXES = ("import time\n\ndef nap(x, k):\n    time.sleep(0.03)\n    return {'x': x, '<k>': k}\n\n"
                 "def inc(x):\n    return {'x': x + 1}\n")


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_a_snapshot_due_while_the_split_processes_batch_fills_waits_for_the_batch(engine, tmp_path):
    """The reference engine reads its next input with nothing in flight but the split executor's partial
    batch: a due snapshot makes it run the batch, then is taken (it failed with "internal error: the engine
    asked for input while records were in flight" whenever the timer fired outside a batch)."""
    (tmp_path / "net.snet").write_text(NAPPING)
    (tmp_path / "net.py").write_text(NAPPING_BOXES)
    net = snet.load(str(tmp_path / "net.snet"))
    records = [{"x": i, "<k>": i % 3} for i in range(24)]
    want = list(net.run(records, engine="reference"))
    ck = tmp_path / "ck"
    with net.run(records, engine=engine, workers=2, split_processes=2, process_batch=16, checkpoint=ck,
                 checkpoint_interval=0.01) as execution:
        got = list(execution)
        assert execution.stats().split_processes.flushes > 2  # the batches ran early, for the snapshots
    assert got == want
    assert _committed(ck) == len(want)
