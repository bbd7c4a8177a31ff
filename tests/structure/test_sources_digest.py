"""The compiled runtime carries the digest of its sources, so a stale build is never tested silently."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from snet_front.sources import PATTERNS, sources_digest

ROOT = Path(__file__).resolve().parents[2]


def test_the_runtime_carries_the_digest_of_the_sources_on_disk():
    import snet_front.runtime as runtime

    root = Path(runtime.__file__).resolve().parents[1]
    assert runtime.SOURCES_DIGEST == sources_digest(root)


def _copy_sources(to: Path) -> None:
    for pattern in PATTERNS:
        for path in ROOT.glob(pattern):
            target = to / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def test_an_edited_source_changes_the_digest(tmp_path):
    _copy_sources(tmp_path)
    before = sources_digest(tmp_path)
    assert before == sources_digest(ROOT)
    with open(tmp_path / "snet_front" / "workers.pxi", "a") as f:
        f.write("# an edit\n")
    assert sources_digest(tmp_path) != before


def test_pytest_refuses_to_run_against_a_stale_build(tmp_path):
    """A copy of the tree whose .pxi changed after the build: the session stops before any test, saying why."""
    import snet_front.runtime as runtime

    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "snet", tree / "snet", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "snet_front", tree / "snet_front", ignore=shutil.ignore_patterns("__pycache__", "*.c"))
    shutil.copyfile(runtime.__file__, tree / "snet_front" / Path(runtime.__file__).name)
    (tree / "tests").mkdir()
    shutil.copyfile(ROOT / "tests" / "conftest.py", tree / "tests" / "conftest.py")
    shutil.copyfile(ROOT / "tests" / "quickloop.py", tree / "tests" / "quickloop.py")  # conftest.py imports it
    (tree / "tests" / "test_one.py").write_text("def test_one():\n    pass\n")
    def pytest_in_tree() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=tree,
                              capture_output=True, text=True, timeout=300,
                              env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})

    fresh = pytest_in_tree()
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    with open(tree / "snet_front" / "workers.pxi", "a") as f:
        f.write("# an edit that was never built\n")
    stale = pytest_in_tree()
    assert stale.returncode == 4
    assert "were built from other sources than those there now" in stale.stdout + stale.stderr


def test_the_digest_covers_every_compiled_module_and_its_declarations():
    """Each module setup.py compiles, and the .pxd beside it, is among the digest's sources: a compiled
    part of snet.core left out would be tested stale after an edit, silently."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("snet_setup_digest", ROOT / "setup.py")
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)
    covered = {p for pattern in PATTERNS for p in ROOT.glob(pattern)}
    compiled = sorted(ROOT.glob("snet_front/*.pyx")) + [ROOT / p for p in setup.COMPILED_PY]
    assert ROOT / "snet" / "core" / "cells.py" in compiled
    for source in compiled:
        assert source in covered, source
        declarations = source.with_suffix(".pxd")
        assert declarations.exists() and declarations in covered, declarations
