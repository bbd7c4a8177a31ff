"""A program that embeds snet type-checks under ``mypy --strict`` with the real types.

The package ships ``py.typed``, and ``snet.load`` (loaded lazily at run time)
is visible to type checkers, so ``load`` returns a ``Network``, ``run`` an
``Execution`` that yields ``dict[str, Any]`` records, and a misuse is an error
a user sees before running anything.  mypy is part of the ``test`` extra: the
test fails, rather than skips, where it is missing.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = '''\
import snet

net = snet.load("net.snet", boxes={})
reveal_type(snet.load)
reveal_type(net)
execution = net.run([{"a": 1}], workers=2)
reveal_type(execution)
for record in execution:
    reveal_type(record)
with net.session() as session:
    reveal_type(session)
'''

MISUSE = '''\
import snet

net = snet.load("net.snet")
count: int = net.run([{"a": 1}])
net.run([{"a": 1}], workers="four")
'''


def mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    assert importlib.util.find_spec("mypy") is not None, \
        "mypy is missing: it comes with the test extra (pip install -e '.[test]')"
    (tmp_path / "prog.py").write_text(source)
    # snet is found on the interpreter's path as an installed package is: only py.typed makes mypy read it.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("MYPYPATH", None)
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-executable",
                           sys.executable, "prog.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_load_and_run_have_their_declared_types_under_strict_mypy(tmp_path):
    result = mypy(tmp_path, PROGRAM)
    assert result.returncode == 0, result.stdout + result.stderr
    revealed = re.findall(r'Revealed type is "(.*)"', result.stdout)
    assert revealed == [
        "def (source: str | os.PathLike[Any], boxes: Any =, *, net: str | None =, dialect: str =, "
        "net_path: str | os.PathLike[Any] | typing.Sequence[str | os.PathLike[Any]] =) -> snet.api.Network",
        "snet.api.Network",
        "snet.execution.Execution",
        "dict[str, Any]",
        "snet.session.Session",
    ], result.stdout


@pytest.mark.slow
def test_a_misuse_of_the_api_is_a_type_error(tmp_path):
    result = mypy(tmp_path, MISUSE)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'prog.py:4: error: Incompatible types in assignment (expression has type "Execution"' in result.stdout
    assert 'prog.py:5: error: Argument "workers" to "run" of "Network" has incompatible type "str"' in result.stdout
