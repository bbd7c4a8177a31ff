"""An example HTTP service around a network: one asyncio session, one request per input.

    python3 boxes/service.py [--port 8080] [--workers N] [--max-pending 1000]

    curl -s localhost:8080/run -d '{"text": "Hello, S-Net world"}'
    {"outputs": [{"words": ["hello", "s", "net", "world"], "longest": "hello", "<count>": 4}]}

``POST /run`` takes one record (a JSON object in the JSON Lines spelling)
and answers with every output of that record, ``{"outputs": [...]}``.  A
record that fails in a box is answered with status 422 and the error; the
session skips it and goes on (``on_error="skip"``).  A body that is not a
record gets 400.  ``GET /stats`` answers the session's statistics.
``max_pending`` bounds the requests inside the network: beyond it a
request waits, and gets 503 after ``--wait`` seconds.

The server speaks just enough HTTP/1.1 for this (one request per
connection, ``Content-Length`` bodies); put a real web server in front of
it for anything else.  Ctrl-C or SIGTERM stops it after the requests in
flight are answered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys

import snet

HERE = os.path.dirname(os.path.abspath(__file__))
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 422: "Unprocessable Entity",
           503: "Service Unavailable"}


async def respond(writer: asyncio.StreamWriter, status: int, body: object) -> None:
    data = json.dumps(body, ensure_ascii=False, default=repr).encode()
    writer.write(f"HTTP/1.1 {status} {REASONS[status]}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
    await writer.drain()


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return method, path, await reader.readexactly(length) if length else b""


class Service:
    def __init__(self, session: snet.Session, wait: float):
        self.session = session
        self.wait = wait

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                method, path, body = await read_request(reader)
            except (ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                await respond(writer, 400, {"error": "malformed HTTP request"})
                return
            if path == "/stats" and method == "GET":
                await respond(writer, 200, self.session.stats().to_json())
            elif path != "/run":
                await respond(writer, 404, {"error": f"no such path: {path}"})
            elif method != "POST":
                await respond(writer, 405, {"error": "POST a record to /run"})
            else:
                await self.run(writer, body)
        finally:
            writer.close()

    async def run(self, writer: asyncio.StreamWriter, body: bytes) -> None:
        try:
            record = json.loads(body)
        except ValueError as e:
            await respond(writer, 400, {"error": f"the body is not JSON: {e}"})
            return
        try:
            outputs = await self.session.submit(record, timeout=self.wait)
        except TimeoutError as e:
            await respond(writer, 503, {"error": str(e)})
        except snet.SNetRecordError as e:
            await respond(writer, 400, {"error": e.message})
        except snet.SNetBoxError as e:
            await respond(writer, 422, {"error": e.message})
        else:
            await respond(writer, 200, {"outputs": outputs})


async def serve(args: argparse.Namespace) -> None:
    net = snet.load(os.path.join(HERE, "textstats.snet"), boxes=os.path.join(HERE, "textstats.py"))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with net.asession(workers=args.workers, max_pending=args.max_pending, on_error="skip") as session:
        service = Service(session, args.wait)
        server = await asyncio.start_server(service.handle, args.host, args.port)
        host, port = server.sockets[0].getsockname()[:2]
        print(f"serving {net.name} on http://{host}:{port}", flush=True)
        async with server:
            await stop.wait()
    print(f"stopped; {session.stats().records_in} requests served", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="An HTTP service around boxes/textstats.snet.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0: any free port (printed at start)")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--max-pending", type=int, default=1000)
    parser.add_argument("--wait", type=float, default=10.0, help="seconds a request waits for room (then 503)")
    asyncio.run(serve(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
