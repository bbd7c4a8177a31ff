"""What checkpoints cost: throughput with snapshots against without, snapshot time and size, resume time.

    python3 -m pytest bench/test_bench_checkpoint.py --benchmark-only -s

1. the ten-box pipeline of bench/test_bench_front.py (100,000 records from
   a JSON Lines file, FRONT, one worker) with ``checkpoint=`` at the default
   interval (10 s) against the same run without; the same with a snapshot
   every second as a second figure (target: at least 0.95 of the
   throughput, that is a time ratio of at most 1.05);
2. a stateful network, the sync-star pairing ``[| {a}, {b} |] * {a, b}``
   over 300,000 records in runs of a's and b's (cells held between
   inputs), the same two ratios;
3. one snapshot's time and size against the records held in synchro-cells
   (1,000 / 10,000 / 100,000 unpaired records in a sync-star);
4. resume time: the run of 3 with 100,000 records held, started again
   with one more record appended (its pairing needs the restored cells):
   the time to its output, loading the state and rebuilding the cells
   included (target: at most 1 s plus the replay since the snapshot, which
   is nothing here); the whole resumed run (its final snapshot and the
   termination warnings of the 99,999 cells left) as a second figure.

Ratios are of medians of runs interleaved in one process (bench/conftest.py),
of the clock and of the processor time (steadier on a busy machine), each
with the baseline against itself for the noise; recorded in
docs/performance.md.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import snet
from conftest import paired
from snet.recordio import read_records
from test_bench_front import PIPE, PIPE_BOXES, RECORDS

PAIRS = "net pairs connect [| {a}, {b} |] * {a, b};"


def _file(folder: Path, name: str, records) -> str:
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def _pairing_records(n: int) -> list:
    rnd = random.Random(1)
    out, a, b = [], 0, 0
    while a + b < n:
        for _ in range(rnd.randint(1, 40)):
            out.append({"a": a})
            a += 1
        for _ in range(rnd.randint(1, 40)):
            out.append({"b": b})
            b += 1
    return out


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def paired_cpu(candidate, baseline, rounds: int = 5) -> float:
    """The ratio of median processor times (every thread of the process) of interleaved runs.

    Steadier than the clock on a machine that other work keeps busy: the
    clock counts the time the run waited for a core.
    """
    cand, base = [], []
    for _ in range(rounds):
        for run, times in ((baseline, base), (candidate, cand)):
            t = _cpu_seconds()
            run()
            times.append(_cpu_seconds() - t)
    return statistics.median(cand) / statistics.median(base)


def _ratios(net, path: str, folder: Path, **options) -> dict:
    def plain():
        return sum(1 for _ in net.run(read_records(path, "jsonl"), **options))

    def checkpointed(interval=None):
        ck = folder / "ck"
        shutil.rmtree(ck, ignore_errors=True)
        return sum(1 for _ in net.run(path, checkpoint=ck, checkpoint_interval=interval, **options))

    assert plain() == checkpointed()
    default = paired(checkpointed, plain)
    return {"ratio_default": default["ratio"], "plain_s": default["baseline_s"],
            "plain_against_itself": paired(plain, plain)["ratio"],  # the noise of the machine
            "cpu_ratio_default": paired_cpu(checkpointed, plain),
            "cpu_ratio_1s": paired_cpu(lambda: checkpointed(1.0), plain),
            "cpu_plain_against_itself": paired_cpu(plain, plain)}


def test_pipeline_throughput(benchmark, report):
    net = snet.load(PIPE, boxes=PIPE_BOXES)
    with tempfile.TemporaryDirectory() as tmp:
        path = _file(Path(tmp), "in.jsonl", RECORDS)
        figures = _ratios(net, path, Path(tmp), workers=1)
    report(**figures)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def test_stateful_throughput(benchmark, report):
    net = snet.load(PAIRS)
    with tempfile.TemporaryDirectory() as tmp:
        path = _file(Path(tmp), "in.jsonl", _pairing_records(300_000))
        figures = _ratios(net, path, Path(tmp), workers=1)
    report(**figures)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)


def test_snapshot_time_size_and_resume(benchmark, report):
    net = snet.load(PAIRS)
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for held in (1_000, 10_000, 100_000):
            path = _file(folder, f"in{held}.jsonl", [{"a": i, "note": "x" * 20} for i in range(held)])
            ck = folder / f"ck{held}"
            execution = net.run(path, workers=1, checkpoint=ck)
            assert list(execution) == []
            snapshot = execution.checkpointing  # one snapshot: the final one, with every record held
            figures[f"snapshot_ms_{held}"] = 1000 * snapshot.snapshot_seconds
            figures[f"snapshot_kb_{held}"] = snapshot.last_bytes / 1024
        with open(path, "a") as f:
            f.write(json.dumps({"b": -1}) + "\n")
        t = time.perf_counter()
        execution = net.run(path, workers=1, checkpoint=ck)
        first = next(execution)  # the appended record paired with a restored cell
        figures["resume_to_first_output_s_100000"] = time.perf_counter() - t
        assert first == {"a": 0, "note": "x" * 20, "b": -1}
        assert list(execution) == []
        figures["resumed_run_s_100000"] = time.perf_counter() - t  # its final snapshot and warnings included
    report(**figures)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
