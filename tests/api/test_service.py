"""The example service (boxes/service.py), started on a loopback port and sent requests as a client would."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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
