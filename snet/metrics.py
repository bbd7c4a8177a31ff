"""Live figures of a run in the Prometheus text format (``--metrics-port``, ``metrics_port=``).

A :class:`MetricsServer` binds its address when it is made, so that a port
already in use is an error before the run starts (and before ``snet run``
opens its output); :meth:`MetricsServer.watch` then names the execution
whose figures it serves at ``/metrics``, and :meth:`MetricsServer.close`
stops it.  The server is ``prometheus_client``'s threading WSGI server
and page, in a thread of its own; the package is an optional dependency
(the ``metrics`` extra), asked for only when the option is used.

Nothing is counted here: on each scrape :class:`RunCollector` asks the
execution for a :meth:`~snet.execution.Execution.stats` snapshot (what
``--stats`` reads at the end) and turns it into metric families.  The
engines keep those counters anyway, per worker and without locks, so
serving them costs the run nothing between scrapes; a scrape costs what one
``stats()`` call costs.  What is served:

* ``snet_box_calls_total{box}``: calls of the box (all its instances);
* ``snet_box_seconds{box}``: a histogram of the call times, its buckets
  those every engine keeps (:data:`snet.stats.LATENCY_BOUNDS`: 1, 1.5, 2,
  3, 4 ... µs up to about 33.6 s), ``_sum`` the seconds spent in calls.  It
  counts what the engine timed: FRONT times every call of a slow box and one
  in 16 of a fast one's, counted 16 times (``docs/runtime.md``), so for a
  fast box ``_count`` may run ahead of ``snet_box_calls_total`` by up to 15
  per worker;
* ``snet_box_queued{box}``: records waiting in the box's inboxes now, and
  ``snet_box_concurrency{box}``: how many calls of one instance may run at
  once (engines that say: FRONT);
* ``snet_box_failures_total{box}``: records that failed in the box and were
  skipped (``on_error`` other than ``"stop"``);
* ``snet_records_in_total``, ``snet_records_out_total``,
  ``snet_records_failed_total`` (boxes and filters);
* ``snet_records_held``: records held in synchro-cells that have not fired
  (engines that say);
* ``snet_entities``: FRONT's live entities (box, combinator and cell
  instances), with ``snet_entities_peak``;
* ``snet_run_seconds``: the run's time so far;
* ``snet_resident_bytes``: the process's resident memory.

Every box of the network has its series from the first scrape, at 0 until
it is called.
"""

from __future__ import annotations

import selectors
import socket
import threading
import weakref
from typing import Any, Iterable, Iterator
from wsgiref.simple_server import WSGIRequestHandler, make_server

from snet.errors import SNetUsageError
from snet.stats import LATENCY_BOUNDS, LATENCY_BUCKETS, BoxStats

LOOPBACK = "127.0.0.1"
MISSING = ("needs the prometheus-client package: pip install 'snet-lang[metrics]' "
           "(or pip install prometheus-client)")


def parse_address(value: Any) -> tuple[str, int]:
    """``PORT`` or ``HOST:PORT`` (``[V6]:PORT``) as (host, port); the host is the loopback address by default.

    Raises ValueError with the reason for anything else.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        host, port_text = LOOPBACK, str(value)
    elif isinstance(value, str):
        host, colon, port_text = value.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not colon:
            host = LOOPBACK
        elif not host:
            raise ValueError(f"'{value}' has no host before ':' (give PORT or HOST:PORT)")
    else:
        raise ValueError(f"takes a port number or 'HOST:PORT', not {value!r}")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"takes a port from 0 to 65535 (0: any free port), or HOST:PORT, not {value!r}")
    return host, int(port_text)


class MetricsServer:
    """An HTTP server of ``/metrics`` for one run, bound at construction (see the module docstring).

    Raises:
        SNetUsageError: prometheus-client is not installed, or the address
            cannot be bound (in use, no such host); ``flag`` names the
            option in the message.
    """

    def __init__(self, address: Any, flag: str = "metrics_port"):
        try:
            from prometheus_client import CollectorRegistry, make_wsgi_app
            from prometheus_client.exposition import ThreadingWSGIServer
        except ImportError:
            raise SNetUsageError(f"{flag} {MISSING}") from None
        host, port = parse_address(address)
        self.collector = RunCollector()
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self.collector)

        class Server(ThreadingWSGIServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        try:
            self._httpd = make_server(host, port, make_wsgi_app(registry), Server, handler_class=_QuietHandler)
        except (OSError, UnicodeError) as e:  # in use, no such host, a host name IDNA cannot spell
            shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            raise SNetUsageError(f"{flag}: cannot serve metrics at {shown}: "
                                 f"{getattr(e, 'strerror', None) or e}") from None
        self._httpd.timeout = 0  # handle_request never waits: a connection gone before it is taken is dropped
        self._wake, self._woken = socket.socketpair()  # close() writes one, the serving loop wakes on the other
        self._thread = threading.Thread(target=self._serve, name="snet-metrics", daemon=True)
        self._thread.start()
        self.port = self._httpd.server_address[1]
        self.host = host
        shown_host = f"[{host}]" if ":" in host else host
        #: where the figures are: http://HOST:PORT/metrics, with the port chosen when 0 was asked for
        self.url = f"http://{shown_host}:{self.port}/metrics"
        self._closed = False
        self._lock = threading.Lock()

    def _serve(self) -> None:
        """Hand each connection to the server (a thread per request) until :meth:`close` wakes the loop.

        A loop of its own rather than ``serve_forever``, which looks every
        poll interval whether it is to stop: closing is immediate, and an
        idle server never wakes.
        """
        with selectors.DefaultSelector() as selector:
            selector.register(self._httpd, selectors.EVENT_READ)
            selector.register(self._woken, selectors.EVENT_READ)
            while True:
                ready = selector.select()
                if any(key.fileobj is self._woken for key, _ in ready):
                    return
                self._httpd.handle_request()  # takes the waiting connection and hands it to a thread

    def watch(self, execution: Any, boxes: Iterable[str] = ()) -> None:
        """Serve the figures of ``execution`` (its ``stats()`` and ``error_policy``), with a series for each box."""
        self.collector.watch(execution, boxes)

    def close(self) -> None:
        """Stop serving (safe to call twice)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._wake.send(b"x")
        self._thread.join(5.0)
        self._httpd.server_close()
        self._wake.close()
        self._woken.close()

    def __repr__(self) -> str:
        return f"<snet.MetricsServer {self.url}>"


class _QuietHandler(WSGIRequestHandler):
    """Serves a request without logging it: standard error belongs to the run."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class RunCollector:
    """Turns an execution's ``stats()`` snapshot into Prometheus metric families, on each scrape."""

    def __init__(self) -> None:
        self._execution: Any = lambda: None  # a weak reference to the execution watched
        self.boxes: tuple[str, ...] = ()

    def watch(self, execution: Any, boxes: Iterable[str]) -> None:
        self.boxes = tuple(sorted(set(boxes)))
        self._execution = weakref.ref(execution)

    def describe(self) -> list:
        return []  # families depend on the run; the registry must not call collect() at registration

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        execution = self._execution()
        if execution is None:
            return
        stats = _snapshot(execution)
        if stats is None:
            return
        policy = getattr(execution, "error_policy", None)
        failed_by_box = dict(getattr(policy, "box_failures", {})) if policy is not None else {}
        names = sorted(set(self.boxes) | set(stats.boxes) | set(failed_by_box))
        calls = CounterMetricFamily("snet_box_calls", "Calls of the box (all its instances).", labels=["box"])
        seconds = HistogramMetricFamily("snet_box_seconds", "Seconds spent in calls of the box.", labels=["box"])
        failures = CounterMetricFamily("snet_box_failures", "Records that failed in the box and were skipped.",
                                       labels=["box"])
        queued = GaugeMetricFamily("snet_box_queued", "Records waiting in the box's inboxes.", labels=["box"])
        limits = GaugeMetricFamily("snet_box_concurrency", "Calls of one instance of the box that may run at once.",
                                   labels=["box"])
        for name in names:
            box = stats.boxes.get(name) or BoxStats()
            calls.add_metric([name], box.calls)
            seconds.add_metric([name], buckets=_buckets(box.histogram), sum_value=box.seconds)
            failures.add_metric([name], failed_by_box.get(name, 0))
            if box.queued is not None or stats.engine == "front":
                queued.add_metric([name], box.queued or 0)
            if box.limit is not None:
                limits.add_metric([name], box.limit)
        yield calls
        yield seconds
        yield failures
        yield queued
        yield limits
        yield CounterMetricFamily("snet_records_in", "Records read into the network.", value=stats.records_in)
        yield CounterMetricFamily("snet_records_out", "Records the network produced.", value=stats.records_out)
        yield CounterMetricFamily("snet_records_failed", "Records that failed in a box or filter and were skipped.",
                                  value=getattr(execution, "failures", 0))
        yield GaugeMetricFamily("snet_run_seconds", "Seconds the run has been going.", value=stats.seconds)
        if stats.resident_bytes is not None:
            yield GaugeMetricFamily("snet_resident_bytes", "The process's resident memory in bytes.",
                                    value=stats.resident_bytes)
        if stats.held_in_cells is not None:
            yield GaugeMetricFamily("snet_records_held", "Records held in synchro-cells that have not fired.",
                                    value=stats.held_in_cells)
        if stats.front is not None:
            entities = stats.front.entities
            yield GaugeMetricFamily("snet_entities", "Live entities (box, combinator and cell instances).",
                                    value=entities.alive)
            yield GaugeMetricFamily("snet_entities_peak", "The most entities alive at once so far.",
                                    value=entities.peak)


def _buckets(histogram: tuple[int, ...]) -> list[tuple[str, float]]:
    """A box's histogram (counts per bucket of LATENCY_BOUNDS) as Prometheus's cumulative ``(le, count)`` pairs."""
    counts = list(histogram) or [0] * LATENCY_BUCKETS
    out: list[tuple[str, float]] = []
    total = 0
    for bound, count in zip(LATENCY_BOUNDS, counts):
        total += count
        out.append((repr(bound), total))
    out.append(("+Inf", total + sum(counts[len(LATENCY_BOUNDS):])))
    return out


def _snapshot(execution: Any) -> Any:
    """``execution.stats()``, tried again when an engine's table changed while it was read; None if it cannot say."""
    for _ in range(3):
        try:
            return execution.stats()
        except RuntimeError:  # a dict of counters that grew while it was copied (the reference engine)
            continue
        except Exception:
            return None
    return None


__all__ = ["MetricsServer", "RunCollector", "parse_address"]
