"""Shared helpers of the front-end tests (imported by module name)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[2]
# The repository's copy of the shared conformance cases (tests/conformance/refresh keeps it current).
CASES_DIR = ROOT / "tests" / "conformance" / "cases"
GOLDEN = HERE / "golden"


def snet_cli(*args: str, cwd: Path | str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m snet ARGS`` (with ``stdin`` as its standard input) and capture its output."""
    return subprocess.run([sys.executable, "-m", "snet", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=120)
