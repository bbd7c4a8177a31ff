"""A box that exits or raises a BaseException is a box error, on every engine; so is a box module that exits."""

from __future__ import annotations

import subprocess
import sys

import pytest

import snet
from snet.errors import SNetBindingError, SNetBoxError

NET = "box f ((x) -> (y)); net n connect f;"


class Custom(BaseException):
    pass


def exits(x):
    sys.exit(3)


def raises_base(x):
    raise Custom("odd")


def generator_exit(x):
    raise GeneratorExit()


@pytest.mark.parametrize("box, name", [(exits, "SystemExit"), (raises_base, "Custom"),
                                       (generator_exit, "GeneratorExit")])
def test_base_exceptions_from_a_box_are_box_errors(engine_options, box, name):
    net = snet.load(NET, boxes={"f": box})
    with pytest.raises(SNetBoxError, match=rf"box 'f' raised {name}"):
        list(net.run([{"x": 1}], **engine_options))


def test_sys_exit_in_a_box_gives_exit_status_1_and_a_message(tmp_path):
    (tmp_path / "n.snet").write_text(NET)
    (tmp_path / "n.py").write_text("import sys\n\ndef f(x):\n    if x:\n        sys.exit(3)\n    return {'y': x}\n")
    done = subprocess.run([sys.executable, "-m", "snet", "run", str(tmp_path / "n.snet")],
                          input='{"x": 0}\n{"x": 1}\n', capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "box 'f' raised SystemExit: 3" in done.stderr
    assert done.stdout.splitlines()[0].replace(" ", "") == '{"y":0}'  # the output before it is kept


def test_a_box_module_that_exits_while_imported(tmp_path):
    module = tmp_path / "bad.py"
    module.write_text("import sys\nsys.exit(4)\n")
    with pytest.raises(SNetBindingError, match="failed to import: SystemExit: 4"):
        snet.load(NET, boxes=str(module))
    (tmp_path / "n.snet").write_text(NET)
    done = subprocess.run([sys.executable, "-m", "snet", "run", str(tmp_path / "n.snet"), "--boxes", str(module)],
                          input="", capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "failed to import: SystemExit: 4" in done.stderr
