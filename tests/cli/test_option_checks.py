"""Options that name boxes or take numbers are checked before a run starts; ``-v`` and ``--stats`` agree;
``snet check`` binds the boxes ``snet run`` would."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import snet

SNET = [sys.executable, "-m", "snet"]


def snet_cli(*args, cwd, stdin=""):
    return subprocess.run(SNET + [*map(str, args)], cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "two.snet").write_text("net two { box split ((a) -> (a)); box merge ((a) -> (a)); } "
                                       "connect split .. merge;\n")
    (tmp_path / "two.py").write_text("def split(a):\n    return {'a': a}\n\ndef merge(a):\n    return {'a': a}\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(3)))
    return tmp_path


@pytest.mark.parametrize("flag", ["--box-concurrency", "--box-processes"])
def test_a_per_box_option_for_a_box_the_network_does_not_use_is_refused(workdir, flag):
    done = snet_cli("run", "two.snet", "-i", "in.jsonl", flag, "nosuch=2", cwd=workdir)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert "given for 'nosuch', which the network does not use (its boxes: merge, split)" in done.stderr
    misspelt = snet_cli("run", "two.snet", "-i", "in.jsonl", flag, "splt=2", cwd=workdir)
    assert misspelt.returncode == 2 and "did you mean 'split'?" in misspelt.stderr
    fine = snet_cli("run", "two.snet", "-i", "in.jsonl", flag, "split=2", cwd=workdir)
    assert fine.returncode == 0, fine.stderr
    assert sorted(json.loads(line)["a"] for line in fine.stdout.splitlines()) == [0, 1, 2]


def test_per_box_concurrency_through_the_api_is_checked_too(workdir):
    net = snet.load(str(workdir / "two.snet"))
    with pytest.raises(snet.SNetUsageError, match="box concurrency given for 'nosuch'"):
        net.run([{"a": 1}], box_concurrency={"nosuch": 2})
    assert list(net.run([{"a": 1}], box_concurrency={"merge": 2})) == [{"a": 1}]


@pytest.mark.parametrize("words", [["--throttle", "-1,0"], ["--throttle=-1,0"], ["--thrott", "-1,0"]])
def test_a_negative_throttle_reaches_the_throttle_check(workdir, words):
    done = snet_cli("run", "two.snet", "-i", "in.jsonl", *words, cwd=workdir)
    assert (done.returncode, done.stdout) == (2, "")
    assert "expected one argument" not in done.stderr
    assert "error: --throttle needs OFFSET >= 1 and FACTOR >= 0, or no input is ever admitted; not (-1, 0)" \
        in done.stderr


def test_a_throttle_that_is_no_pair_of_numbers_is_named(workdir):
    done = snet_cli("run", "two.snet", "-i", "in.jsonl", "--throttle", "-x", cwd=workdir)
    assert done.returncode == 2 and "--throttle takes OFFSET,FACTOR (two numbers), not '-x'" in done.stderr


@pytest.mark.parametrize("engine", ["front", "reference"])
def test_verbose_and_stats_report_the_same_duration_in_the_same_words(workdir, engine):
    done = snet_cli("run", "two.snet", "-i", "in.jsonl", "-v", "--stats", "--engine", engine, cwd=workdir)
    assert done.returncode == 0, done.stderr
    said = re.search(r"^info: done after (\S+ \S+); 3 records written$", done.stderr, re.M)
    measured = re.search(rf"^  (\S+ \S+) on the {engine} engine", done.stderr, re.M)
    assert said and measured, done.stderr
    assert said[1] == measured[1]
    assert said[1].split()[1] in ("s", "ms", "us")


def test_check_binds_net_py_by_default_and_reports_a_missing_box(workdir):
    assert snet_cli("check", "two.snet", cwd=workdir).returncode == 0
    (workdir / "two.py").write_text("def split(a):\n    return {'a': a}\n\ndef mrege(a):\n    return {'a': a}\n")
    check = snet_cli("check", "two.snet", cwd=workdir)
    run = snet_cli("run", "two.snet", "-i", "in.jsonl", cwd=workdir)
    assert (check.returncode, check.stdout) == (2, "")
    assert run.returncode == 2
    assert "declared box 'merge' not found in module" in check.stderr
    assert check.stderr == run.stderr  # the same report as the run gives


def test_check_without_any_box_module_still_checks_the_program(workdir):
    (workdir / "two.py").unlink()
    done = snet_cli("check", "two.snet", cwd=workdir)
    assert (done.returncode, done.stdout) == (0, "{a} -> {a}\n"), done.stderr
