"""`snet explain NET.snet --stats-json RUN.json -o x.svg`: the drawing, each box coloured by its share and labelled."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from snet.commands.explain import share_colour

SNET = [sys.executable, "-m", "snet"]
SVG = "{http://www.w3.org/2000/svg}"
NET = ("net n { box f ((a) -> (a)); box g ((a) -> (a)); box h ((b) -> (b)); } "
       "connect (f .. g) | h;\n")
BOXES = "def f(a):\n    return {'a': a + 1}\n\ndef g(a):\n    return {'a': 2 * a}\n\ndef h(b):\n    return {'b': b}\n"

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")


@pytest.fixture
def netdir(tmp_path: Path) -> Path:
    (tmp_path / "net.snet").write_text(NET)
    (tmp_path / "net.py").write_text(BOXES)
    return tmp_path


def snet(*args, cwd):
    return subprocess.run(SNET + list(map(str, args)), cwd=cwd, capture_output=True, text=True, timeout=120)


def drawn_boxes(svg: Path) -> dict[str, tuple[str, list[str]]]:
    """{box name: (fill colour, text lines)} of the boxes in a drawing Graphviz made."""
    found = {}
    for group in ET.parse(svg).getroot().iter(f"{SVG}g"):
        if group.get("class") != "node":
            continue
        texts = [t.text or "" for t in group.iter(f"{SVG}text")]
        if texts and texts[0].startswith("box "):
            shape = group.find(f"{SVG}polygon")
            found[texts[0].split()[1]] = (shape.get("fill"), texts[2:])
    return found


@needs_dot
def test_each_box_is_coloured_by_its_share_and_labelled_with_its_figures(netdir):
    (netdir / "run.json").write_text(json.dumps({
        "engine": "front", "seconds": 5.0, "records_in": 1000, "records_out": 1000,
        "boxes": {"f": {"calls": 1000, "seconds": 3.0}, "g": {"calls": 1000, "seconds": 1.0}}}))
    result = snet("explain", "net.snet", "--stats-json", "run.json", "-o", "x.svg", cwd=netdir)
    assert result.returncode == 0, result.stderr
    boxes = drawn_boxes(netdir / "x.svg")
    assert boxes == {
        "f": ("#e16457", ["1,000 calls, 3 s (75%)", "3 ms per call"]),
        "g": ("#f5cbc7", ["1,000 calls, 1 s (25%)", "1 ms per call"]),
        "h": ("#ffffff", ["not called"]),
    }
    assert share_colour(0.75) == "#e16457" and share_colour(0.25) == "#f5cbc7"
    assert "run: 5 s, 1,000 records in, 1,000 out; 4 s in boxes" in (netdir / "x.svg").read_text()


@needs_dot
def test_the_figures_of_a_real_run_are_drawn(netdir):
    (netdir / "in.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(7)) + '{"b": 1}\n')
    ran = snet("run", "net.snet", "-i", "in.jsonl", "-o", "out.jsonl", "--stats-json", "run.json", cwd=netdir)
    assert ran.returncode == 0, ran.stderr
    run = json.loads((netdir / "run.json").read_text())
    result = snet("explain", "net.snet", "--stats-json", "run.json", "-o", "x.svg", cwd=netdir)
    assert result.returncode == 0, result.stderr
    boxes = drawn_boxes(netdir / "x.svg")
    total = sum(b["seconds"] for b in run["boxes"].values())
    assert sorted(boxes) == ["f", "g", "h"]
    for name, calls in (("f", 7), ("g", 7), ("h", 1)):
        fill, lines = boxes[name]
        assert run["boxes"][name]["calls"] == calls
        assert lines[0].startswith(f"{calls} calls, ")
        assert fill == share_colour(run["boxes"][name]["seconds"] / total)


def test_dot_text_on_standard_output(netdir):
    (netdir / "run.json").write_text(json.dumps({"seconds": 1, "records_in": 1, "records_out": 1,
                                                 "boxes": {"h": {"calls": 1, "seconds": 0.5}}}))
    result = snet("explain", "net.snet", "--stats-json", "run.json", cwd=netdir)
    assert result.returncode == 0, result.stderr
    assert 'box h\\n((b) -> (b))\\n1 calls, 500 ms (100%)\\n500 ms per call", shape="box", style="filled", ' \
           'fillcolor="#d7301f", fontcolor="white"' in result.stdout


@pytest.mark.parametrize("content,message", [
    ("not json", "error: run.json is not JSON: "),
    ("[1]", "error: run.json is not what 'snet run --stats-json' writes: not a JSON object"),
    ('{"seconds": 1, "records_in": 1, "records_out": 1}',
     "error: run.json is not what 'snet run --stats-json' writes: no object 'boxes'"),
    ('{"seconds": 1, "records_in": 1, "records_out": 1, "boxes": {"f": {"calls": "x", "seconds": 1}}}',
     "error: run.json is not what 'snet run --stats-json' writes: box 'f' has no numbers 'calls' and 'seconds'"),
    ('{"seconds": 1, "records_in": 1, "records_out": 1, "boxes": {"k": {"calls": 1, "seconds": 1}}}',
     "error: run.json is not a run of net n: it has figures of box k, which the net does not have "
     "(its boxes: f, g, h)"),
])
def test_a_file_that_is_no_run_of_the_net_is_one_line_and_exit_2(netdir, content, message):
    (netdir / "run.json").write_text(content)
    result = snet("explain", "net.snet", "--stats-json", "run.json", "-o", "x.svg", cwd=netdir)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(message), result.stderr
    assert not (netdir / "x.svg").exists()


def test_a_missing_file_is_exit_2(netdir):
    result = snet("explain", "net.snet", "--stats-json", "nowhere.json", cwd=netdir)
    assert result.returncode == 2
    assert result.stderr.strip() == "error: cannot read the --stats-json file nowhere.json: No such file or directory"
