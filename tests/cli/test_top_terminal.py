"""``snet run --top`` on a real pseudo-terminal: every box and its figures drawn live, the records untouched."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from test_progress_terminal import on_a_terminal

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX"),
              pytest.mark.skipif(__import__("importlib").util.find_spec("rich") is None,
                                 reason="--top draws with rich, which is not installed")]

SNET = [sys.executable, "-m", "snet"]
RECORDS = 200
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
COLUMNS = ("box", "calls", "calls/s", "mean", "p99", "share", "queued", "limit")


@pytest.fixture
def two_boxes(tmp_path):
    """A slow box (the bottleneck) and a fast one, and an input file of RECORDS records."""
    (tmp_path / "two.snet").write_text("box slow ((a) -> (a)); box fast ((a) -> (b)); net two connect slow .. fast;\n")
    (tmp_path / "two.py").write_text("import time\n\ndef slow(a):\n    time.sleep(0.005)\n    return {'a': a}\n\n"
                                     "def fast(a):\n    return {'b': a}\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(RECORDS)))
    return tmp_path


def screen(drawn: str) -> list[str]:
    """What the terminal shows at the end, scrolled-off lines included: a small emulator of the codes rich uses.

    Carriage return, newline, cursor up and down (``ESC[nA``, ``ESC[nB``),
    to a column (``ESC[nG``), erase the line (``ESC[2K``); colours and the
    cursor's visibility change nothing shown.
    """
    lines: list[list[str]] = [[]]
    row = col = 0
    for token in re.split(r"(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)", drawn):
        if not token:
            continue
        if token == "\r":
            col = 0
        elif token == "\n":
            row += 1
            col = 0
        elif token.startswith("\x1b["):
            code, arg = token[-1], token[2:-1]
            n = int(arg) if arg.isdigit() else 1
            if code == "A":
                row = max(0, row - n)
            elif code == "B":
                row += n
            elif code == "G":
                col = n - 1
            elif code == "K":
                while len(lines) <= row:
                    lines.append([])
                lines[row] = [] if arg == "2" else lines[row][:col]
            continue
        else:
            while len(lines) <= row:
                lines.append([])
            cells = lines[row]
            cells.extend(" " * (col - len(cells)))
            cells[col:col + len(token)] = list(token)
            col += len(token)
        while len(lines) <= row:
            lines.append([])
    return ["".join(cells).rstrip() for cells in lines]


def last_table(drawn: str) -> list[str]:
    """The table left on the terminal at the end: from its heading ``snet: `` on."""
    shown = screen(drawn)
    start = max(i for i, line in enumerate(shown) if line.startswith("snet: "))
    return [line for line in shown[start:] if line]


def row(frame: list[str], box: str) -> list[str]:
    """The cells of ``box``'s row in ``frame`` (split on the table's rules, whatever characters draw them)."""
    for line in frame:
        cells = [c.strip() for c in re.split(r"[│|┃]", line) if c.strip()]
        if cells and cells[0] == box:
            return cells
    raise AssertionError(f"no row for box {box} in {frame}")


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["front", "reference"])
def test_top_draws_every_box_with_its_figures_and_leaves_the_output_unchanged(two_boxes, engine):
    plain = subprocess.run(SNET + ["run", "two.snet", "-i", "in.jsonl", "-w", "1", "--engine", engine],
                           cwd=two_boxes, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    code, drawn, out = on_a_terminal(SNET + ["run", "two.snet", "-i", "in.jsonl", "-w", "1", "--engine", engine,
                                             "--top"], two_boxes, stdout_too=False)
    assert code == 0, drawn
    assert out == plain.stdout  # the records, in order, byte for byte
    assert ANSI.sub("", drawn).count("snet: ") >= 2, drawn  # drawn when the run starts, redrawn at its end
    last = last_table(drawn)
    heading = " ".join(last[:2])  # the run, then what it holds
    engine_named = "on the front engine, 1 worker" if engine == "front" else "on the reference engine;"
    assert engine_named in heading and f"in {RECORDS}, out {RECORDS}" in heading, last
    assert "held in synchro-cells 0" in heading and re.search(r"memory \d+(\.\d)? MiB", heading), heading
    header = next(line for line in last if "calls/s" in line)
    assert [c.strip() for c in re.split(r"[│|┃]", header) if c.strip()] == list(COLUMNS)
    slow, fast = row(last, "slow"), row(last, "fast")
    assert slow[1] == fast[1] == str(RECORDS)
    # The slow box takes all the time in boxes: it is listed first, with its share, and its calls last >= 5 ms.
    assert last.index(next(line for line in last if "slow" in line)) < last.index(
        next(line for line in last if "fast" in line))
    assert int(slow[5].rstrip("%")) >= 90, slow
    for figure in (slow[3], slow[4]):  # mean, p99
        value, unit = figure.split()
        assert unit in ("ms", "s") and (unit == "s" or float(value) >= 5), slow
    # FRONT: nothing queued at the end, one call at a time with one worker; the reference engine does not say
    assert slow[6:] == (["0", "1"] if engine == "front" else ["-", "-"])


def test_records_on_the_same_terminal_are_printed_above_the_table(two_boxes):
    code, drawn, _ = on_a_terminal(SNET + ["run", "two.snet", "-i", "in.jsonl", "-w", "1", "--top"],
                                   two_boxes, stdout_too=True)
    assert code == 0, drawn
    shown = [line for line in screen(drawn) if line]
    table = last_table(drawn)
    records = shown[:len(shown) - len(table)]
    # Every record line shows the record alone, above the table: nothing of the table drawn through it.
    assert sorted(json.loads(line)["b"] for line in records) == list(range(RECORDS)), shown
    assert row(table, "slow")[1] == row(table, "fast")[1] == str(RECORDS)


def test_top_is_refused_before_the_run_when_standard_error_is_not_a_terminal(two_boxes):
    done = subprocess.run(SNET + ["run", "two.snet", "-i", "in.jsonl", "-o", "out.jsonl", "--top"], cwd=two_boxes,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "--top draws a live view on standard error, which is not a terminal" in done.stderr
    assert "--progress" in done.stderr
    assert not (two_boxes / "out.jsonl").exists()


def test_top_and_progress_together_are_refused(two_boxes):
    code, drawn, out = on_a_terminal(SNET + ["run", "two.snet", "-i", "in.jsonl", "--top", "--progress"],
                                     two_boxes, stdout_too=False)
    assert code == 2 and out == ""
    assert "--top and --progress both draw on standard error" in drawn
