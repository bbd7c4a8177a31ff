"""Repeated warnings of one kind: the first few in full, then one line with the count of the others."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import snet
from snet.warningsummary import KEEP, kind, summarise

BRANCHES = 1000


def snet_cli(*args, cwd, stdin=""):
    return subprocess.run([sys.executable, "-m", "snet", *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def many(tmp_path):
    """A generated net of BRANCHES parallel filters, each drawing the same warning."""
    branches = " | ".join(f"[{{a}} -> {{b{i}=a}}]" for i in range(BRANCHES))
    (tmp_path / "many.snet").write_text(f"net many connect {branches};\n")
    return tmp_path


def _summary_line(stderr: str, severity: str = "warning") -> str:
    lines = [line for line in stderr.splitlines() if line.startswith(f"{severity}: ")]
    assert len(lines) == 1, stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize("command", [["check"], ["graph", "-o", "many.dot"]])
def test_check_and_graph_print_a_few_warnings_of_a_kind_and_the_count_of_the_rest(many, command):
    done = snet_cli(*command, "many.snet", cwd=many)
    assert done.returncode == 0, done.stderr[-2000:]
    full = [line for line in done.stderr.splitlines() if line.startswith("many.snet:")]
    assert len(full) == KEEP
    assert _summary_line(done.stderr) == (
        f"warning: {BRANCHES - 1 - KEEP:,} more warnings of this kind: parallel branch # accepts {{…}}, but no "
        f"record that reaches the parallel selects it (it receives {{…}})")
    assert len(done.stderr) < 2000


def test_run_prints_the_summary_and_strict_check_counts_every_warning(many):
    run = snet_cli("run", "many.snet", "-o", "out.jsonl", cwd=many, stdin=json.dumps({"a": 1}) + "\n")
    assert run.returncode == 0, run.stderr[-2000:]
    assert _summary_line(run.stderr).startswith(f"warning: {BRANCHES - 1 - KEEP:,} more warnings of this kind: ")
    strict = snet_cli("check", "--strict", "many.snet", cwd=many)
    assert strict.returncode == 2
    assert _summary_line(strict.stderr, "error").startswith(f"error: {BRANCHES - 1 - KEEP:,} more errors of ")
    assert strict.stderr.endswith(f"many.snet: {BRANCHES - 1} warnings treated as errors (--strict)\n")


@pytest.mark.parametrize("engine", ["front", "reference"])
def test_an_executions_warnings_are_summarised_too(engine):
    net = snet.load("net cells connect [| {a}, {b} |] ! <k>;")
    run = net.run([{"a": i, "<k>": i} for i in range(50)], engine=engine)
    assert list(run) == []
    assert run.warnings == [*["<string>:1:19: warning: synchro-cell discarded with 1 of 2 patterns filled"] * KEEP,
                            f"warning: {50 - KEEP} more warnings of this kind: synchro-cell discarded with # of # "
                            f"patterns filled"]


def test_the_kind_is_the_sentence_without_its_place_and_particulars():
    assert kind("f.snet:1:2: warning: box 'g' needs 'x', 12 of {a, b}\n  excerpt\n  ^") == \
        ("warning", "box '…' needs '…', # of {…}")
    assert kind("f.snet:3:4: error: tag <k> of <t>") == ("error", "tag <…> of <…>")


def test_few_warnings_and_different_kinds_are_left_as_they_are():
    few = [f"f:1:{i}: warning: box 'b{i}' is never used" for i in range(KEEP)]
    assert summarise(few) == few
    mixed = ["f:1:1: warning: one thing", "f:1:2: warning: another thing", *few, "f:1:9: warning: box 'z' is never used"]
    assert summarise(mixed) == [*mixed[:-1], "warning: 1 more warning of this kind: box '…' is never used"]
