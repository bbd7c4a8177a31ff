"""The programs in docs/language.md are what the page says they are.

* A ``snet`` block is a complete program and must pass ``snet check``.
  Fragments that are not whole programs are fenced as ``snet-fragment`` and
  are not checked.
* A comment line ``// expect: LINE:COL: error: MESSAGE`` (or ``warning:``) in
  a block says what ``snet check`` reports for it: the check must print that
  line (positions are within the block; a line ending in ``…`` needs only
  to begin the same) and fail for an error, succeed for a warning.  A block without such a line must check without any warning.
* A comment line ``// check: SIGNATURE`` is what ``snet check`` prints on
  standard output for the block.
* Comment lines ``// in: RECORD`` and ``// out: RECORD`` (JSON Lines
  spelling) give a run: the program (boxes are not allowed in such a block)
  is run over the inputs on the reference engine and on FRONT with four
  workers, and its outputs must be those shown, as a multiset, or in the
  order shown when the block also has the line ``// ordered``.  ``// out:
  nothing`` shows a run with no output.
"""

from __future__ import annotations

import json
import re

import pytest

from doc_blocks import DOCS, ROOT, blocks

import snet

LANGUAGE = DOCS / "language.md"
BLOCKS = [b for b in blocks(LANGUAGE) if b.kind == "snet"]
RUNS = [b for b in BLOCKS if "// in:" in b.text]
EXPECT = re.compile(r"^\s*// expect: (\d+:\d+: (error|warning): .*)$", re.M)
SIGNATURE = re.compile(r"^\s*// check: (.*)$", re.M)


def test_the_page_has_programs_of_every_kind():
    assert len(BLOCKS) >= 30
    assert len(RUNS) >= 15
    assert any(m.group(2) == "error" for b in BLOCKS for m in EXPECT.finditer(b.text))
    assert any(m.group(2) == "warning" for b in BLOCKS for m in EXPECT.finditer(b.text))
    assert sum(len(SIGNATURE.findall(b.text)) for b in BLOCKS) >= 3
    assert {b.kind for b in blocks(LANGUAGE)} <= {"snet", "snet-fragment", "python", "text", ""}


@pytest.mark.parametrize("block", BLOCKS, ids=[f"line{b.line}" for b in BLOCKS])
def test_program_checks_as_shown(block, tmp_path, snet_in_process):
    path = tmp_path / "example.snet"
    path.write_text(block.text, encoding="utf-8")
    done = snet_in_process("check", "example.snet", cwd=tmp_path)
    where = f"language.md:{block.line}"
    expected = EXPECT.findall(block.text)
    printed = done.stderr.splitlines()
    for message, _kind in expected:
        shown = f"example.snet:{message}"
        if shown.endswith("…"):
            assert any(line.startswith(shown[:-1]) for line in printed), f"{where}: {done.stderr}"
        else:
            assert shown in printed, f"{where}: {done.stderr}"
    for signature in SIGNATURE.findall(block.text):
        assert done.stdout.strip() == signature, f"{where}: snet check prints {done.stdout.strip()!r}"
    if any(kind == "error" for _, kind in expected):
        assert done.returncode == 2, f"{where}: checks, but the page shows an error"
    else:
        assert done.returncode == 0, f"{where}: {done.stderr}"
        if not expected:
            assert "warning:" not in done.stderr, f"{where}: {done.stderr}"


def _records(block, key):
    found = []
    for line in block.text.splitlines():
        line = line.strip()
        if line.startswith(f"// {key}:"):
            text = line[len(key) + 4:].strip()
            if text != "nothing":
                found.append(json.loads(text))
    return found


def _canonical(records):
    return [json.dumps(r, sort_keys=True) for r in records]


@pytest.mark.parametrize("engine", [{"engine": "reference"}, {"engine": "front", "workers": 4}],
                         ids=["reference", "front-w4"])
@pytest.mark.parametrize("block", RUNS, ids=[f"line{b.line}" for b in RUNS])
def test_program_runs_as_shown(block, engine):
    net = snet.load(block.text, boxes={})
    outputs = _canonical(net.run(_records(block, "in"), **engine))
    expected = _canonical(_records(block, "out"))
    if "// ordered" in block.text:
        assert outputs == expected, f"language.md:{block.line}"
    else:
        assert sorted(outputs) == sorted(expected), f"language.md:{block.line}"
