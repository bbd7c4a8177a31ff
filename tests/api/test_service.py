"""The example service (boxes/service.py), started on a loopback port and sent requests as a client would."""

from __future__ import annotations

import json
import queue
import resource
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

SERVICE = Path(__file__).resolve().parents[2] / "boxes" / "service.py"


def post(port: int, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/run", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_example_service_answers_each_request_with_its_own_outputs():
    proc = subprocess.Popen([sys.executable, str(SERVICE), "--port", "0", "--workers", "2", "--max-pending", "16"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("serving textstats on http://127.0.0.1:"), first + proc.stderr.read()
        port = int(first.rsplit(":", 1)[1])

        def client(i: int) -> tuple[int, int, dict]:
            words = " ".join(["Word"] * (i % 7) + ["longest" * (1 + i % 3)])
            return (i,) + post(port, json.dumps({"text": words, "id": i}).encode())

        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(client, range(300)))
        for i, status, body in answers:
            assert status == 200, body
            (out,) = body["outputs"]
            assert out["id"] == i and out["<count>"] == i % 7 + 1 and out["longest"] == "longest" * (1 + i % 3)
        status, body = post(port, b'{"text": 5}')
        assert status == 422 and body["error"].startswith("box 'clean' raised TypeError: text must be a string")
        assert post(port, b"not json")[0] == 400
        assert post(port, b'{"<t>": 1.5}') == (400, {"error": "input record 302: tag <t> must hold an integer, "
                                                                "not 1.5"})
        assert post(port, b'{"text": "still serving"}')[1]["outputs"][0]["<count>"] == 2
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=30) as response:
            stats = json.loads(response.read())
        assert stats["failures"] == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stopped; 302 requests served" in out
    assert "warning: box 'clean' raised TypeError" in err


# --------------------------------------------------------------------------
# The limits: each test starts the service on a free port, waits for its
# readiness line, and speaks HTTP over raw sockets, as a careless or hostile
# client would.

class Lines:
    """The lines a stream gives, read by a thread: ``next`` waits for the next one (bounded), ``text`` has all."""

    def __init__(self, stream):
        self._queue: queue.Queue = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def next(self, timeout: float = 60) -> str:
        line = self._queue.get(timeout=timeout)
        assert line is not None, "the stream ended"
        self.seen.append(line)
        return line

    def text(self) -> str:
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                return "".join(self.seen)
            if line is None:
                self._queue.put(None)
                return "".join(self.seen)
            self.seen.append(line)


class Running:
    """The service as a child process on a free loopback port, started with `options`."""

    def __init__(self, *options: str, descriptors: int | None = None):
        def limit_descriptors():
            resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

        self.proc = subprocess.Popen([sys.executable, str(SERVICE), "--port", "0", "--workers", "2", *options],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=limit_descriptors if descriptors else None)
        self.out, self.err = Lines(self.proc.stdout), Lines(self.proc.stderr)
        first = self.out.next()
        assert first.startswith("serving textstats on http://127.0.0.1:"), first
        self.port = int(first.rsplit(":", 1)[1])

    def connect(self, receive_buffer: int | None = None) -> socket.socket:
        sock = socket.socket()
        if receive_buffer:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.settimeout(120)
        sock.connect(("127.0.0.1", self.port))
        return sock

    def exchange(self, data: bytes) -> tuple[int, dict]:
        with self.connect() as sock:
            sock.sendall(data)
            return answer(receive_all(sock))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=120)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=60)


@pytest.fixture
def start():
    started: list[Running] = []

    def starting(*options: str, descriptors: int | None = None) -> Running:
        started.append(Running(*options, descriptors=descriptors))
        return started[-1]

    yield starting
    for service in started:
        service.kill()


def receive_all(sock: socket.socket, into: bytes = b"") -> bytes:
    data = bytearray(into)
    while chunk := sock.recv(1 << 20):
        data += chunk
    return bytes(data)


def answer(raw: bytes) -> tuple[int, dict]:
    """Status and JSON body of a whole HTTP answer, its Content-Length checked."""
    head, separator, body = raw.partition(b"\r\n\r\n")
    assert separator, raw[:200]
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(line.split(":")[1]) for line in lines if line.lower().startswith("content-length:"))
    assert len(body) == length, (len(body), length)
    return int(lines[0].split()[1]), json.loads(body)


def request(body: bytes) -> bytes:
    return f"POST /run HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


def chunked(*chunks: bytes) -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    return b"POST /run HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body


def test_a_body_over_the_limit_is_refused_with_413_before_it_is_read(start):
    service = start("--max-body", "1000")
    # Content-Length says 200 MB; the body never comes: the answer cannot wait for it
    status, body = service.exchange(b"POST /run HTTP/1.1\r\nContent-Length: 200000000\r\n\r\n")
    assert (status, body) == (413, {"error": "the body has 200000000 bytes; at most 1000 are accepted"})
    # A chunked body is counted as it comes: refused at the chunk that passes the limit
    assert service.exchange(chunked(b" " * 600, b" " * 600, b" " * 600)) == (
        413, {"error": "the chunked body has more than 1000 bytes"})
    text = "word " * 190  # the record is 969 bytes: within the limit, either way
    status, body = service.exchange(chunked(b'{"text": "', text.encode(), b'"}'))
    assert status == 200 and body["outputs"][0]["<count>"] == 190
    status, body = service.exchange(request(json.dumps({"text": text}).encode()))
    assert status == 200 and body["outputs"][0]["<count>"] == 190
    with service.connect() as sock:  # curl's way with a large body: the head first, the body once welcome
        head, body = request(json.dumps({"text": text}).encode()).split(b"\r\n\r\n")
        sock.sendall(head + b"\r\nExpect: 100-continue\r\n\r\n")
        welcome = b""
        while not welcome.endswith(b"\r\n\r\n"):
            welcome += sock.recv(1)
        assert welcome == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        status, body = answer(receive_all(sock))
    assert status == 200 and body["outputs"][0]["<count>"] == 190
    assert service.stop() == 0
    assert "Traceback" not in service.err.text()


@pytest.mark.slow
def test_a_request_that_does_not_arrive_in_time_gets_408(start):
    service = start("--read-timeout", "1")
    half_sent = [b"POST /run HTTP/1.1\r\nContent-Le",  # in the head
                 b"POST /run HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"text\": "]  # in the body
    with ThreadPoolExecutor(len(half_sent)) as pool:
        answers = list(pool.map(service.exchange, half_sent))
    assert answers == [(408, {"error": "the request did not arrive within 1 s"})] * 2
    with service.connect() as sock:  # a byte now and then: the timeout is for the whole request, not per read
        answered = threading.Event()

        def trickle():
            for byte in b"POST /run HTTP/1.1\r\nContent-Length: 5\r\n\r\n" * 100:
                if answered.wait(0.1):
                    return
                try:
                    sock.send(bytes([byte]))
                except OSError:
                    return

        sender = threading.Thread(target=trickle)
        sender.start()
        try:
            raw = receive_all(sock)
        finally:
            answered.set()
            sender.join()
        assert answer(raw) == (408, {"error": "the request did not arrive within 1 s"})
    assert service.exchange(request(b'{"text": "still here"}'))[0] == 200
    assert service.stop() == 0
    assert "Traceback" not in service.err.text()


@pytest.mark.slow
def test_connections_beyond_the_cap_wait_in_the_queue_until_one_ends(start):
    service = start("--max-connections", "2", "--read-timeout", "600")
    held = [service.connect() for _ in range(2)]
    for sock in held:
        sock.sendall(b"POST /run HTTP/1.1\r\n")  # and nothing more
    assert service.err.next() == "warning: 2 connections open (--max-connections): new ones wait\n"
    waiting = service.connect()  # the listening queue takes it
    waiting.sendall(request(b'{"text": "queued"}'))
    waiting.settimeout(1.0)
    with pytest.raises(TimeoutError):  # not served while both slots are held
        waiting.recv(1)
    held[0].close()  # a slot is free: the queued connection is served
    waiting.settimeout(120)
    status, body = answer(receive_all(waiting))
    assert status == 200 and body["outputs"][0]["words"] == ["queued"]
    for sock in (waiting, *held):
        sock.close()
    assert service.stop() == 0
    assert "Traceback" not in service.err.text()


def test_at_the_descriptor_limit_connections_wait_and_nothing_floods_the_log(start):
    service = start("--max-connections", "1000", descriptors=128)
    held = [service.connect() for _ in range(200)]  # more than the process may open
    for sock in held:
        sock.sendall(b"POST /run HTTP/1.1\r\n")
    assert service.err.next() == ("warning: --max-connections 1000 lowered to 64: the process may open 128 files "
                                  "(ulimit -n)\n")
    assert service.err.next() == "warning: 64 connections open (--max-connections): new ones wait\n"
    for sock in held:
        sock.close()
    assert service.exchange(request(b'{"text": "after the flood"}'))[0] == 200
    assert service.stop() == 0
    assert service.err.text().count("\n") == 2  # the two lines above, nothing per connection


@pytest.mark.slow
def test_sigterm_finishes_the_answers_in_flight_and_refuses_new_requests(start):
    service = start("--max-body", str(32 << 20))
    words = 4_000_000  # an answer of about 20 MB: more than the socket buffers hold
    big = service.connect(receive_buffer=64 * 1024)
    big.sendall(request(json.dumps({"text": "ab " * words}).encode()))
    first = b""
    while b"\r\n\r\n" not in first:  # the answer has begun; the client takes no more for now
        first += big.recv(64 * 1024)
    assert first.startswith(b"HTTP/1.1 200 OK\r\n")
    service.proc.send_signal(signal.SIGTERM)
    assert service.out.next() == "stopping: answering 1 connection in flight; new requests get 503\n"
    assert service.exchange(request(b'{"text": "too late"}')) == (503, {"error": "the service is stopping"})
    status, body = answer(receive_all(big, first))  # the whole answer, as its Content-Length says
    big.close()
    assert status == 200 and body["outputs"][0]["<count>"] == words and len(body["outputs"][0]["words"]) == words
    # it ends by itself: the SIGTERM above stopped it (a second one, sent while it ends, would kill it outright)
    assert service.proc.wait(timeout=120) == 0
    assert service.out.next() == "stopped; 1 requests served\n"
    assert "Traceback" not in service.err.text()


def test_json_too_deep_or_not_text_is_refused_with_400(start):
    service = start()
    deep = b'{"text": "x", "tree": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert service.exchange(request(deep)) == (400, {"error": "the body nests JSON more than 64 levels deep"})
    assert service.exchange(request(b'{"text": "x", "tree": ' + b"[" * 64 + b"]" * 64 + b"}")) == (
        400, {"error": "the body nests JSON more than 64 levels deep"})
    assert service.exchange(request(b'{"text": "\\ud800 lone"}')) == (
        400, {"error": "the string '\\ud800 lone' holds a lone surrogate: not text"})
    assert service.exchange(request(b'{"\\udfff": 1}')) == (
        400, {"error": "the key '\\udfff' holds a lone surrogate: not text"})
    assert service.exchange(request(b'{"text": "\xff"}')) == (400, {"error": "the body is not UTF-8 text (byte 11)"})
    # within the limits, nested values and escaped pairs pass through the network
    status, body = service.exchange(request(b'{"text": "\\ud83d\\ude00 ok", "tree": ' + b"[" * 63 + b"]" * 63 + b"}"))
    tree: list = []
    for _ in range(62):
        tree = [tree]
    assert status == 200 and body["outputs"][0]["words"] == ["ok"] and body["outputs"][0]["tree"] == tree
    assert service.stop() == 0
    assert "Traceback" not in service.err.text()


def test_a_port_in_use_is_one_line_and_exit_status_2():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, str(SERVICE), "--port", str(port)], capture_output=True, text=True,
                              timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_the_example_service_serves_its_metrics():
    parser = pytest.importorskip("prometheus_client.parser",
                                 reason="the metrics need prometheus-client (the 'metrics' extra)")
    proc = subprocess.Popen([sys.executable, str(SERVICE), "--port", "0", "--metrics-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = Lines(proc.stdout)
        port = int(lines.next().rsplit(":", 1)[1])
        metrics = lines.next().strip()
        assert metrics.startswith("metrics on http://127.0.0.1:") and metrics.endswith("/metrics"), metrics
        assert post(port, b'{"text": "one two three"}')[0] == 200
        assert post(port, b'{"text": 5}')[0] == 422
        with urllib.request.urlopen(metrics.split()[-1], timeout=60) as response:
            text = response.read().decode()
        samples = {(s.name, tuple(s.labels.items())): s.value
                   for family in parser.text_string_to_metric_families(text) for s in family.samples}
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=60) as response:
            stats = json.loads(response.read())
        assert stats["boxes"]["clean"]["calls"] == 2
        for name, entry in stats["boxes"].items():
            assert samples[("snet_box_calls_total", (("box", name),))] == entry["calls"]
        assert samples[("snet_box_failures_total", (("box", "clean"),))] == 1
        assert samples[("snet_records_in_total", ())] == stats["records_in"] == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
