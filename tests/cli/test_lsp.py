"""``snet lsp`` driven as an editor drives it: a subprocess, JSON-RPC framed by Content-Length.

One session goes through initialize, didOpen of a broken file (the
diagnostics must be those ``snet check`` prints, at the same positions),
didChange to a program with warnings, hover (a net's inferred signature as
``snet check -v`` prints it, a box's declaration), go-to-definition from a
box name to its function in ``NET.py``, completion of tags and labels,
formatting, and shutdown/exit.  Every wait is on a message, with a
generous upper bound; nothing sleeps.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

needs_pygls = pytest.mark.skipif(importlib.util.find_spec("pygls") is None,
                                 reason="snet lsp needs pygls (pip install 'snet-lang[lsp]')")

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120  # an upper bound on each wait, for a machine under load

BROKEN = """\
net words ({text} -> {words})
{
  box split ((text) -> (words))
}
connect split;
"""

# A program with two warnings (an unreachable pattern, a label no box gives).
WARNED = """\
net words ({text, <doc>} -> {words, <doc>})
{
  box split ((text) -> (words));
  box count ((words) -> (words, <n>));
  net tagged connect [{words} -> {words, <seen=1>}];
}
connect split .. count .. tagged .. [{nothing} -> {}];
"""

BOXES = '''\
"""Boxes of words.snet."""


def split(text):
    return {"words": text.split()}


def count(words):
    return {"words": words, "<n>": len(words)}
'''


class Client:
    """A minimal LSP client over a subprocess's standard input and output."""

    def __init__(self, cwd: Path, *options: str):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen([sys.executable, "-m", "snet", "lsp", *options], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.inbox: queue.Queue = queue.Queue()
        self.seen: list[dict] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                key, value = line.split(":", 1)
                headers[key.lower()] = value.strip()
            self.inbox.put(json.loads(out.read(int(headers["content-length"]))))

    def send(self, payload: dict) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict | None) -> dict:
        self.next_id += 1
        ident = self.next_id
        self.send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        reply = self.wait(lambda m: m.get("id") == ident and ("result" in m or "error" in m))
        assert "error" not in reply, reply
        return reply["result"]

    def wait(self, wanted) -> dict:
        for i, message in enumerate(self.seen):
            if wanted(message):
                return self.seen.pop(i)
        while True:
            try:
                message = self.inbox.get(timeout=TIMEOUT)
            except queue.Empty:
                pytest.fail(f"no awaited message from snet lsp within {TIMEOUT} s; got {self.seen}")
            if message is None:
                pytest.fail(f"snet lsp ended: {self.proc.wait(TIMEOUT)} {self.proc.stderr.read().decode()}")
            if wanted(message):
                return message
            self.seen.append(message)

    def diagnostics(self, uri: str, version: int | None = None) -> list[dict]:
        message = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri
                            and (version is None or m["params"].get("version") == version))
        return message["params"]["diagnostics"]


def check_messages(path: Path, *options: str) -> list[tuple[int, int, str, str]]:
    """``(line, column, severity, message)`` of what ``snet check`` prints, 0-based."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", "snet", "check", *options, str(path)], capture_output=True,
                            text=True, env=env, timeout=TIMEOUT)
    found = []
    for line in result.stderr.splitlines():
        m = re.match(rf"{re.escape(str(path))}:(\d+):(\d+): (error|warning): (.*)", line)
        if m:
            found.append((int(m[1]) - 1, int(m[2]) - 1, m[3], m[4]))
    return found


def as_check(diagnostics: list[dict]) -> list[tuple[int, int, str, str]]:
    return [(d["range"]["start"]["line"], d["range"]["start"]["character"],
             {1: "error", 2: "warning"}[d["severity"]], d["message"]) for d in diagnostics]


@pytest.fixture
def client(tmp_path):
    c = Client(tmp_path)
    yield c
    if c.proc.poll() is None:
        c.proc.kill()
    c.proc.wait(TIMEOUT)
    for stream in (c.proc.stdin, c.proc.stdout, c.proc.stderr):
        stream.close()


def position_of(text: str, needle: str, nth: int = 0) -> dict:
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    line = text.count("\n", 0, offset)
    return {"line": line, "character": offset - (text.rfind("\n", 0, offset) + 1)}


@needs_pygls
def test_an_editor_session_over_stdio(client, tmp_path):
    net = tmp_path / "words.snet"
    net.write_text(BROKEN)
    (tmp_path / "words.py").write_text(BOXES)
    uri = net.as_uri()

    capabilities = client.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(),
                                                 "capabilities": {}})["capabilities"]
    assert capabilities["hoverProvider"] and capabilities["definitionProvider"]
    assert capabilities["completionProvider"] and capabilities["documentFormattingProvider"]
    assert capabilities["documentSymbolProvider"]
    client.notify("initialized", {})

    # A broken file: the error snet check reports, at its position.
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "snet", "version": 1,
                                                            "text": BROKEN}})
    broken = client.diagnostics(uri, 1)
    expected = check_messages(net)
    assert expected and expected[0][:3] == (3, 0, "error")  # the missing ';' is found at the '}'
    assert as_check(broken) == expected
    assert broken[0]["range"]["end"]["character"] > broken[0]["range"]["start"]["character"]

    # The fix, typed in: the warnings of snet check, each at its position.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": WARNED}]})
    warned = client.diagnostics(uri, 2)
    net.write_text(WARNED)
    expected = check_messages(net)
    assert len(expected) >= 1 and {e[2] for e in expected} == {"warning"}
    assert as_check(warned) == expected

    # Hover: the inferred signature of a net without one, as snet check -v prints it; a box's declaration.
    verbose = subprocess.run([sys.executable, "-m", "snet", "check", "-v", str(net)], capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=TIMEOUT).stdout
    tagged = dict(line.split(": ", 1) for line in verbose.splitlines())["tagged"]
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": position_of(WARNED, "tagged", 1)})
    assert f"net tagged ({tagged})" in hover["contents"]["value"]
    assert "inferred" in hover["contents"]["value"]
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                  "position": position_of(WARNED, "count ..")})
    assert "box count ((words) -> (words, <n>))" in hover["contents"]["value"]

    # Definition: from a use of a box to its function in words.py; from a net's use to its definition.
    location = client.request("textDocument/definition", {"textDocument": {"uri": uri},
                                                          "position": position_of(WARNED, "count ..")})
    assert location["uri"] == (tmp_path / "words.py").resolve().as_uri()
    assert location["range"]["start"] == {"line": BOXES.splitlines().index("def count(words):"), "character": 4}
    location = client.request("textDocument/definition", {"textDocument": {"uri": uri},
                                                          "position": position_of(WARNED, "tagged", 1)})
    assert location == {"uri": uri, "range": {"start": position_of(WARNED, "tagged"),
                                              "end": position_of(WARNED, "tagged")}}

    # The outline: the nets and boxes, local ones inside theirs.
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert [(s["name"], s["detail"], [(c["name"], c["detail"]) for c in s["children"]]) for s in symbols] == [
        ("words", "net", [("split", "box"), ("count", "box"), ("tagged", "net")])]
    assert symbols[0]["range"]["start"] == {"line": 0, "character": 0}
    assert symbols[0]["range"]["end"] == {"line": 6, "character": len(WARNED.splitlines()[6])}
    assert symbols[0]["children"][2]["selectionRange"]["start"] == position_of(WARNED, "tagged")

    # Completion of tags after '<', and of labels inside a record type.
    typing = WARNED.replace("[{nothing} -> {}]", "[{wo} -> {<d}]")
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                             "contentChanges": [{"text": typing}]})
    client.diagnostics(uri, 3)  # the half-typed text does not parse: an error, and labels from before
    after_tag = position_of(typing, "<d}")
    after_tag["character"] += 2
    items = client.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": after_tag})
    assert [i["label"] for i in items["items"]] == ["<doc>"]
    assert items["items"][0]["textEdit"]["range"]["start"]["character"] == after_tag["character"] - 2
    after_label = position_of(typing, "wo}")
    after_label["character"] += 2
    items = client.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": after_label})
    assert [i["label"] for i in items["items"]] == ["words"]

    # Formatting: the text snet fmt writes.
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 4},
                                             "contentChanges": [{"text": WARNED.replace("  box", "box")}]})
    client.diagnostics(uri, 4)
    edits = client.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                       "options": {"tabSize": 2, "insertSpaces": True}})
    assert len(edits) == 1 and edits[0]["newText"] == WARNED
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert as_check(client.diagnostics(uri, 4)) == expected  # the same warnings, at the same places
    assert client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": 1, "character": 0}}) is None  # "{"

    assert client.request("shutdown", None) is None
    client.notify("exit", None)
    assert client.proc.wait(TIMEOUT) == 0


INLINE = """\
box scale ((x) -> (y)) {<<< python | return {"y": 2 * x} >>>}

net inline connect scale;
"""


@needs_pygls
@pytest.mark.parametrize("how", ["option", "initialization"])
def test_the_rts_dialect_is_read_when_asked(tmp_path, how):
    client = Client(tmp_path, *(["--dialect", "rts"] if how == "option" else []))
    try:
        uri = (tmp_path / "inline.snet").as_uri()
        options = {"dialect": "rts"} if how == "initialization" else None
        client.request("initialize", {"processId": os.getpid(), "capabilities": {},
                                      "initializationOptions": options})
        client.notify("initialized", {})
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "snet", "version": 1,
                                                                "text": INLINE}})
        assert client.diagnostics(uri, 1) == []
        hover = client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                      "position": position_of(INLINE, "scale;")})
        assert "box scale ((x) -> (y))" in hover["contents"]["value"]
        assert client.request("shutdown", None) is None
        client.notify("exit", None)
        assert client.proc.wait(TIMEOUT) == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
        client.proc.wait(TIMEOUT)
        for stream in (client.proc.stdin, client.proc.stdout, client.proc.stderr):
            stream.close()


def test_without_pygls_the_command_says_what_to_install(tmp_path):
    # A module named pygls that cannot be imported stands for a missing one.
    (tmp_path / "pygls").mkdir()
    (tmp_path / "pygls" / "__init__.py").write_text("raise ModuleNotFoundError('No module named pygls', "
                                                    "name='pygls')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    result = subprocess.run([sys.executable, "-m", "snet", "lsp"], capture_output=True, text=True, env=env,
                            stdin=subprocess.DEVNULL, timeout=TIMEOUT)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: snet lsp needs pygls, which is not installed: pip install 'snet-lang[lsp]' (or pip install pygls)"]
