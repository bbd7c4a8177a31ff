"""The acceptance cases, run through the command line as users run it.

Each case is one test, so a failure names the case; the suite's runner does
the judging (exit status, standard-error substrings, output records).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

# The repository's copy of the shared suite (tests/conformance/refresh keeps it current).
CONFORMANCE = Path(__file__).resolve().parent / "conformance"
RUNNER = CONFORMANCE / "run"
CASES = sorted(p.name for p in (CONFORMANCE / "cases").iterdir() if (p / "case.json").is_file())


def run_case(name: str, engine_args: str) -> subprocess.CompletedProcess:
    cmd = f"{shlex.quote(sys.executable)} -m snet run {engine_args}".strip()
    return subprocess.run([sys.executable, str(RUNNER), "--cmd", cmd, "--timeout", "120", name],
                          capture_output=True, text=True, timeout=600)


def test_cases_are_present():
    assert RUNNER.is_file(), f"conformance runner missing: {RUNNER}"
    assert len(CASES) >= 40


@pytest.mark.parametrize("name", CASES)
def test_reference_engine(name):
    result = run_case(name, "--engine reference")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"PASS {name}" in result.stdout


# The cases with index splits, their replicas in two split processes (every split, not only those with boxes).
SPLIT_CASES = [name for name in CASES if "!" in (CONFORMANCE / "cases" / name / "net.snet").read_text()]


def test_the_split_cases_are_found():
    assert {"split_det_order", "split_many_keys", "split_range", "split_sync_per_key", "fibonacci"} <= set(SPLIT_CASES)


@pytest.mark.parametrize("name", SPLIT_CASES)
def test_split_processes(name):
    result = run_case(name, "--split-processes 2 --process-splits all")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"PASS {name}" in result.stdout
