"""The project's pytest configuration refuses a parametrization over nothing.

The conformance tests are parametrized over the case folders: were a folder
missing or empty, the tests would otherwise vanish from the run unnoticed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_an_empty_parameter_set_is_a_collection_error(tmp_path):
    (tmp_path / "test_nothing.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('case', [])\ndef test_case(case):\n    pass\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
                             str(tmp_path / "test_nothing.py")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0, result.stdout
    assert "Empty parameter set in 'test_case'" in result.stdout + result.stderr
