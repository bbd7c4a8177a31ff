"""What serving the metrics and drawing the live view cost a run: the ten-box pipeline with and without.

    python3 -m pytest bench/test_bench_metrics.py --benchmark-only -s

The live view (``snet run --top``, :class:`snet.commands.top.TopView`) is
measured the same way as the metrics below: the pipeline drawn every
``REFRESH_SECONDS`` on a rich console (into memory, as a terminal of 100
columns would get it) against the run without it.  What the engines keep
for these figures in any case (the per-box call-time histogram) is
measured against a tree without it by ``bench/histogram_against.py``.

The pipeline of bench/test_bench_front.py (ten trivial boxes, one worker),
over 300,000 records: the candidate runs with ``metrics_port=0`` and a
scraper reading ``/metrics`` every second (Prometheus's default is every 15
seconds), server start and stop included; the baseline runs without.  The
time a scrape takes (a ``stats()`` snapshot and its page, measured by the
scraper while the run goes on) and the processor time to make one page
are the second figures: on a loaded machine they bound the cost more
tightly than the ratio can.
Target: at most 2 % more time (ratio <= 1.02).  Both ratios are given: of
the clock, and of the processor time the process used (steadier when other
work shares the machine).  The figure is the ratio of
medians of runs interleaved in one process (bench/conftest.py), recorded in
docs/performance.md.
"""

from __future__ import annotations

import resource
import statistics
import threading
import time
import urllib.request

import pytest

import snet
from snet.metrics import MetricsServer
from conftest import paired
from test_bench_front import PIPE, PIPE_BOXES, RECORDS, drain

pytest.importorskip("prometheus_client", reason="the metrics need prometheus-client (the 'metrics' extra)")

SCRAPE_SECONDS = 1.0
LONG = RECORDS * 3  # 300,000 records: a run of seconds, so that it is scraped while it goes on
ROUNDS = 9  # the ratio sought is small: more rounds than the other benchmarks take

def paired_cpu(candidate, baseline, rounds: int) -> dict:
    """As conftest.paired, with the process's processor time (user and system) instead of the clock.

    On a machine that other work keeps busy the clock counts the time the
    run waited for a core; its processor time does not, and varies far less.
    """
    def used() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    cand, base = [], []
    for _ in range(rounds):
        t = used()
        baseline()
        base.append(used() - t)
        t = used()
        candidate()
        cand.append(used() - t)
    c, b = statistics.median(cand), statistics.median(base)
    return {"candidate_s": c, "baseline_s": b, "ratio": c / b}


def page_cpu_seconds(net, times: int = 500) -> float:
    """Processor time to make one /metrics page of the pipeline (a stats() snapshot and its text), no HTTP."""
    from prometheus_client import CollectorRegistry, generate_latest

    from snet.metrics import RunCollector

    execution = net.run(RECORDS[:1000], workers=1)
    list(execution)
    collector = RunCollector()
    collector.watch(execution, PIPE_BOXES)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    assert b'snet_box_calls_total{box="b9"} 1000.0' in generate_latest(registry)
    t = time.process_time()
    for _ in range(times):
        generate_latest(registry)
    return (time.process_time() - t) / times


def test_metrics_overhead_on_the_pipeline(benchmark, report):
    net = snet.load(PIPE, boxes=PIPE_BOXES)
    scrapes = []

    def served():
        with net.run(LONG, workers=1, metrics_port=0) as execution:
            done = threading.Event()

            def scrape():
                while not done.wait(SCRAPE_SECONDS):
                    try:
                        t = time.perf_counter()
                        urllib.request.urlopen(execution.metrics_url, timeout=10).read()
                        scrapes.append(time.perf_counter() - t)
                    except OSError:  # the run ended between the wait and the request
                        return

            scraper = threading.Thread(target=scrape, daemon=True)
            scraper.start()
            try:
                return list(execution)
            finally:
                done.set()
                scraper.join()

    def plain():
        return drain(net, LONG, workers=1)

    assert served() == plain()
    benchmark.pedantic(served, rounds=1, iterations=1)
    scrapes.clear()
    t = time.perf_counter()
    for _ in range(20):
        MetricsServer(0).close()
    start_stop = (time.perf_counter() - t) / 20
    page = page_cpu_seconds(net)
    figures = paired(served, plain, rounds=ROUNDS)
    cpu = paired_cpu(served, plain, rounds=ROUNDS)
    report(seconds_with_metrics=figures["candidate_s"], seconds_without=figures["baseline_s"],
           ratio=figures["ratio"], cpu_ratio=cpu["ratio"], scrapes=len(scrapes),
           ms_per_scrape=1e3 * statistics.median(scrapes) if scrapes else float("nan"),
           ms_to_start_and_stop_the_server=1e3 * start_stop, cpu_ms_per_page=1e3 * page)


def test_live_view_overhead_on_the_pipeline(benchmark, report):
    """``--top``'s view: a stats() snapshot and a table drawn every half second, against the run without."""
    pytest.importorskip("rich", reason="the live view draws with rich")
    import io

    from rich.console import Console

    from snet.commands.top import REFRESH_SECONDS, TopView

    net = snet.load(PIPE, boxes=PIPE_BOXES)
    drawn = []

    def viewed():
        screen = io.StringIO()
        view = TopView(PIPE_BOXES, Console(file=screen, force_terminal=True, width=100, height=24))
        with net.run(LONG, workers=1) as execution:
            view.start(execution)
            try:
                return list(execution)
            finally:
                view.stop()
                view.report(final=True)
                drawn.append(screen.getvalue().count("calls/s"))

    def plain():
        return drain(net, LONG, workers=1)

    assert viewed() == plain()
    assert drawn[-1] >= 2  # drawn at the start and at the end at least
    benchmark.pedantic(viewed, rounds=1, iterations=1)
    figures = paired(viewed, plain, rounds=ROUNDS)
    cpu = paired_cpu(viewed, plain, rounds=ROUNDS)
    view = TopView(PIPE_BOXES, Console(file=io.StringIO(), force_terminal=True, width=100, height=24))
    execution = net.run(RECORDS[:1000], workers=1)
    list(execution)
    view.execution = execution
    t = time.process_time()
    for _ in range(200):  # a snapshot, its table, drawn
        view.console.print(view._renderable())
    per_frame = (time.process_time() - t) / 200
    report(seconds_with_view=figures["candidate_s"], seconds_without=figures["baseline_s"],
           ratio=figures["ratio"], cpu_ratio=cpu["ratio"], frames_per_run=statistics.median(drawn),
           refresh_s=REFRESH_SECONDS, cpu_ms_per_frame=1e3 * per_frame,
           # what the frames cost, as a share of the run's processor time: the bound the ratio cannot resolve
           frames_share=statistics.median(drawn) * per_frame / cpu["baseline_s"])
