"""``metrics_port=``: a run or a session serves its figures at ``/metrics`` while it goes on."""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request

import pytest

import snet
from snet.errors import SNetUsageError

prometheus_parser = pytest.importorskip(
    "prometheus_client.parser", reason="the metrics need prometheus-client (the 'metrics' extra)")

SOURCE = "net n { box inc ((a) -> (a)); box gate ((a) -> (a)); box skip ((a) -> (a)); } connect inc .. gate .. skip;"
WAIT = 60  # seconds: an upper bound, never a pace


def scrape(url: str) -> dict:
    text = urllib.request.urlopen(url, timeout=WAIT).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in prometheus_parser.text_string_to_metric_families(text) for s in family.samples}


def calls(samples: dict, name: str) -> float:
    return samples[("snet_box_calls_total", (("box", name),))]


class Gate:
    """A box that holds the call for a = 10 until the test opens the gate, and tells when that call began."""

    def __init__(self):
        self.entered = threading.Event()
        self.opened = threading.Event()

    def __call__(self, a):
        if a == 10:
            self.entered.set()
            assert self.opened.wait(WAIT)
        return {"a": a}


def skip(a):
    if a == 3:
        raise ValueError("three")
    return {"a": a}


@pytest.fixture
def gate():
    return Gate()


@pytest.fixture
def net(gate):
    return snet.load(SOURCE, boxes={"inc": lambda a: {"a": a + 1}, "gate": gate, "skip": skip})


@pytest.mark.parametrize("engine", ["front", "reference"])
def test_a_session_serves_its_figures_while_it_runs(net, gate, engine):
    with net.session(engine=engine, metrics_port=0, on_error="skip") as session:
        url = session.metrics_url
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        before = scrape(url)  # every box has its series before it is called
        assert all(calls(before, name) == 0 for name in ("inc", "gate", "skip"))
        futures = [session.submit({"a": a}) for a in range(3)]  # a = 2 fails in skip (a + 1 == 3)
        assert [f.result(WAIT) for f in futures[:2]] == [[{"a": 1}], [{"a": 2}]]
        with pytest.raises(snet.SNetBoxError, match="three"):
            futures[2].result(WAIT)
        held = session.submit({"a": 9})  # inc makes it 10: the gate holds it
        assert gate.entered.wait(WAIT)
        during = scrape(url)
        assert (calls(during, "inc"), calls(during, "gate"), calls(during, "skip")) == (4, 3, 3)
        assert during[("snet_box_failures_total", (("box", "skip"),))] == 1
        assert during[("snet_box_failures_total", (("box", "gate"),))] == 0
        assert during[("snet_records_failed_total", ())] == 1
        assert during[("snet_records_in_total", ())] == 4
        gate.opened.set()
        assert held.result(WAIT) == [{"a": 10}]
        final = scrape(url)
        stats = session.stats()
        assert {name: calls(final, name) for name in stats.boxes} == {n: b.calls for n, b in stats.boxes.items()}
        assert final[("snet_records_out_total", ())] == stats.records_out == 3
        session.close(WAIT)
    with pytest.raises(urllib.error.URLError):  # closed with the session
        urllib.request.urlopen(url, timeout=WAIT)


def test_a_run_serves_until_it_ends_and_has_no_url_without_the_option(net, gate):
    gate.opened.set()
    assert net.run([{"a": 1}]).metrics_url is None
    execution = net.run(iter([{"a": 4}, {"a": 5}]), metrics_port=0, workers=1)
    url = execution.metrics_url
    served = scrape(url)
    assert {labels[0][1] for name, labels in served if name == "snet_box_calls_total"} == {"inc", "gate", "skip"}
    assert sorted(r["a"] for r in execution) == [5, 6]
    with pytest.raises(urllib.error.URLError):  # the run is over: the server stopped with it
        urllib.request.urlopen(url, timeout=WAIT)


def test_a_port_in_use_and_a_bad_value_are_usage_errors_before_the_run(net):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SNetUsageError, match=f"metrics_port: cannot serve metrics at 127.0.0.1:{port}"):
            net.run([{"a": 1}], metrics_port=port)
        with pytest.raises(SNetUsageError, match="cannot serve metrics"):
            net.session(metrics_port=f"127.0.0.1:{port}")
    with pytest.raises(SNetUsageError, match="metrics_port takes a port from 0 to 65535"):
        net.run([{"a": 1}], metrics_port=-1)
    with pytest.raises(SNetUsageError, match="metrics_port takes a port number or 'HOST:PORT', not 1.5"):
        net.run([{"a": 1}], metrics_port=1.5)
