"""Box concurrency ``auto`` where a split runs in an executor: batch sizes against a grid, ratios in one run.

    python3 -m pytest bench/test_bench_auto_batches.py --benchmark-only -s

``work ! <t>`` over 64 tag values, 10 records each (640 calls), the
5 ms pure-Python box of bench/test_bench_splitprocs.py (its loop calibrated
once to take about 5 ms here, then written into a box file and loaded from
there, as users' boxes are), FRONT with as many workers as cores, the split
run by:

1. two split processes (``--split-processes 2``): the grid is the batch
   size ``--process-batch`` 1, 4, 16, 64, 256, 1,024 (the default is
   1,024, every record of this run in one batch);
2. Spark ``local[2]`` (``--spark local[2]``): the grid is ``--spark-batch``
   1, 4, 16, 64, 256, 1,024 (the default is 4,096).

The box runs in the executor, so box concurrency does not apply to it: the
batch size is the setting that matters (the grid's runs give a number for
the box's concurrency, so that no tuner runs there).  Each setting runs
once, then the grid's fastest, the default before ``auto`` (as many
workers and calls as cores, the executor's default batch size) and
``auto`` (which chooses the batch sizes: ``snet.batchsize.SplitBatchSizer``)
run interleaved ``SNET_BENCH_ROUNDS`` more times (default 3); medians, as
throughput ratios (above 1: ``auto`` is faster), with the batch sizes
``auto`` set.
"""

from __future__ import annotations

import importlib.util
import shutil
import time
from collections import Counter

import pytest

import snet

from test_bench_auto import CORES, ROUNDS, against_grid
from test_bench_splitprocs import BOX, calibrated_loops

NET = "net fanned {\n  box work((x, <t>) -> (x, <t>));\n} connect work ! <t>;\n"
TAGS = 64
PER_TAG = 10
SIZES = (1, 4, 16, 64, 256, 1024)


def _fanned(tmp_path):
    """The network, its records, and the outputs the reference engine gives (a multiset)."""
    (tmp_path / "fanned.py").write_text(BOX.format(loops=calibrated_loops(), heavy_below=TAGS * PER_TAG))
    (tmp_path / "fanned.snet").write_text(NET)
    net = snet.load(str(tmp_path / "fanned.snet"))
    records = [{"x": i, "<t>": i % TAGS} for i in range(TAGS * PER_TAG)]
    return net, records, Counter((o["<t>"], o["x"]) for o in net.run(records, engine="reference"))


def _runner(net, records, expected, part, **executor):
    """``run(options)``: one run of ``net`` with the executor's options and ``options``; its time, the time of its
    second half and the batch sizes chosen (``part``: the executor's field of the run's statistics)."""
    def run(options):
        started, half_at, outputs = time.perf_counter(), None, Counter()
        with net.run(records, engine="front", **executor, **options) as execution:
            for output in execution:
                outputs[output["<t>"], output["x"]] += 1
                if half_at is None and sum(outputs.values()) == len(records) // 2:
                    half_at = time.perf_counter()
        end = time.perf_counter()
        assert outputs == expected
        stats = execution.stats()
        auto = stats.auto
        return {"seconds": end - started, "second_half": end - (half_at or started),
                "settled": auto.settled_seconds if auto is not None else None,
                "workers": auto.workers if auto is not None else None,
                "sizes": getattr(stats, part).batch_sizes or (getattr(stats, part).batch_size,)}
    return run


def _report(report, figures):
    sizes = figures.pop("auto_runs")
    for key in [key for key in figures if "second_half" in key]:  # (one batch gives every output at its end)
        del figures[key]
    report(**figures, auto_batch_sizes=" ".join("/".join(map(str, r["sizes"])) for r in sizes))


def test_auto_batch_sizes_in_split_processes(benchmark, report, tmp_path):
    net, records, expected = _fanned(tmp_path)
    run = _runner(net, records, expected, "split_processes", split_processes=2)
    run({})  # the fork server starts once, with snet's modules loaded
    grid = [(f"batch {n}", {"process_batch": n, "box_concurrency": CORES}) for n in SIZES]
    figures = benchmark.pedantic(against_grid, (run, grid, ROUNDS), rounds=1, iterations=1)
    _report(report, figures)


@pytest.mark.spark
def test_auto_batch_sizes_on_spark(benchmark, report, tmp_path):
    if shutil.which("java") is None or importlib.util.find_spec("pyspark") is None:
        pytest.skip("needs Java and pyspark")
    from snet.spark.cluster.session import get_session

    get_session("local[2]", {"spark.default.parallelism": "2"})
    net, records, expected = _fanned(tmp_path)
    run = _runner(net, records, expected, "spark", spark_master="local[2]")
    run({})  # the Python workers start, the run's boxes reach them
    grid = [(f"batch {n}", {"spark_batch": n, "box_concurrency": CORES}) for n in SIZES]
    figures = benchmark.pedantic(against_grid, (run, grid, ROUNDS), rounds=1, iterations=1)
    _report(report, figures)
