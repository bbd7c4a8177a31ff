"""Shared helpers of the front-end tests (imported by module name)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[2]
# CI checks the repository out with the shared specification folder beside it.
SHARED = ROOT / ".." / "shared"
GOLDEN = HERE / "golden"


def snet_cli(*args: str, cwd: Path | str | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m snet ARGS`` and capture its output."""
    return subprocess.run([sys.executable, "-m", "snet", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)
