"""Fuzzed programs and record files through ``snet run``: a clear error or a result, never worse.

Each case damages one of the conformance programs (the pieces of
tests/compiler/test_frontend_robustness.py: inserted tokens, deletions,
copies) and/or its input records (values swapped for others, labels
dropped or misspelt, lines cut, bytes flipped), and runs ``snet run`` on it
in a child process under a wall-clock limit and an address-space limit.
Every run must end with status 0, 1 or 2, with no Python traceback on
standard error, within its time, and with its resident memory under the
bound.  Programs that unfold for ever are stopped by the run's bound
(snet.core.limits); ``--max-held`` is lowered so that they stop within the
time limit on a busy machine.

The cases come from one seed (``SNET_FUZZ_SEED``, default below), and the
whole test stops starting new cases after ``BUDGET_S``; a failing case is
reported with the seed and its number, and its files are kept in the test's
temporary folder.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "conformance" / "cases"
SEED = int(os.environ.get("SNET_FUZZ_SEED", "20261126"))
BUDGET_S = float(os.environ.get("SNET_FUZZ_BUDGET", "75"))  # no new case starts after this
RUN_LIMIT_S = 20.0  # wall-clock limit of one run (generous: the machine may be busy)
ADDRESS_SPACE = 3 * 2 ** 30  # RLIMIT_AS of a run: past it, allocation fails in the child
RSS_BOUND_KB = 1024 * 1024  # the resident memory a run may reach
MAX_HELD = "50000"

PIECES = list("{}[]()<>|!*@\\#?:;,=.-+/%&abcxyz019 \n") + [
    "<metadata>", "</metadata>", "/*", "*/", "->", "..", "net ", "box ", "connect ", "if ", "then ", "else ",
    "<a>", "<#b>", "*{", "} * {", "!<", "[| {a}, {b} |]", "[{<n>} -> {<n=n*n>}; {<n=n+1>}]"]
VALUES = [0, 1, -1, 2 ** 31, 10 ** 30, 0.5, "", "x", None, True, [], {}, [1, 2], {"k": 1}, "<n>"]


def _damage_text(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        p = rng.randrange(len(text) + 1)
        how = rng.choice(["insert", "delete", "copy"])
        if how == "insert":
            text = text[:p] + rng.choice(PIECES) + text[p:]
        elif how == "delete":
            text = text[:p] + text[p + rng.randint(1, 8):]
        else:
            q = rng.randrange(len(text) + 1)
            text = text[:p] + text[q:q + rng.randint(1, 8)] + text[p:]
    return text


def _damage_record(rng: random.Random, record: dict) -> dict:
    record = dict(record)
    for _ in range(rng.randint(1, 2)):
        how = rng.choice(["value", "drop", "rename", "add"])
        labels = list(record)
        if how == "value" and labels:
            record[rng.choice(labels)] = rng.choice(VALUES)
        elif how == "drop" and labels:
            del record[rng.choice(labels)]
        elif how == "rename" and labels:
            old = rng.choice(labels)
            record[old[:-1] + rng.choice("xyz>") if len(old) > 1 else "q"] = record.pop(old)
        else:
            record[rng.choice(["a", "b", "<n>", "<m>", "<#b>", "x", "<>", "<a b>"])] = rng.choice(VALUES)
    return record


def _damage_input(rng: random.Random, text: str) -> bytes:
    lines = text.splitlines()
    out = []
    for line in lines:
        roll = rng.random()
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if roll < 0.4 and isinstance(record, dict):
            out.append(json.dumps(_damage_record(rng, record)))
        elif roll < 0.5:
            out.append(line[:rng.randrange(len(line) + 1)])  # cut
        else:
            out.append(line)
    data = ("\n".join(out) + "\n").encode()
    if data and rng.random() < 0.15:
        i = rng.randrange(len(data))
        data = data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
    return data


def _case(rng: random.Random, sources: list[Path], folder: Path) -> list[str]:
    """Write one fuzzed case into ``folder``; returns its ``snet run`` arguments."""
    source = rng.choice(sources)
    folder.mkdir()
    for extra in source.glob("*.py"):  # the case's boxes, found beside the program
        shutil.copy(extra, folder / extra.name)
    program = source.joinpath("net.snet").read_text()
    records = source.joinpath("input.jsonl").read_text() if source.joinpath("input.jsonl").exists() else "{}\n"
    what = rng.random()
    if what < 0.45:
        program = _damage_text(rng, program)
    if what >= 0.3:
        (folder / "in.jsonl").write_bytes(_damage_input(rng, records))
    else:
        (folder / "in.jsonl").write_text(records)
    (folder / "net.snet").write_text(program)
    engine = rng.choice(["front", "reference"])
    return ["--engine", engine, "-w", "2", "--max-held", MAX_HELD, "-i", str(folder / "in.jsonl"),
            "-o", str(folder / "out.jsonl"), str(folder / "net.snet")]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run(args: list[str], folder: Path) -> tuple[int | None, str, int, float]:
    """Status (None: killed at the time limit), standard error, peak RSS (KB), seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with open(folder / "stderr.txt", "wb") as err:
        child = subprocess.Popen([sys.executable, "-m", "snet", "run", *args], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=err, env=env, preexec_fn=_limit_memory,
                                 cwd=folder)
        t0 = time.monotonic()
        status = None
        usage = None
        while time.monotonic() - t0 < RUN_LIMIT_S:
            pid, raw, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(raw)
                break
            time.sleep(0.02)  # polling the child's end (an upper bound is RUN_LIMIT_S)
        if status is None:
            child.kill()
            _, _, usage = os.wait4(child.pid, 0)
        child.returncode = status if status is not None else -9  # reaped here: Popen must not wait again
    return status, (folder / "stderr.txt").read_text(errors="replace"), usage.ru_maxrss, time.monotonic() - t0


def _internal_traceback(err: str, folder) -> bool:
    """Whether `err` holds a traceback with a frame outside the case's own box file.

    A failing box's error shows the box's traceback (docs/boxes.md): its frames are
    all in the case's ``net.py``.  A frame anywhere else is snet failing.
    """
    if "Traceback (most recent call last)" not in err:
        return False
    frames = re.findall(r'File "([^"]+)", line', err)
    return not frames or any(not frame.startswith(str(folder)) for frame in frames)


@pytest.mark.slow  # a time budget of its own (SNET_FUZZ_BUDGET); CI runs it
@pytest.mark.skipif(sys.platform != "linux", reason="the memory bound uses RLIMIT_AS and wait4's ru_maxrss (Linux)")
def test_fuzzed_programs_and_records_end_cleanly(tmp_path):
    sources = sorted(p for p in CASES.iterdir() if (p / "net.snet").exists())
    assert sources, f"no conformance programs under {CASES}"
    rng = random.Random(SEED)
    started = time.monotonic()
    failures = []
    ran = 0
    while time.monotonic() - started < BUDGET_S and ran < 400:
        folder = tmp_path / f"case{ran:03d}"
        args = _case(rng, sources, folder)
        status, err, rss_kb, seconds = _run(args, folder)
        ran += 1
        problem = None
        if status is None:
            problem = f"no end within {RUN_LIMIT_S} s"
        elif status not in (0, 1, 2):
            problem = f"exit status {status}"
        elif _internal_traceback(err, folder):
            problem = "a Python traceback of snet itself"
        elif rss_kb > RSS_BOUND_KB:
            problem = f"resident memory {rss_kb // 1024} MB, past {RSS_BOUND_KB // 1024} MB"
        if problem:
            failures.append(f"seed {SEED}, case {ran - 1} ({folder}): {problem}; stderr: {err[-600:]}")
    assert ran >= 10, f"only {ran} cases ran in {BUDGET_S} s"
    assert not failures, "\n".join(failures)
