"""An example HTTP service around a network: one asyncio session, one request per input.

    python3 boxes/service.py [--port 8080] [--workers N] [--max-pending 1000]

    curl -s localhost:8080/run -d '{"text": "Hello, S-Net world"}'
    {"outputs": [{"words": ["hello", "s", "net", "world"], "longest": "hello", "<count>": 4}]}

``POST /run`` takes one record (a JSON object in the JSON Lines spelling)
and answers with every output of that record, ``{"outputs": [...]}``.  A
record that fails in a box is answered with status 422 and the error; the
session skips it and goes on (``on_error="skip"``).  A body that is not a
record gets 400.  ``GET /stats`` answers the session's statistics;
with ``--metrics-port`` the same figures are served for Prometheus too
(``snet.metrics``, printed at start: ``metrics on http://...``).
``max_pending`` bounds the requests inside the network: beyond it a
request waits, and gets 503 after ``--wait`` seconds.

A service faces clients that are slow, careless or hostile, so every
resource a client can make it spend is bounded (the ``Limits`` below, each
an option):

- a body larger than ``--max-body`` gets 413, decided from
  ``Content-Length`` before the body is read, or while a chunked body is;
- a request that has not fully arrived within ``--read-timeout`` gets 408,
  and an answer the client does not take within ``--write-timeout`` is
  dropped;
- at most ``--max-connections`` connections are served at once; more wait
  in the listening socket's queue (never an accepted socket per client:
  the descriptor limit is never reached);
- JSON nested deeper than ``--max-depth``, or not UTF-8 text (invalid
  bytes, a lone surrogate), gets 400; decoding and encoding run in a thread,
  not on the event loop.

The server speaks just enough HTTP/1.1 for this (one request per
connection, ``Content-Length`` or chunked bodies); put a real web server in
front of it for anything else.  Ctrl-C or SIGTERM drains it: requests
already inside are answered in full, new ones get 503, and it exits with
status 0 once the last answer has left (or after ``--drain-timeout``).
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import os
import re
import resource
import signal
import socket
import sys
import time
from dataclasses import dataclass

import snet

HERE = os.path.dirname(os.path.abspath(__file__))
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
           413: "Content Too Large", 422: "Unprocessable Entity", 500: "Internal Server Error",
           501: "Not Implemented", 503: "Service Unavailable"}
HEAD_LIMIT = 64 * 1024  # bytes of request line and headers
LINGER_SECONDS = 2.0  # after an early answer, how long what the client still sends is read and dropped
WARN_SECONDS = 60.0  # the same trouble is said at most once a minute
DESCRIPTORS_KEPT = 64  # descriptors left to the session, the log and the listening socket


@dataclass(frozen=True)
class Limits:
    """What one client may make the service spend (the command-line options of the same names)."""

    max_body: int = 1024 * 1024  # bytes
    max_depth: int = 64  # nesting of JSON arrays and objects
    max_connections: int = 256
    read_timeout: float = 10.0  # seconds for a whole request to arrive
    write_timeout: float = 60.0  # seconds for the client to take a whole answer
    drain_timeout: float = 30.0  # seconds a stop waits for the answers in flight


class HTTPError(Exception):
    """A request answered with `status` and `message`; `read_all` is False when its body was left unread."""

    def __init__(self, status: int, message: str, read_all: bool = True):
        super().__init__(message)
        self.status = status
        self.read_all = read_all


# --------------------------------------------------------------------------
# HTTP: reading a request, writing an answer

async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       max_body: int) -> tuple[str, str, bytes]:
    """The method, path and body of one request; HTTPError for a malformed or too large one."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise HTTPError(400, f"the request head is larger than {HEAD_LIMIT} bytes", read_all=False) from None
    request_line, *header_lines = head.decode("latin-1").split("\r\n")[:-2]
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise HTTPError(400, "malformed request line", read_all=False)
    headers = {}
    for line in header_lines:
        name, colon, value = line.partition(":")
        if not colon:
            raise HTTPError(400, f"malformed header line: {line[:80]!r}", read_all=False)
        headers[name.strip().lower()] = value.strip()
    if "transfer-encoding" in headers:
        if headers["transfer-encoding"].lower() != "chunked" or "content-length" in headers:
            raise HTTPError(501, "only a chunked Transfer-Encoding, without Content-Length, is understood",
                            read_all=False)
        continue_if_asked(headers, writer)
        body = await read_chunked(reader, max_body)
    else:
        length = headers.get("content-length", "0")
        if not length.isdigit():
            raise HTTPError(400, f"Content-Length is not a number of bytes: {length[:40]!r}", read_all=False)
        if int(length) > max_body:
            raise HTTPError(413, f"the body has {length} bytes; at most {max_body} are accepted", read_all=False)
        continue_if_asked(headers, writer)
        body = await reader.readexactly(int(length))
    return parts[0], parts[1], body


def continue_if_asked(headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
    """``Expect: 100-continue`` (curl sends it with a large body): the body is welcome, send it now."""
    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")


async def read_chunked(reader: asyncio.StreamReader, max_body: int) -> bytes:
    """A chunked body, refused (413) as soon as its chunks add up to more than `max_body`."""
    body = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            raise HTTPError(400, "malformed chunk size", read_all=False) from None
        if size < 0 or len(body) + size > max_body:
            raise HTTPError(413, f"the chunked body has more than {max_body} bytes", read_all=False)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailer fields, dropped
                pass
            return bytes(body)
        body += await reader.readexactly(size)
        if await reader.readexactly(2) != b"\r\n":
            raise HTTPError(400, "a chunk does not end with CRLF", read_all=False)


def encode_answer(body: object) -> bytes:
    """JSON text of an answer; ``\\u`` escapes where a string is not valid UTF-8 (a lone surrogate)."""
    try:
        return json.dumps(body, ensure_ascii=False, allow_nan=False, default=repr).encode()
    except UnicodeEncodeError:
        return json.dumps(body, ensure_ascii=True, allow_nan=False, default=repr).encode()


async def respond(writer: asyncio.StreamWriter, status: int, body: object, write_timeout: float) -> None:
    """Send one answer; JSON encoding runs in a thread, so a large answer does not stall the event loop."""
    try:
        data = await asyncio.to_thread(encode_answer, body)
    except (ValueError, RecursionError) as e:  # NaN, or nested deeper than the encoder goes
        status, data = 500, json.dumps({"error": f"the answer cannot be written as JSON: {e}"}).encode()
    writer.write(f"HTTP/1.1 {status} {REASONS[status]}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
    await asyncio.wait_for(writer.drain(), write_timeout)


def decode_record(body: bytes, max_depth: int) -> object:
    """The JSON value of a body; HTTPError 400 if it is not UTF-8 JSON text, or nested deeper than `max_depth`."""
    try:
        value = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise HTTPError(400, f"the body is not UTF-8 text (byte {e.start + 1})") from None
    except ValueError as e:
        raise HTTPError(400, f"the body is not JSON: {e}") from None
    except RecursionError:
        raise HTTPError(400, f"the body nests JSON more than {max_depth} levels deep") from None
    problem = json_problem(value, max_depth)
    if problem:
        raise HTTPError(400, problem)
    return value


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_problem(value: object, max_depth: int) -> str | None:
    """What makes a decoded JSON value unfit for the network: too deep, or a string with a lone surrogate."""
    stack = [(value, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > max_depth:
                return f"the body nests JSON more than {max_depth} levels deep"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str) and LONE_SURROGATE.search(key):
                    return f"the key {key!r} holds a lone surrogate: not text"
                stack.append((item, depth + 1))
        elif isinstance(value, str) and LONE_SURROGATE.search(value):
            return f"the string {value[:40]!r} holds a lone surrogate: not text"
    return None


# --------------------------------------------------------------------------
# The service: one connection, one request, one answer

class Service:
    def __init__(self, session: snet.Session, wait: float, limits: Limits):
        self.session = session
        self.wait = wait
        self.limits = limits
        self.stopping = False  # set by a stop: new requests get 503

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read one request within the read timeout, answer it, and close the connection."""
        limits = self.limits
        read_all = True
        try:
            try:
                method, path, body = await asyncio.wait_for(read_request(reader, writer, limits.max_body),
                                                            limits.read_timeout)
                status, answer = await self.answer(method, path, body)
            except HTTPError as e:
                status, answer, read_all = e.status, {"error": str(e)}, e.read_all
            except TimeoutError:
                status, answer, read_all = 408, {"error": f"the request did not arrive within "
                                                          f"{limits.read_timeout:g} s"}, False
            except asyncio.LimitOverrunError:
                status, answer, read_all = 400, {"error": "a line of the request is too long"}, False
            except asyncio.IncompleteReadError:
                return  # the client went away before its request was complete: nobody to answer
            await respond(writer, status, answer, limits.write_timeout)
            if not read_all:  # closing with unread input would reset the connection and lose the answer
                writer.write_eof()
                await linger(reader)
        except (OSError, TimeoutError):
            writer.transport.abort()  # the client went away, or does not take its answer
        finally:
            writer.close()
            try:
                await asyncio.wait_for(writer.wait_closed(), limits.write_timeout)  # the answer has left
            except (OSError, TimeoutError):
                writer.transport.abort()

    async def answer(self, method: str, path: str, body: bytes) -> tuple[int, object]:
        if self.stopping:
            return 503, {"error": "the service is stopping"}
        if path == "/stats" and method == "GET":
            return 200, self.session.stats().to_json()
        if path != "/run":
            return 404, {"error": f"no such path: {path}"}
        if method != "POST":
            return 405, {"error": "POST a record to /run"}
        record = await asyncio.to_thread(decode_record, body, self.limits.max_depth)
        try:
            outputs = await self.session.submit(record, timeout=self.wait)
        except TimeoutError as e:
            return 503, {"error": str(e)}
        except snet.SNetRecordError as e:
            return 400, {"error": e.message}
        except snet.SNetBoxError as e:
            return 422, {"error": e.message}
        except snet.SNetError as e:  # the session itself failed
            return 500, {"error": str(e)}
        return 200, {"outputs": outputs}


async def linger(reader: asyncio.StreamReader) -> None:
    """Read and drop what the client still sends, for a while, so that the close does not reset the connection."""
    try:
        async with asyncio.timeout(LINGER_SECONDS):
            while await reader.read(64 * 1024):
                pass
    except (OSError, TimeoutError):
        pass


# --------------------------------------------------------------------------
# The server: accepting within the connection cap, draining on a stop

class Server:
    """Accepts connections while fewer than ``max_connections`` are open; the others wait in the queue."""

    def __init__(self, listener: socket.socket, service: Service):
        self.listener = listener
        self.service = service
        self.slots = asyncio.Semaphore(service.limits.max_connections)
        self.connections: set[asyncio.Task] = set()
        self.warned: dict[str, float] = {}  # kind of trouble: when it was last said

    async def accept(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if self.slots.locked():
                self.warn("cap", f"{self.service.limits.max_connections} connections open "
                                 f"(--max-connections): new ones wait")
            await self.slots.acquire()  # held by the connection, released when it ends
            try:
                conn, _ = await loop.sock_accept(self.listener)
            except BaseException as e:
                self.slots.release()
                if not isinstance(e, OSError):
                    raise
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self.warn("descriptors", f"cannot accept a connection: {e.strerror}; retrying")
                    await asyncio.sleep(0.5)
                continue  # ECONNABORTED and its kind: that client is gone
            task = asyncio.create_task(self.serve(conn))
            self.connections.add(task)
            task.add_done_callback(self.connections.discard)

    async def serve(self, conn: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=conn, limit=HEAD_LIMIT)
            await self.service.handle(reader, writer)
        except OSError:
            conn.close()
        finally:
            self.slots.release()

    def warn(self, kind: str, message: str) -> None:
        """One line on standard error per kind of trouble and minute, not one per connection."""
        now = time.monotonic()
        if now - self.warned.get(kind, -WARN_SECONDS) >= WARN_SECONDS:
            self.warned[kind] = now
            print(f"warning: {message}", file=sys.stderr, flush=True)

    async def drain(self, timeout: float) -> None:
        """Answer the requests in flight, 503 to new ones, until they are done or `timeout` passes."""
        self.service.stopping = True
        in_flight = set(self.connections)
        print(f"stopping: answering {len(in_flight)} connection{'s' if len(in_flight) != 1 else ''} in flight; "
              f"new requests get 503", flush=True)
        if in_flight:
            await asyncio.wait(in_flight, timeout=timeout)


async def serve(args: argparse.Namespace, listener: socket.socket, limits: Limits) -> None:
    net = snet.load(os.path.join(HERE, "textstats.snet"), boxes=os.path.join(HERE, "textstats.py"))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with net.asession(workers=args.workers, max_pending=args.max_pending, on_error="skip",
                            metrics_port=args.metrics_port) as session:
        server = Server(listener, Service(session, args.wait, limits))
        accepting = asyncio.create_task(server.accept())
        host, port = listener.getsockname()[:2]
        print(f"serving {net.name} on http://{host}:{port}", flush=True)
        if session.metrics_url is not None:
            print(f"metrics on {session.metrics_url}", flush=True)
        await stop.wait()
        await server.drain(limits.drain_timeout)
        accepting.cancel()
        listener.close()
        for task in list(server.connections):  # 503 answers still going out, or past the drain timeout
            task.cancel()
        await asyncio.gather(accepting, *server.connections, return_exceptions=True)
    print(f"stopped; {session.stats().records_in} requests served", flush=True)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else starts (a port in use: OSError)."""
    listener = socket.create_server((host, port), backlog=1024)
    listener.setblocking(False)
    return listener


def limits_from(args: argparse.Namespace) -> Limits:
    """The limits the options ask for, the connection cap kept below the process's descriptor limit."""
    descriptors = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    cap = args.max_connections
    if descriptors != resource.RLIM_INFINITY and cap > descriptors - DESCRIPTORS_KEPT:
        cap = max(1, descriptors - DESCRIPTORS_KEPT)
        print(f"warning: --max-connections {args.max_connections} lowered to {cap}: the process may open "
              f"{descriptors} files (ulimit -n)", file=sys.stderr)
    return Limits(max_body=args.max_body, max_depth=args.max_depth, max_connections=cap,
                  read_timeout=args.read_timeout, write_timeout=args.write_timeout,
                  drain_timeout=args.drain_timeout)


def main(argv: list[str] | None = None) -> int:
    defaults = Limits()
    parser = argparse.ArgumentParser(description="An HTTP service around boxes/textstats.snet.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0: any free port (printed at start)")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--max-pending", type=int, default=1000)
    parser.add_argument("--wait", type=float, default=10.0, help="seconds a request waits for room (then 503)")
    parser.add_argument("--max-body", type=int, default=defaults.max_body, help="bytes of a request body (then 413)")
    parser.add_argument("--max-depth", type=int, default=defaults.max_depth,
                        help="nesting of a body's JSON arrays and objects (then 400)")
    parser.add_argument("--max-connections", type=int, default=defaults.max_connections,
                        help="connections served at once; more wait in the listening queue")
    parser.add_argument("--read-timeout", type=float, default=defaults.read_timeout,
                        help="seconds for a whole request to arrive (then 408)")
    parser.add_argument("--write-timeout", type=float, default=defaults.write_timeout,
                        help="seconds for the client to take a whole answer (then the connection is dropped)")
    parser.add_argument("--drain-timeout", type=float, default=defaults.drain_timeout,
                        help="seconds a stop (SIGTERM, Ctrl-C) waits for the answers in flight")
    parser.add_argument("--metrics-port", metavar="[HOST:]PORT",
                        help="serve the session's figures for Prometheus at http://127.0.0.1:PORT/metrics "
                             "(0: any free port, printed at start; needs prometheus-client)")
    args = parser.parse_args(argv)
    for name in ("max_body", "max_depth", "max_connections", "read_timeout", "write_timeout", "drain_timeout"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    limits = limits_from(args)
    try:
        listener = listen(args.host, args.port)  # before the network is loaded: a port in use fails at once
    except OSError as e:
        print(f"error: cannot listen on {args.host}:{args.port}: {os.strerror(e.errno) if e.errno else e}",
              file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(args, listener, limits))
    except snet.SNetUsageError as e:  # the metrics port: in use, or prometheus-client missing
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
