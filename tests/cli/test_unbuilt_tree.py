"""`snet run` from a tree whose compiled parts were never built: one line that says how to build them.

A clone before ``pip install -e .`` has the Python package but not the FRONT
runtime (``snet_front/runtime*.so``), which is the default engine.  The test
copies the package tree without its compiled files and runs the copy with
``python -S``: no ``.pth`` file is read, so an editable install of the same
project elsewhere cannot lend the copy its compiled runtime.  The libraries
snet needs are put on the path one by one.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NET = "box f ((x) -> (y)); net n connect f;"
BOXES = "def f(x):\n    return {'y': x + 1}\n"


def copy_of_the_tree(into: Path, keep_runtime: bool = False) -> Path:
    """``snet`` and ``snet_front`` copied into ``into``, without compiled modules (but for FRONT's runtime
    with ``keep_runtime``: a runtime built against another box caller than the copy's)."""
    def skipped(folder: str, names: list[str]) -> set[str]:
        compiled = {n for n in names if n.endswith((".so", ".c", ".html")) or n == "__pycache__"}
        if keep_runtime and Path(folder).name == "snet_front":
            compiled = {n for n in compiled if not n.startswith("runtime.") or not n.endswith(".so")}
        return compiled

    for package in ("snet", "snet_front"):
        shutil.copytree(ROOT / package, into / package, ignore=skipped)
    return into


def run_copy(tree: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    libraries = {str(Path(importlib.import_module(name).__file__).resolve().parents[1])
                 for name in ("lark", "attrs", "tqdm", "cloudpickle")}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), *sorted(libraries)])}
    return subprocess.run([sys.executable, "-S", "-m", "snet", "run", *args], cwd=cwd, env=env, input='{"x": 1}\n',
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_an_unbuilt_tree_says_in_one_line_how_to_build_it(tmp_path):
    tree = copy_of_the_tree(tmp_path / "clone")
    (tmp_path / "n.snet").write_text(NET)
    (tmp_path / "n.py").write_text(BOXES)
    done = run_copy(tree, tmp_path, "n.snet", "-o", "out.jsonl")
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"error: the FRONT engine is not built in {tree}: run 'python3 -m pip install -e .' "
                           "there, or 'python3 setup.py build_ext --inplace' (or run with --engine reference)\n")
    assert not (tmp_path / "out.jsonl").exists()  # the run never started: no output file is made
    reference = run_copy(tree, tmp_path, "n.snet", "--engine", "reference")
    assert (reference.returncode, reference.stdout) == (0, '{"y":2}\n'), reference.stderr


def test_a_runtime_built_from_other_sources_says_to_rebuild_it(tmp_path):
    """FRONT's runtime from a build whose box caller (``snet/core/boxes``, compiled too) is not the copy's:
    the copy has none, so the runtime's imported type has another size."""
    if not list((ROOT / "snet_front").glob("runtime*.so")) or not list((ROOT / "snet" / "core").glob("boxes*.so")):
        pytest.skip("needs the compiled runtime and box caller of this tree (python3 setup.py build_ext --inplace)")
    tree = copy_of_the_tree(tmp_path / "clone", keep_runtime=True)
    (tmp_path / "n.snet").write_text(NET)
    (tmp_path / "n.py").write_text(BOXES)
    done = run_copy(tree, tmp_path, "n.snet")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: the FRONT engine was built from other sources than snet's (rebuild it) in {tree}: run 'python3 -m "
        "pip install -e .' there, or 'python3 setup.py build_ext --inplace' (or run with --engine reference)"]
