"""The package type-checks, and the contracts between its layers are checked strictly.

``python3 -m mypy -p snet`` with the configuration of ``pyproject.toml``
(``[tool.mypy]``) reports nothing; CI runs the same command (``.ci/run``).
The contract modules (the plan, the engine contract, the split-executor
protocol, the run options) are checked with every flag of ``--strict``:
the configuration sets those flags for them, and the second test runs
``--strict`` itself on them, so a flag that the configuration misses, or a
later mypy adds to ``--strict``, shows here.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = ("snet/plan.py", "snet/execution.py", "snet/splitexec.py", "snet/options.py")


def _mypy(*args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the test extra: pip install -e '.[test]')")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_the_package_type_checks():
    result = _mypy("-p", "snet")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_the_contract_modules_pass_strict():
    # --follow-imports=silent: the modules they import are checked (above) with their own flags
    result = _mypy("--strict", "--follow-imports=silent", *CONTRACTS)
    assert result.returncode == 0, result.stdout + result.stderr
