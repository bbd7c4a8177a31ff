"""`snet run` refuses bad options with exit 2 before reading a record, naming the flag; `--stats`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SNET = [sys.executable, "-m", "snet"]


def snet_run(*args, cwd, stdin=None, timeout=60):
    return subprocess.run(SNET + ["run", *map(str, args)], cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def netdir(tmp_path: Path) -> Path:
    (tmp_path / "net.snet").write_text("net n { box f ((a) -> (a)); box g ((a) -> (a)); } connect f .. g;\n")
    (tmp_path / "net.py").write_text("def f(a):\n    return {'a': a + 1}\n\ndef g(a):\n    return {'a': 2 * a}\n")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(5)))
    return tmp_path


@pytest.mark.parametrize("args,message", [
    (["--throttle", "0,0"], "error: --throttle needs OFFSET >= 1 and FACTOR >= 0, or no input is ever admitted"),
    (["--throttle", "1,-1"], "error: --throttle needs OFFSET >= 1 and FACTOR >= 0"),
    (["-w", "0"], "error: -w/--workers must be at least 1, not 0"),
    (["-w", "-1"], "error: -w/--workers must be at least 1, not -1"),
    (["--engine", "warp"], "error: --engine: unknown engine 'warp' (engines: front, reference)"),
    (["--box-concurrency", "-1"], "error: --box-concurrency must be at least 1, not -1"),
    (["--box-concurrency", "f=0"], "error: --box-concurrency must be at least 1 for box 'f', not 0"),
    (["--spark-batch", "0"], "error: --spark-batch must be at least 1, not 0"),
    (["--seed", str(2**40)], "error: --seed must be an int from"),
    (["--wokers", "2"], "unrecognized arguments: --wokers 2 (--wokers: did you mean --workers?)"),
    (["--box-concurency=2"], "(--box-concurency: did you mean --box-concurrency?)"),
])
def test_bad_option_exits_2_before_reading_input(netdir, args, message):
    result = snet_run("net.snet", "-i", "in.jsonl", "-o", "out.jsonl", *args, cwd=netdir)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr, result.stderr
    assert not (netdir / "out.jsonl").exists()  # nothing was opened, let alone read or run


def test_a_flag_given_as_text_that_is_no_number(netdir):
    result = snet_run("net.snet", "--box-concurrency", "f=many", cwd=netdir, stdin="")
    assert result.returncode == 2
    assert "--box-concurrency takes N, auto, NAME=N or NAME=auto, not 'f=many'" in result.stderr


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_stats_print_a_summary_and_stats_json_writes_every_counter(netdir, engine):
    result = snet_run("net.snet", "-i", "in.jsonl", "--engine", engine, "-w", "1", "--stats",
                      "--stats-json", "stats.json", cwd=netdir)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == [{"a": 2 * (i + 1)} for i in range(5)]
    lines = result.stderr.splitlines()
    start = lines.index("snet run statistics:")
    summary = [line.strip() for line in lines[start:]]
    assert summary[1].endswith(f"on the {engine} engine" + (" with 1 worker" if engine == "front" else ""))
    assert summary[2].startswith("records: 5 read, 5 written")
    assert summary[3].split() == ["box", "calls", "time", "in", "box", "per", "call", "share"]
    boxes = {line.split()[0]: line.split() for line in summary[4:6]}
    assert set(boxes) == {"f", "g"} and boxes["f"][1] == "5" and boxes["g"][1] == "5"
    assert sum(int(row[-1].rstrip("%")) for row in boxes.values()) in (99, 100, 101)
    assert "records held in synchro-cells that never fired: 0" in summary
    assert any(line.startswith("peak entities") for line in summary) == (engine == "front")
    text = "\n".join(lines)
    assert "licences_stolen" not in text and "snet stats:" not in text  # the jargon is for the JSON file
    stats = json.loads((netdir / "stats.json").read_text())
    assert stats["engine"] == engine and stats["records_in"] == 5 and stats["records_out"] == 5
    assert stats["records_produced"] == 5 and stats["held_in_cells"] == 0
    assert stats["boxes"]["f"]["calls"] == 5 and stats["boxes"]["g"]["calls"] == 5
    if engine == "front":
        assert len(stats["workers"]) == 1 and stats["workers"][0]["inputs"] == 5
        assert stats["entities"]["created"] >= 2 and "licences_stolen" in stats
    else:
        assert stats["instances"] >= 2


def test_stats_json_alone_prints_nothing_and_a_bad_path_exits_2(netdir):
    result = snet_run("net.snet", "-i", "in.jsonl", "--stats-json", "s.json", cwd=netdir)
    assert result.returncode == 0 and result.stderr == ""
    assert json.loads((netdir / "s.json").read_text())["records_out"] == 5
    result = snet_run("net.snet", "-i", "in.jsonl", "--stats-json", "no/such/dir/s.json", cwd=netdir)
    assert result.returncode == 2 and "cannot open the --stats-json file no/such/dir/s.json" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_warnings_reach_standard_error_once(netdir, engine):
    (netdir / "warn.snet").write_text("net warn connect [{x} -> {x, <t=u+1>}] .. [| {x}, {y} |];\n")
    result = snet_run("warn.snet", "--engine", engine, "-w", "1", cwd=netdir, stdin='{"x": 1, "<u>": 2}\n')
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "warn.snet:1:30: warning: filter output reads tag '<u>', which its pattern does not name",
        "  net warn connect [{x} -> {x, <t=u+1>}] .. [| {x}, {y} |];",
        "                               ^",
        "warn.snet:1:43: warning: synchro-cell discarded with 1 of 2 patterns filled",
    ]


def test_the_net_file_is_named_as_given(netdir):
    (netdir / "bad.snet").write_text("net bad connect [{a} -> {b=a}\n")
    result = snet_run("./bad.snet", cwd=netdir, stdin="")
    assert result.returncode == 2
    assert result.stderr.startswith("./bad.snet:1:"), result.stderr


def test_a_run_called_in_process_leaves_the_snet_loggers_as_they_were(tmp_path, capsys, caplog):
    """`snet.cli.main` in a test or a notebook: its standard-error handler goes when it returns,
    and warnings of later runs still reach the caller's logging (they propagate again)."""
    import logging

    from snet import cli

    (tmp_path / "net.snet").write_text("box f ((a) -> (a)); net n connect f;")
    (tmp_path / "net.py").write_text("def f(a):\n    return {'a': a}\n")
    (tmp_path / "in.jsonl").write_text('{"a": 1}\n')
    logger = logging.getLogger("snet")
    before = (list(logger.handlers), logger.propagate, logger.level)
    status = cli.main(["run", "-v", str(tmp_path / "net.snet"), "-i", str(tmp_path / "in.jsonl"),
                       "--boxes", str(tmp_path / "net.py")])
    assert status == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [{"a": 1}]
    assert (list(logger.handlers), logger.propagate, logger.level) == before
    with caplog.at_level("WARNING", logger="snet"):
        logging.getLogger("snet.test").warning("after the run")
    assert "after the run" in caplog.text
