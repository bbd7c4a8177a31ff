"""`snet run --metrics-port`: live figures in the Prometheus text format, equal to --stats-json at the end.

The run is held open by the test, not by sleeps: its standard input is a
pipe the test writes, and one box blocks on a FIFO (a mark) until the test
writes it, so every scrape below happens while the run is provably going on.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

try:
    from prometheus_client import parser as prometheus_parser
except ImportError:  # the tests that serve metrics say so; the one about the missing package runs
    prometheus_parser = None

needs_prometheus = pytest.mark.skipif(prometheus_parser is None,
                                      reason="the metrics need prometheus-client (the 'metrics' extra)")

SNET = [sys.executable, "-m", "snet"]
WAIT = 60  # seconds: an upper bound for each step, never a pace

NET = "net n { box f ((a) -> (a)); box gate ((a) -> (a)); box g ((a) -> (a)); } connect f .. gate .. g;\n"
BOXES = """\
import os

def f(a):
    return {'a': a + 1}

def gate(a):
    if a == 101:  # wait for the test's mark: the call is in progress until the test writes the FIFO
        with open(os.environ['SNET_TEST_MARK']) as mark:
            mark.read()
    return {'a': a}

def g(a):
    return {'a': 2 * a}
"""


@pytest.fixture
def netdir(tmp_path: Path) -> Path:
    (tmp_path / "net.snet").write_text(NET)
    (tmp_path / "net.py").write_text(BOXES)
    return tmp_path


def scrape(url: str) -> dict:
    """{(name, labels): value} of every sample served at ``url``."""
    text = urllib.request.urlopen(url, timeout=WAIT).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in prometheus_parser.text_string_to_metric_families(text) for s in family.samples}


def box(samples: dict, name: str, box_name: str) -> float:
    return samples[(name, (("box", box_name),))]


def bucket(samples: dict, box_name: str, le: str) -> float:
    """The cumulative count of box ``box_name``'s ``snet_box_seconds`` histogram at bound ``le``."""
    return samples[("snet_box_seconds_bucket", (("box", box_name), ("le", le)))]


def in_time(action, what: str):
    """Run ``action`` in a thread, failing (not hanging) if it has not returned within WAIT seconds."""
    result: list = []
    t = threading.Thread(target=lambda: result.append(action()), daemon=True)
    t.start()
    t.join(WAIT)
    assert result, f"{what} did not happen within {WAIT} s"
    return result[0]


@needs_prometheus
@pytest.mark.parametrize("engine", ["front", "reference"])
def test_scrape_during_the_run_finds_every_box_and_ends_equal_to_stats_json(netdir, engine):
    mark = netdir / "mark"
    os.mkfifo(mark)
    proc = subprocess.Popen(SNET + ["run", "net.snet", "--engine", engine, "--metrics-port", "0",
                                    "--stats-json", "stats.json"],
                            cwd=netdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "SNET_TEST_MARK": str(mark)})
    try:
        line = in_time(proc.stderr.readline, "the metrics address on standard error")
        assert line.startswith("snet metrics: serving http://127.0.0.1:"), line
        url = line.split()[-1]
        assert url.endswith("/metrics")

        for a in range(3):
            proc.stdin.write(json.dumps({"a": a}) + "\n")
        proc.stdin.flush()
        outputs = [json.loads(in_time(proc.stdout.readline, f"output {i}")) for i in range(3)]
        assert sorted(o["a"] for o in outputs) == [2, 4, 6]
        # Three records through, standard input still open: the run goes on.
        live = scrape(url)
        for name in ("f", "gate", "g"):
            assert box(live, "snet_box_calls_total", name) == 3
            assert box(live, "snet_box_failures_total", name) == 0
            assert box(live, "snet_box_seconds_count", name) == 3
            assert bucket(live, name, "+Inf") == 3
            if engine == "front":
                assert box(live, "snet_box_queued", name) == 0
                assert box(live, "snet_box_concurrency", name) >= 1
        assert live[("snet_resident_bytes", ())] > 1 << 20
        assert live[("snet_records_in_total", ())] == 3
        assert live[("snet_records_out_total", ())] == 3

        proc.stdin.write(json.dumps({"a": 100}) + "\n")  # f makes it 101: the gate waits for the mark
        proc.stdin.flush()
        writer = in_time(lambda: open(mark, "w"), "the gate's call")  # opens once the box has opened the FIFO
        during = scrape(url)  # the gate's call is in progress now
        assert box(during, "snet_box_calls_total", "f") == 4
        assert box(during, "snet_box_calls_total", "gate") == 3  # a call is counted when it returns
        assert box(during, "snet_box_calls_total", "g") == 3
        writer.write("go\n")
        writer.close()
        assert json.loads(in_time(proc.stdout.readline, "the gated output")) == {"a": 202}
        final = scrape(url)  # every record's calls are done; the input is still open
        proc.stdin.close()
        assert proc.wait(WAIT) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()

    stats = json.loads((netdir / "stats.json").read_text())
    assert sorted(stats["boxes"]) == ["f", "g", "gate"]
    for name, entry in stats["boxes"].items():
        assert box(final, "snet_box_calls_total", name) == entry["calls"] == 4
        assert box(final, "snet_box_seconds_count", name) == entry["calls"]
        assert box(final, "snet_box_seconds_sum", name) == pytest.approx(entry["seconds"], rel=1e-9, abs=1e-12)
        # The same buckets in both: the served histogram is the cumulative sum of the one written.
        assert len(entry["histogram"]) == len(stats["latency_bounds"]) + 1
        cumulative = 0
        for bound, count in zip(stats["latency_bounds"], entry["histogram"]):
            cumulative += count
            assert bucket(final, name, repr(bound)) == cumulative
        assert bucket(final, name, "+Inf") == sum(entry["histogram"]) == entry["calls"]
    # The gate's held call is the longest of its four.
    gate = stats["boxes"]["gate"]["histogram"]
    assert max(i for i, count in enumerate(gate) if count) >= max(i for i, count in enumerate(
        stats["boxes"]["f"]["histogram"]) if count)
    assert final[("snet_records_in_total", ())] == stats["records_in"] == 4
    assert final[("snet_records_out_total", ())] == stats["records_out"] == 4
    assert final[("snet_records_held", ())] == stats["held_in_cells"] == 0
    if engine == "front":
        assert final[("snet_entities", ())] >= 1


@needs_prometheus
def test_a_port_in_use_is_one_line_and_exit_2_with_the_output_untouched(netdir):
    (netdir / "out.jsonl").write_text("kept\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(SNET + ["run", "net.snet", "-o", "out.jsonl", "--metrics-port", str(port)],
                                cwd=netdir, input='{"a": 1}\n', capture_output=True, text=True, timeout=WAIT)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: --metrics-port: cannot serve metrics at 127.0.0.1:{port}: Address already in use"]
    assert (netdir / "out.jsonl").read_text() == "kept\n"


@pytest.mark.parametrize("value,message", [
    ("http", "error: --metrics-port takes a port from 0 to 65535 (0: any free port), or HOST:PORT, not 'http'"),
    ("70000", "error: --metrics-port takes a port from 0 to 65535"),
    (":9100", "error: --metrics-port ':9100' has no host before ':' (give PORT or HOST:PORT)"),
])
def test_a_bad_address_is_refused_before_the_run(netdir, value, message):
    result = subprocess.run(SNET + ["run", "net.snet", "-o", "out.jsonl", f"--metrics-port={value}"], cwd=netdir,
                            input='{"a": 1}\n', capture_output=True, text=True, timeout=WAIT)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr, result.stderr
    assert not (netdir / "out.jsonl").exists()


def test_without_prometheus_client_the_option_is_one_line_and_exit_2(netdir):
    # The package made unimportable, as in an install without the 'metrics' extra.
    program = "import sys; sys.modules['prometheus_client'] = None; from snet.cli import main; sys.exit(main())"
    result = subprocess.run([sys.executable, "-c", program, "run", "net.snet", "--metrics-port", "0"], cwd=netdir,
                            input='{"a": 1}\n', capture_output=True, text=True, timeout=WAIT)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: --metrics-port needs the prometheus-client package: pip install 'snet-lang[metrics]' "
        "(or pip install prometheus-client)"]
    assert result.stdout == ""


def test_a_spark_native_run_refuses_the_option_before_spark_starts(netdir):
    (netdir / "in.parquet").mkdir()
    result = subprocess.run(SNET + ["run", "net.snet", "--spark", "local[1]", "-i", "in.parquet", "-o", "out.parquet",
                                    "--metrics-port", "0"], cwd=netdir, capture_output=True, text=True, timeout=WAIT)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "error: --metrics-port serves the figures of a run on this machine; a Spark source and sink run the whole "
        "network inside Spark (see its UI)"]
    assert not (netdir / "out.parquet").exists()
