"""What `snet check` and `snet run` import: only what the run uses.

A command's start-up is mostly imports, paid on every invocation.  The
modules of features a run does not ask for stay unimported: Spark (no Spark
source or master), the metrics server's HTTP modules (no ``--metrics-port``)
and asyncio (no ``async def`` box).  Each command runs in a fresh
interpreter that writes, as it exits, the names of every module it imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# runs snet's command line, then writes sys.modules to the file named by the first argument
PROGRAM = ("import atexit, sys\n"
           "out = sys.argv.pop(1)\n"
           "def written():\n"
           "    with open(out, 'w') as f:\n"
           "        f.write('\\n'.join(sorted(sys.modules)))\n"
           "atexit.register(written)\n"
           "from snet.cli import main\n"
           "sys.exit(main())\n")

UNUSED = ("pyspark", "snet.spark", "snet.metrics", "wsgiref", "http.server", "asyncio")


@pytest.fixture
def netdir(tmp_path: Path) -> Path:
    (tmp_path / "net.snet").write_text("net single {\n  box dec ((a) -> (a));\n} connect dec;\n")
    (tmp_path / "net.py").write_text("def dec(a):\n    return {'a': a - 1}\n")
    (tmp_path / "in.jsonl").write_text('{"a": 1}\n{"a": 2}\n')
    return tmp_path


def imported(netdir: Path, *args: str) -> set[str]:
    listing = netdir / "modules.txt"
    result = subprocess.run([sys.executable, "-c", PROGRAM, str(listing), *args], cwd=netdir, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return set(listing.read_text().split())


def unused(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == u or m.startswith(u + ".") for u in UNUSED))


@pytest.mark.parametrize("args", [
    ("check", "net.snet"),
    ("run", "net.snet", "-i", "in.jsonl"),
    ("run", "net.snet", "-i", "in.jsonl", "--engine", "reference"),
], ids=["check", "run-front", "run-reference"])
def test_a_plain_command_imports_no_module_of_an_unused_feature(netdir, args):
    assert unused(imported(netdir, *args)) == []


def test_an_async_box_imports_asyncio_when_it_runs(netdir):
    """The check above can see an import: a network with an ``async def`` box does import asyncio."""
    (netdir / "net.py").write_text("async def dec(a):\n    return {'a': a - 1}\n")
    assert "asyncio" in imported(netdir, "run", "net.snet", "-i", "in.jsonl")
