"""The repository's copy of the shared conformance suite: intact, current, and refreshable.

The tests read ``tests/conformance/{run,cases}`` so that a clone runs them on
its own.  ``MANIFEST`` records the SHA-256 of every copied file when
``refresh`` copies them, so a clone checks its copy against the manifest
without the shared folder.  Whether the copy is still identical to
``../shared/conformance`` can only be told where that folder is: elsewhere
that one test is skipped with its reason, and CI (which has the folder, and
sets ``SNET_REQUIRE_SHARED=1``) turns the skip into a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REFRESH = HERE / "refresh"
SHARED = HERE.parents[1].parent / "shared" / "conformance"


def refresh(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REFRESH), *args], capture_output=True, text=True, timeout=120)


def test_the_copy_holds_the_runner_and_the_cases():
    cases = [p for p in (HERE / "cases").iterdir() if (p / "case.json").is_file()]
    assert len(cases) >= 40
    assert (HERE / "run").is_file() and os.access(HERE / "run", os.X_OK)
    assert os.access(REFRESH, os.X_OK)


def test_the_copy_matches_its_manifest():
    result = refresh("--verify")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "identical to its MANIFEST" in result.stdout


def test_the_copy_is_identical_to_the_shared_suite():
    if not (SHARED / "run").is_file():
        if os.environ.get("SNET_REQUIRE_SHARED") == "1":
            pytest.fail(f"SNET_REQUIRE_SHARED=1 but the shared conformance suite is missing: {SHARED}")
        pytest.skip(f"cannot tell whether the copy is current: no shared conformance suite at {SHARED}")
    result = refresh("--check")
    assert result.returncode == 0, "the copy is stale; run tests/conformance/refresh\n" + result.stdout


def _suite(folder: Path, cases: dict[str, str]) -> Path:
    (folder / "cases").mkdir(parents=True)
    (folder / "run").write_text("#!/bin/sh\n")
    (folder / "run").chmod(0o755)
    for rel, text in cases.items():
        (folder / "cases" / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / "cases" / rel).write_text(text)
    return folder


def test_refresh_copies_prunes_and_then_checks_and_verifies(tmp_path):
    source = _suite(tmp_path / "shared", {"a/case.json": "{}", "a/net.snet": "net a connect [];"})
    target = _suite(tmp_path / "copy", {"gone/case.json": "{}", "a/net.snet": "old"})
    assert refresh("--from", str(source), "--to", str(target), "--check").returncode == 1

    result = refresh("--from", str(source), "--to", str(target))
    assert result.returncode == 0, result.stderr
    assert sorted(p.relative_to(target / "cases").as_posix() for p in (target / "cases").rglob("*")) == \
        ["a", "a/case.json", "a/net.snet"]
    assert (target / "cases" / "a" / "net.snet").read_text() == "net a connect [];"
    assert os.access(target / "run", os.X_OK)
    assert len((target / "MANIFEST").read_text().splitlines()) == 3
    assert refresh("--from", str(source), "--to", str(target), "--check").returncode == 0
    assert refresh("--to", str(target), "--verify").returncode == 0

    # A case edited in the copy instead of in the shared folder is caught by both checks.
    (target / "cases" / "a" / "net.snet").write_text("net a connect [{} -> {}];")
    verify = refresh("--to", str(target), "--verify")
    assert verify.returncode == 1 and "differs: cases/a/net.snet" in verify.stdout
    check = refresh("--from", str(source), "--to", str(target), "--check")
    assert check.returncode == 1 and "differs: cases/a/net.snet" in check.stdout


def test_refresh_without_a_source_says_so(tmp_path):
    result = refresh("--from", str(tmp_path / "nowhere"), "--to", str(tmp_path))
    assert result.returncode == 2 and "no conformance suite" in result.stderr
