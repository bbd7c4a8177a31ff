"""What executors get: the box file's folder as a zip (helper modules included), snet's package as a zip.

With ``snet.boxes=shipped`` executors load box modules from the shipped
zip even where the driver's path exists, so these tests on the local
session show what a cluster node without the box files gets; without it
(the default) they load the file itself where it exists.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from snet.spark.shipping import folder_files, folder_zip, shipped_name

ROOT = Path(__file__).resolve().parents[2]

NET = "net shipped {\n  box f((a, <k>) -> (a, where, helper, deep));\n} connect f ! <k>;\n"
BOXES = '''
import helpers
from tools.scale import factor

def f(a, k):
    return {"a": helpers.double(a) * factor, "where": __file__, "helper": helpers.__file__,
            "deep": factor.__class__.__name__}
'''


def make_folder(folder: Path, helpers: str = "helpers") -> None:
    """A box folder; ``helpers``: the helper module's name (Python workers live on between tests and keep
    the modules they imported, so a test that must import it afresh names it differently)."""
    folder.mkdir(exist_ok=True)
    (folder / "net.snet").write_text(NET)
    (folder / "net.py").write_text(BOXES.replace("helpers", helpers))
    (folder / f"{helpers}.py").write_text("def double(x):\n    return 2 * x\n")
    (folder / "tools").mkdir()
    (folder / "tools" / "__init__.py").write_text("")
    (folder / "tools" / "scale.py").write_text("factor = 10\n")
    (folder / "data").mkdir()  # not a package: Python cannot import from it, so it is not shipped
    (folder / "data" / "notes.py").write_text("x = 1\n")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "__init__.py").write_text("")
    (folder / "tools" / "__pycache__").mkdir()
    (folder / "tools" / "__pycache__" / "scale.cpython-311.pyc").write_bytes(b"")
    (folder / "input.txt").write_text("not Python")


def test_the_folder_zip_holds_what_python_can_import(tmp_path):
    make_folder(tmp_path / "boxes")
    assert folder_files(str(tmp_path / "boxes")) == ["helpers.py", "net.py", "tools/__init__.py", "tools/scale.py"]
    target = tmp_path / "out"
    target.mkdir()
    archive = folder_zip(str(tmp_path / "boxes" / "net.py"), str(target))
    assert os.path.basename(archive) == shipped_name(str(tmp_path / "boxes" / "net.py"))
    with zipfile.ZipFile(archive) as z:
        assert sorted(z.namelist()) == ["helpers.py", "net.py", "tools/__init__.py", "tools/scale.py"]


def test_the_zip_name_changes_with_the_content(tmp_path):
    make_folder(tmp_path / "boxes")
    before = shipped_name(str(tmp_path / "boxes" / "net.py"))
    (tmp_path / "boxes" / "helpers.py").write_text("def double(x):\n    return 3 * x  # changed\n")
    assert shipped_name(str(tmp_path / "boxes" / "net.py")) != before


@pytest.mark.spark
def test_a_box_module_imports_its_sibling_modules_on_the_executors(spark_options, tmp_path):
    import snet

    make_folder(tmp_path / "boxes")
    net = snet.load(str(tmp_path / "boxes" / "net.snet"))
    out = list(net.run([{"a": i, "<k>": i % 2} for i in range(4)],
                       **spark_options(spark_conf={"snet.boxes": "shipped"})))
    assert sorted(r["a"] for r in out) == [0, 20, 40, 60]
    for record in out:
        # loaded from the shipped zip, not from the driver's folder
        assert "snetboxes_" in record["where"] and record["where"].endswith(".zip/net.py"), record
        assert "snetboxes_" in record["helper"] and record["helper"].endswith(".zip/helpers.py"), record
        assert record["deep"] == "int"


def test_the_package_zip_parses_programs_without_the_source_tree(tmp_path):
    """The grammar is package data read with importlib.resources: it loads from the zip executors get."""
    import lark

    from snet.spark.shipping import package_zip

    archive = package_zip()
    code = ("import sys\n"
            "import snet.syntax.parser as p\n"
            "assert p.__file__.startswith(sys.argv[1]), p.__file__\n"
            "p._grammar_text()\n"
            "print(type(p.parse('net n { box f((a) -> (b)); } connect f;')).__name__)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([archive, str(Path(lark.__file__).parents[1])])
    env["SNET_NO_GRAMMAR_CACHE"] = "1"
    result = subprocess.run([sys.executable, "-c", code, archive], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Program"


@pytest.mark.spark
def test_by_default_executors_load_a_box_file_that_exists_from_its_path(spark_options, tmp_path):
    """local[N] and shared file systems: ``__file__`` is the file itself, so data beside it can be read."""
    import snet

    make_folder(tmp_path / "boxes", helpers="helpers_beside")
    net = snet.load(str(tmp_path / "boxes" / "net.snet"))
    out = list(net.run([{"a": 1, "<k>": 0}], **spark_options()))
    assert out[0]["where"] == str(tmp_path / "boxes" / "net.py")
    assert out[0]["helper"] == str(tmp_path / "boxes" / "helpers_beside.py")


def test_snet_boxes_takes_auto_or_shipped(spark_options, tmp_path):
    import snet
    from snet.errors import SNetUsageError

    make_folder(tmp_path / "boxes")
    net = snet.load(str(tmp_path / "boxes" / "net.snet"))
    with pytest.raises(SNetUsageError, match="snet.boxes must be 'auto' .* or 'shipped', not 'zip'"):
        list(net.run([{"a": 1, "<k>": 0}], **spark_options(spark_conf={"snet.boxes": "zip"})))
