"""Kill-and-resume harness for ``snet run --checkpoint``: the networks, their inputs, the child runs.

Each run is ``python -m snet run NET.snet -i IN -o OUT --checkpoint DIR
--checkpoint-interval 0.02`` in a child process.  A run to be killed is
watched until its output file has grown past a threshold drawn from a
seeded generator (an event of the run, not a time), then killed with
SIGKILL; the same command is run again until one run exits by itself.  The
final output is compared with an uninterrupted run's: byte for byte for a
deterministic network, as a multiset of lines otherwise.
"""

from __future__ import annotations

import json
import os
import re
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs

NETS = Path(__file__).parent / "nets"
ROOT = Path(__file__).resolve().parents[2]
INTERVAL = "0.02"
RUN_LIMIT_S = 300  # an upper bound on one child run, never a pace
ERRORS = "errors.jsonl"  # the error file of a network run with errors=True


def jsonl_text(records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _split_sync() -> list:
    records = []
    for i in range(900):
        if i % 45 == 0:
            records.append({"y": i, "<k>": i // 45})
        records.append({"x": i, "<k>": i % 20})
    return records


def _sync_star() -> list:
    rnd = random.Random(7)
    records, a, b = [], 0, 0
    while a < 3000 or b < 3000:
        for _ in range(rnd.randint(1, 12)):
            if a < 3000:
                records.append({"a": a})
                a += 1
        for _ in range(rnd.randint(1, 12)):
            if b < 3000:
                records.append({"b": b})
                b += 1
    return records


@attrs.frozen
class Net:
    """A network of the harness: its file, its input, whether its output order is fixed."""

    name: str
    snet: str
    records: list
    ordered: bool
    errors: bool = False  # run with --on-error skip --errors errors.jsonl: the error file is compared too

    def write_input(self, folder: Path) -> Path:
        path = folder / "in.jsonl"
        path.write_text(jsonl_text(self.records))
        return path


NETWORKS = [
    Net("pipeline", "pipeline.snet", [{"x": i} for i in range(700)], True),
    Net("split_sync", "split_sync.snet", _split_sync(), True),
    Net("stateful_star", "stateful_star.snet", [{"<acc>": 0}] + [{"<v>": i % 7, "id": i} for i in range(450)], False),
    Net("stateful_feedback", "stateful_feedback.snet",
        [{"<best>": -1000}] + [{"<v>": (i * 37) % 1001, "id": i} for i in range(6000)], False),
    Net("sieve", "sieve.snet", [{"<limit>": 60 + 2 * i, "<id>": i} for i in range(50)], False),
    Net("fibonacci", "fibonacci.snet", [{"<n>": 7 + i % 4, "<id>": i} for i in range(120)], False),
    Net("sync_star", "sync_star.snet", _sync_star(), False),
    Net("filter_par", "filter_par.snet", [{"x": i, "<n>": i} for i in range(700)], True),
    Net("init_split", "init_split.snet", [{"<go>": i, "<k>": i % 17} for i in range(6000)], True),
    Net("failing", "failing.snet", [{"x": i} for i in range(900)], True, errors=True),
]

# A split whose replicas keep per-tag synchro-cells inside a star: each replica of the star has its own
STAR_SPLIT = Net("star_split", "star_split.snet", [{**r, "<n>": 0} for r in _split_sync()], False)

# A stateless split (its replicas are fresh for every record): run in split processes with checkpoints too
SPLIT_PIPELINE = Net("split_pipeline", "split_pipeline.snet", [{"x": i, "<k>": i % 13} for i in range(900)], True)

ENGINES = {"reference": ["--engine", "reference"], "front-w1": ["--engine", "front", "-w", "1"],
           "front-w4": ["--engine", "front", "-w", "4"]}


def command(net: Net, folder: Path, engine: list, *extra: str, output: str = "out.jsonl",
            checkpoint: bool = True) -> list:
    cmd = [sys.executable, "-m", "snet", "run", str(NETS / net.snet), "--boxes", str(NETS / "boxes.py"),
           "-i", str(folder / "in.jsonl"), "-o", str(folder / output), *engine, *extra]
    if net.errors:
        cmd += ["--on-error", "skip", "--errors", str(folder / ERRORS)]
    if checkpoint:
        cmd += ["--checkpoint", str(folder / "ck"), "--checkpoint-interval", INTERVAL]
    return cmd


def child_env(**extra: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), **extra)
    return env


def run_once(cmd: list, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_LIMIT_S, env=env or child_env())


RESUMED = re.compile(r"resuming from the checkpoint in .* \((\d+) records read")


def resumed_at(stderr: str) -> int | None:
    """The records a run (with -v) found read already at its start: None for a fresh run."""
    found = RESUMED.search(stderr)
    return int(found.group(1)) if found else None


def records_committed(folder: Path) -> int:
    """The input records read at the committed snapshot in ``folder/ck`` (-1: none)."""
    try:
        return int(json.loads((folder / "ck" / "manifest.json").read_text())["input"]["records"])
    except (FileNotFoundError, ValueError):  # (a manifest is replaced by a rename: never read half-written)
        return -1


def run_killed(cmd: list, output: Path, threshold: int | None, log: Path | None = None) -> int | None:
    """Run ``cmd`` and SIGKILL it once ``output`` holds ``threshold`` bytes, or (None) once it has committed a
    snapshot of its own after reading some input; its exit status if it ended first.  ``log``: where its standard
    error goes."""
    first = records_committed(output.parent)
    errors = open(log, "w") if log is not None else subprocess.DEVNULL
    try:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errors, env=child_env())
    finally:
        if log is not None:
            errors.close()
    deadline = time.monotonic() + RUN_LIMIT_S
    try:
        while child.poll() is None:
            try:
                size = output.stat().st_size
            except FileNotFoundError:
                size = 0
            if (size >= threshold) if threshold is not None else records_committed(output.parent) > max(0, first):
                child.send_signal(signal.SIGKILL)
                child.wait()
                return None
            if time.monotonic() > deadline:
                raise AssertionError(f"{cmd} ran past {RUN_LIMIT_S} s")
            time.sleep(0.002)  # polling the file: the event is its growth
        said = log.read_text()[-3000:] if log is not None else "(its standard error was not kept)"
        assert child.returncode == 0, f"{cmd} failed with status {child.returncode}; its standard error:\n{said}"
        return child.returncode
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def kill_and_resume(net: Net, folder: Path, engines: list, kills: int, seed: int, expected_size: int) -> dict:
    """Kill runs ``kills`` times at seeded moments (cycling through ``engines``), then run to the end."""
    rnd = random.Random(seed)
    output = folder / "out.jsonl"
    log = folder / "stderr.txt"
    killed = 0
    attempts = 0
    resumes = []  # the records read already at the start of each resumed run
    while killed < kills:
        engine = engines[attempts % len(engines)]
        attempts += 1
        # Every other kill once the run has committed snapshots of its own (so that the next run resumes from
        # the middle of the run), the others when the output has grown past a random size between what it
        # holds and what it will hold.
        size = output.stat().st_size if output.exists() else 0
        threshold = rnd.randint(size, max(size, expected_size)) if attempts % 2 == 0 else None
        status = run_killed(command(net, folder, engine, "-v"), output, threshold, log)
        at = resumed_at(log.read_text())
        if at is not None:
            resumes.append(at)
        if status is None:
            killed += 1
        elif attempts > 4 * kills + 8:
            break  # the network runs faster than the watcher can catch it: enough tries
        else:
            output.unlink()  # it finished: start over, so that the next run is killed midway
            (folder / ERRORS).unlink(missing_ok=True)
            for leftover in (folder / "ck").iterdir():
                leftover.unlink()
    done = run_once(command(net, folder, engines[0], "-v"))
    assert done.returncode == 0, done.stderr
    at = resumed_at(done.stderr)
    if at is not None:
        resumes.append(at)
    return {"killed": killed, "attempts": attempts, "resumed_at": max(resumes, default=None)}


def same_output(net: Net, got: str, want: str) -> None:
    if net.ordered:
        assert got == want
    else:
        assert sorted(got.splitlines()) == sorted(want.splitlines())


def same_errors(net: Net, folder: Path, want: str | None) -> None:
    """The error file in ``folder`` holds the uninterrupted run's error records, each once (in any order:
    workers meet failures in any order)."""
    if not net.errors:
        return
    got = (folder / ERRORS).read_text().splitlines()
    assert want is not None and want.count("\n") > 0
    assert sorted(got) == sorted(want.splitlines())
