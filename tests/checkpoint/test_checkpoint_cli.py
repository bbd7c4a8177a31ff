"""``snet run --checkpoint``: what a resume refuses, reset, appended input, XML files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from checkpoint_harness import (ENGINES, NETS, NETWORKS, STAR_SPLIT, child_env, command, jsonl_text,  # noqa: E402
                                run_killed, run_once, same_output)

SPLIT_SYNC = next(n for n in NETWORKS if n.name == "split_sync")


def _own_copy(folder: Path) -> tuple[Path, Path]:
    """The split_sync network and its boxes copied into ``folder`` (so that a test may change them)."""
    net = folder / "net.snet"
    boxes = folder / "boxes.py"
    shutil.copy(NETS / SPLIT_SYNC.snet, net)
    shutil.copy(NETS / "boxes.py", boxes)
    SPLIT_SYNC.write_input(folder)
    return net, boxes


def _run(folder: Path, net: Path, boxes: Path, *extra: str, output: str = "out.jsonl", inp: str = "in.jsonl"):
    cmd = [sys.executable, "-m", "snet", "run", str(net), "--boxes", str(boxes), "-i", str(folder / inp),
           "-o", str(folder / output), "--checkpoint", str(folder / "ck"), "--checkpoint-interval", "0.02", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=child_env())


@pytest.fixture
def finished(tmp_path):
    """A split_sync run done with a checkpoint in ``tmp_path/ck``: (folder, net, boxes)."""
    net, boxes = _own_copy(tmp_path)
    done = _run(tmp_path, net, boxes)
    assert done.returncode == 0, done.stderr
    return tmp_path, net, boxes


def test_a_changed_network_file_is_refused(finished):
    folder, net, boxes = finished
    net.write_text(net.read_text() + "\n// changed\n")
    again = _run(folder, net, boxes)
    assert again.returncode == 2
    assert f"the network file {net} changed since the checkpoint" in again.stderr
    assert "--checkpoint-reset" in again.stderr


def test_a_changed_box_file_is_refused(finished):
    folder, net, boxes = finished
    boxes.write_text(boxes.read_text() + "\n# changed\n")
    again = _run(folder, net, boxes)
    assert again.returncode == 2
    assert f"the box file {boxes} changed since the checkpoint" in again.stderr


def test_a_changed_input_prefix_is_refused(finished):
    folder, net, boxes = finished
    text = (folder / "in.jsonl").read_text()
    (folder / "in.jsonl").write_text(text.replace('"x": 5,', '"x": 6,', 1))
    again = _run(folder, net, boxes)
    assert again.returncode == 2
    assert "the input file" in again.stderr and "changed before the position the run had read" in again.stderr


def test_a_changed_output_is_refused(finished):
    folder, net, boxes = finished
    out = folder / "out.jsonl"
    out.write_text(out.read_text()[:-40])
    again = _run(folder, net, boxes)
    assert again.returncode == 2
    assert "changed before the committed position" in again.stderr


def test_another_engine_is_refused(finished):
    folder, net, boxes = finished
    again = _run(folder, net, boxes, "--engine", "reference")
    assert again.returncode == 2
    assert "was taken by the front engine: resume with --engine front" in again.stderr


def test_reset_starts_afresh(finished):
    folder, net, boxes = finished
    want = (folder / "out.jsonl").read_text()
    net.write_text(net.read_text() + "\n// changed\n")
    again = _run(folder, net, boxes, "--checkpoint-reset", "-v")
    assert again.returncode == 0, again.stderr
    assert "resuming" not in again.stderr
    assert (folder / "out.jsonl").read_text() == want


def test_running_a_finished_run_again_changes_nothing(finished):
    folder, net, boxes = finished
    want = (folder / "out.jsonl").read_text()
    again = _run(folder, net, boxes, "-v")
    assert again.returncode == 0, again.stderr
    assert "resuming from the checkpoint" in again.stderr
    assert (folder / "out.jsonl").read_text() == want


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["reference", "front-w4"])
@pytest.mark.parametrize("fmt", ["jsonl", "xml"])
def test_appended_input_continues_the_run(engine, fmt, tmp_path):
    """Half the input, then the rest appended: the output of one run over all of it (state kept per tag)."""
    net, boxes = _own_copy(tmp_path)
    lines = (tmp_path / "in.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "whole.jsonl").write_text("".join(lines))
    plain = subprocess.run([sys.executable, "-m", "snet", "run", str(net), "--boxes", str(boxes), "-i",
                            str(tmp_path / "whole.jsonl"), "-o", str(tmp_path / f"want.{fmt}"), *ENGINES[engine]],
                           capture_output=True, text=True, timeout=300, env=child_env())
    assert plain.returncode == 0, plain.stderr
    (tmp_path / "in.jsonl").write_text("".join(lines[:len(lines) // 2]))
    first = _run(tmp_path, net, boxes, *ENGINES[engine], output=f"out.{fmt}")
    assert first.returncode == 0, first.stderr
    with open(tmp_path / "in.jsonl", "a") as f:
        f.write("".join(lines[len(lines) // 2:]))
    second = _run(tmp_path, net, boxes, *ENGINES[engine], output=f"out.{fmt}")
    assert second.returncode == 0, second.stderr
    assert (tmp_path / f"out.{fmt}").read_text() == (tmp_path / f"want.{fmt}").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["reference", "front-w1"])
def test_xml_output_and_input_resume_after_a_kill(engine, tmp_path):
    from snet.recordio import open_writer

    with open_writer(str(tmp_path / "in.xml"), "xml") as writer:
        for i in range(700):
            writer.write({"x": i})
    plain_cmd = [sys.executable, "-m", "snet", "run", str(NETS / "pipeline.snet"), "--boxes", str(NETS / "boxes.py"),
                 "-i", str(tmp_path / "in.xml"), *ENGINES[engine]]
    plain = subprocess.run(plain_cmd + ["-o", str(tmp_path / "want.xml")], capture_output=True, text=True,
                           timeout=300, env=child_env())
    assert plain.returncode == 0, plain.stderr
    cmd = plain_cmd + ["-o", str(tmp_path / "out.xml"), "--checkpoint", str(tmp_path / "ck"),
                       "--checkpoint-interval", "0.02"]
    assert run_killed(cmd, tmp_path / "out.xml", None) is None  # killed after two snapshots of its own
    done = subprocess.run(cmd + ["-v"], capture_output=True, text=True, timeout=300, env=child_env())
    assert done.returncode == 0, done.stderr
    assert "resuming from the checkpoint" in done.stderr
    assert (tmp_path / "out.xml").read_text() == (tmp_path / "want.xml").read_text()


@pytest.mark.parametrize("args, message", [
    (["-o", "-"], "--checkpoint needs an output file"),
    (["--on-error", "skip", "--errors", "-"], "--checkpoint needs an error file (--errors FILE)"),
    (["--checkpoint-interval", "0"], "--checkpoint-interval takes a positive number of seconds"),
    (["--spark", "local[1]", "-i", "in.parquet", "-o", "out.parquet"],
     "--checkpoint does not apply to a batch run with a Spark source and sink"),
])
def test_runs_that_cannot_take_checkpoints_are_refused(args, message, tmp_path):
    SPLIT_SYNC.write_input(tmp_path)
    cmd = [sys.executable, "-m", "snet", "run", str(NETS / SPLIT_SYNC.snet), "--boxes", str(NETS / "boxes.py"),
           "-i", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--checkpoint", str(tmp_path / "ck")]
    done = subprocess.run(cmd + args, capture_output=True, text=True, timeout=300, env=child_env(), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("engine", ["reference", "front-w2"])
def test_a_split_with_state_inside_a_star_is_saved_by_split_processes_as_in_process(engine, tmp_path):
    """A per-tag synchro-cell in a split inside a star: its replicas in split processes are saved at the paths
    a run in process gives them.  The first half of the input runs in split processes, the second half is
    appended and resumed in process, and the other way round: each gives the uninterrupted run's output."""
    records = STAR_SPLIT.records
    half = len(records) // 2
    plain = tmp_path / "plain"
    plain.mkdir()
    STAR_SPLIT.write_input(plain)
    done = run_once(command(STAR_SPLIT, plain, ENGINES["reference"], checkpoint=False))
    assert done.returncode == 0, done.stderr
    want = sorted((plain / "out.jsonl").read_text().splitlines())
    base = ENGINES["reference"] if engine == "reference" else ["--engine", "front", "-w", "2"]
    processes = ["--split-processes", "2", "--process-batch", "16"]
    for first, second in ((processes, []), ([], processes)):
        run = tmp_path / ("processes-first" if first else "processes-second")
        run.mkdir()
        (run / "in.jsonl").write_text(jsonl_text(records[:half]))
        done = run_once(command(STAR_SPLIT, run, base + first))
        assert done.returncode == 0, done.stderr
        with open(run / "in.jsonl", "a") as f:
            f.write(jsonl_text(records[half:]))
        done = run_once(command(STAR_SPLIT, run, base + second, "-v"))
        assert done.returncode == 0, done.stderr
        assert f"({half} records read" in done.stderr, done.stderr  # (it went on from the first run's state)
        assert sorted((run / "out.jsonl").read_text().splitlines()) == want


def test_standard_input_is_refused(tmp_path):
    cmd = [sys.executable, "-m", "snet", "run", str(NETS / SPLIT_SYNC.snet), "--boxes", str(NETS / "boxes.py"),
           "-o", str(tmp_path / "out.jsonl"), "--checkpoint", str(tmp_path / "ck")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=child_env(), input="")
    assert done.returncode == 2
    assert "--checkpoint needs an input file" in done.stderr


def test_checkpoint_options_need_a_directory(tmp_path):
    SPLIT_SYNC.write_input(tmp_path)
    cmd = [sys.executable, "-m", "snet", "run", str(NETS / SPLIT_SYNC.snet), "--boxes", str(NETS / "boxes.py"),
           "-i", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--checkpoint-reset"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=child_env())
    assert done.returncode == 2
    assert "apply to runs with --checkpoint DIR" in done.stderr


@pytest.mark.parametrize("engine", ["reference", "front-w4"])
def test_a_resumed_run_warns_of_the_cells_left_as_the_first_did(engine, tmp_path):
    """The saved cells no record reaches again still end the run with their termination warnings."""
    net = next(n for n in NETWORKS if n.name == "stateful_star")
    net.write_input(tmp_path)
    first = run_once(command(net, tmp_path, ENGINES[engine]))
    assert first.returncode == 0, first.stderr
    warned = [line for line in first.stderr.splitlines() if "warning: synchro-cell discarded" in line]
    assert warned
    again = run_once(command(net, tmp_path, ENGINES[engine]))
    assert again.returncode == 0, again.stderr
    assert [line for line in again.stderr.splitlines() if "warning: synchro-cell discarded" in line] == warned


@pytest.mark.parametrize("engine", ["reference", "front-w1"])
def test_a_bad_record_after_the_resumed_position_is_named_by_its_line(engine, tmp_path):
    net, boxes = _own_copy(tmp_path)
    lines = (tmp_path / "in.jsonl").read_text().splitlines(keepends=True)[:300]
    (tmp_path / "in.jsonl").write_text("\n" + "".join(lines))  # a blank first line counts too
    first = _run(tmp_path, net, boxes, *ENGINES[engine])
    assert first.returncode == 0, first.stderr
    with open(tmp_path / "in.jsonl", "a") as f:
        f.write('{"x": 1, "<k>": 1}\nnot a record\n')
    again = _run(tmp_path, net, boxes, *ENGINES[engine])
    assert again.returncode == 1
    assert f"{tmp_path / 'in.jsonl'}:303: error:" in again.stderr


FAILING = next(n for n in NETWORKS if n.name == "failing")


def test_the_error_file_is_committed_and_cut_back_with_the_output(tmp_path):
    """Failures after the last snapshot are written again by the resumed run, so the file is cut back first;
    the resumed run's last line counts the failures of the whole run, those before the resume included."""
    FAILING.write_input(tmp_path)
    cmd = command(FAILING, tmp_path, ENGINES["front-w4"])
    plain = run_once(command(FAILING, tmp_path, ENGINES["reference"], output="want.jsonl", checkpoint=False))
    assert plain.returncode == 0, plain.stderr
    want_errors = (tmp_path / "errors.jsonl").read_text()
    assert run_killed(cmd, tmp_path / "out.jsonl", None) is None  # killed after a snapshot of its own
    with open(tmp_path / "errors.jsonl", "a") as f:
        f.write('{"error": "written after the last snapshot"}\n')  # as a killed run leaves it
    done = run_once(cmd + ["-v"])
    assert done.returncode == 0, done.stderr
    assert "resuming from the checkpoint" in done.stderr
    assert (tmp_path / "out.jsonl").read_text() == (tmp_path / "want.jsonl").read_text()
    assert sorted((tmp_path / "errors.jsonl").read_text().splitlines()) == sorted(want_errors.splitlines())
    failed = len(want_errors.splitlines())
    assert f"snet: {failed} records failed and were skipped (error records in" in plain.stderr, plain.stderr
    assert re.search(rf"snet: {failed} records failed and were skipped(, \d+ of them before the run resumed)? "
                     rf"\(error records in", done.stderr), done.stderr
    again = run_once(cmd)  # nothing new to read: every failure was before this resume
    assert again.returncode == 0, again.stderr
    assert f"snet: {failed} records failed and were skipped, {failed} of them before the run resumed" \
        in again.stderr, again.stderr


def test_adding_dropping_or_changing_the_error_file_is_refused(tmp_path):
    FAILING.write_input(tmp_path)
    cmd = command(FAILING, tmp_path, ENGINES["reference"])
    assert run_once(cmd).returncode == 0
    without = [a for a in cmd if a not in ("--errors", str(tmp_path / "errors.jsonl"))]
    for args, message in ((without, "belongs to a run with error file"),
                          ([*without, "--errors", str(tmp_path / "other.jsonl")], "not one with --errors")):
        again = run_once(args)
        assert again.returncode == 2, again.stderr
        assert message in again.stderr and "--checkpoint-reset" in again.stderr
    lines = (tmp_path / "errors.jsonl").read_text().splitlines()
    (tmp_path / "errors.jsonl").write_text("\n".join(["{}"] + lines[1:]) + "\n")
    again = run_once(cmd)
    assert again.returncode == 2
    assert "the error file" in again.stderr and "changed before the committed position" in again.stderr


def test_a_second_run_on_the_same_directory_is_refused_while_the_first_runs(tmp_path):
    """Two runs on one checkpoint directory would overwrite each other's snapshots and output: the second is
    refused (exit 2, naming the first's process) before it opens anything; once the first is killed, the
    kernel has let go of its lock and the same command resumes to the whole output."""
    (tmp_path / "held.snet").write_text("net held { box wait ((x) -> (x)); } connect wait;\n")
    (tmp_path / "held.py").write_text("import os, time\n\n\ndef wait(x):\n"
                                      "    while x == 3 and not os.path.exists('go'):  # held until the test says\n"
                                      "        time.sleep(0.01)\n"
                                      "    return {'x': x}\n")
    (tmp_path / "in.jsonl").write_text(jsonl_text({"x": i} for i in range(10)))
    cmd = [sys.executable, "-m", "snet", "run", "held.snet", "-i", "in.jsonl", "-o", "out.jsonl",
           "--checkpoint", "ck", "--checkpoint-interval", "0.02"]
    first = subprocess.Popen(cmd, cwd=tmp_path, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        lock = tmp_path / "ck" / "lock"
        deadline = time.monotonic() + 120
        while not (lock.exists() and lock.read_text().strip() == str(first.pid)):  # the first holds the directory
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read().decode()
            time.sleep(0.01)
        second = subprocess.run(cmd, cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=300)
        assert second.returncode == 2, second.stderr
        assert f"another run uses the checkpoint in ck (process {first.pid})" in second.stderr
    finally:
        first.kill()
        first.wait()
    (tmp_path / "go").touch()
    third = subprocess.run(cmd, cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stderr
    assert [json.loads(line)["x"] for line in (tmp_path / "out.jsonl").read_text().splitlines()] == list(range(10))


def test_the_cells_a_finished_run_leaves_are_said_to_be_kept_in_the_checkpoint(tmp_path):
    """Their termination warnings say "discarded" (as for a run without checkpoints); a note says that the
    checkpoint keeps them, for input appended later."""
    (tmp_path / "in.jsonl").write_text(jsonl_text({"x": i, "<k>": i} for i in range(5)))
    done = run_once(command(SPLIT_SYNC, tmp_path, ENGINES["reference"]))
    assert done.returncode == 0, done.stderr
    assert (f"note: the 5 synchro-cells holding records are kept in the checkpoint in {tmp_path / 'ck'}: records "
            f"appended to the input and run again meet them") in done.stderr
    with open(tmp_path / "in.jsonl", "a") as f:
        f.write(jsonl_text({"y": -i, "<k>": i} for i in range(5)))
    again = run_once(command(SPLIT_SYNC, tmp_path, ENGINES["reference"]))
    assert again.returncode == 0, again.stderr
    assert "note:" not in again.stderr and "discarded" not in again.stderr  # every cell fired
