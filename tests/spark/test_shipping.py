"""What executors get: the box file's folder as a zip (helper modules included), snet's package as a zip.

With ``snet.boxes=shipped`` executors load box modules from the shipped
zip even where the driver's path exists, so these tests on the local
session show what a cluster node without the box files gets; without it
(the default) they load the file itself where it exists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from snet.spark.cluster.shipping import folder_files, folder_zip, shipped_name

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


@pytest.mark.spark
def test_a_box_folder_is_zipped_once_a_session_until_its_content_changes(spark_options, tmp_path, monkeypatch):
    """Each run's split runner ships its box folders; one that the session has already got (the zip's name
    says its folder and content: ``shipped_name``) is not zipped again."""
    import snet
    import snet.spark.cluster.shipping as shipping

    zipped = []
    real = shipping.folder_zip
    monkeypatch.setattr(shipping, "folder_zip", lambda path, target: zipped.append(path) or real(path, target))
    make_folder(tmp_path / "boxes", helpers="helpers_once")
    net = snet.load(str(tmp_path / "boxes" / "net.snet"))
    records = [{"a": i, "<k>": i % 2} for i in range(4)]
    for _ in range(2):
        assert sorted(r["a"] for r in net.run(records, **spark_options())) == [0, 20, 40, 60]
    assert len(zipped) == 1
    (tmp_path / "boxes" / "tools" / "more.py").write_text("x = 1\n")  # a new name: shipped again
    assert sorted(r["a"] for r in net.run(records, **spark_options())) == [0, 20, 40, 60]
    assert len(zipped) == 2


PROBE = ("import sys\n"
         "import snet, snet.core.boxes as boxes, snet.shipped_native as shipped\n"
         "import snet.syntax.parser as p\n"
         "p._grammar_text()\n"
         "try:\n"
         "    import snet_front.runtime as front\n"
         "    front = front.__file__\n"
         "except ImportError as e:\n"
         "    front = None\n"
         "import json\n"
         "print(json.dumps({'program': type(p.parse('net n { box f((a) -> (b)); } connect f;')).__name__,\n"
         "                  'parser': p.__file__, 'boxes': boxes.__file__, 'snet': snet.__file__, 'front': front,\n"
         "                  'mode': shipped.state['mode']}))\n")


def run_from_zip(archive: str, cwd: Path) -> tuple[dict, str]:
    """PROBE in a fresh Python whose path has ``archive`` and lark, not the source tree.

    ``-S``: no site-packages, as on an executor where snet is not installed.  An editable install
    of snet (as CI makes) adds an import finder that would serve ``snet_front``'s compiled modules
    from the source tree to the zip's pure-Python ``snet``."""
    import json

    import lark

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([archive, str(Path(lark.__file__).parents[1])])
    env["SNET_NO_GRAMMAR_CACHE"] = "1"
    result = subprocess.run([sys.executable, "-S", "-c", PROBE], cwd=cwd, capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def compiled_driver() -> bool:
    from snet.shipped_native import native_suffix

    return native_suffix() is not None


@pytest.mark.skipif(not compiled_driver(), reason="the extension is not built: nothing compiled to ship")
def test_the_package_zip_runs_the_compiled_modules_from_a_folder_it_extracts_once(tmp_path):
    """The zip holds the driver's compiled modules; a Python like the driver's extracts the zip beside it and
    imports everything after snet/__init__ from there, the grammar as package data included."""
    from snet.shipped_native import package_zip

    archive = str(tmp_path / "snet.zip")
    shutil.copy(package_zip(), archive)
    for attempt in range(2):  # the second Python finds the folder the first made
        got, errors = run_from_zip(archive, tmp_path)
        extracted = [p for p in os.listdir(tmp_path) if p.startswith("snet-native-")]
        assert len(extracted) == 1 and not [p for p in os.listdir(tmp_path) if ".part-" in p], os.listdir(tmp_path)
        folder = str(tmp_path / extracted[0])
        assert got["program"] == "Program" and got["mode"] == "extracted", got
        assert got["snet"] == f"{archive}/snet/__init__.py", got
        assert got["boxes"] == os.path.join(folder, "snet", "core", "boxes" + EXTENSION_SUFFIXES[0]), got
        assert got["parser"] == os.path.join(folder, "snet", "syntax", "parser.py"), got
        assert got["front"] == os.path.join(folder, "snet_front", "runtime" + EXTENSION_SUFFIXES[0]), got
        assert errors == ""


def test_a_python_that_cannot_load_the_compiled_modules_runs_the_zips_pure_python_modules(tmp_path):
    """The zip's compiled modules renamed to another interpreter's suffix: nothing extracted, the pure-Python
    modules from the zip, one line on standard error saying so."""
    import json

    from snet.shipped_native import MANIFEST
    from snet.shipped_native import package_zip

    foreign = ".cpython-399-sparc-plan9.so"
    archive = str(tmp_path / "snet.zip")
    with zipfile.ZipFile(package_zip()) as source, zipfile.ZipFile(archive, "w") as target:
        native = []
        for member in source.namelist():
            if member == MANIFEST:
                continue
            name = member[:-len(EXTENSION_SUFFIXES[0])] + foreign if member.endswith(EXTENSION_SUFFIXES[0]) else member
            if name != member:
                native.append(name)
            target.writestr(name, source.read(member))
        if not native:  # a pure-Python driver ships none: stand in one file of the foreign suffix
            target.writestr("snet/core/boxes" + foreign, b"not loadable")
            native.append("snet/core/boxes" + foreign)
        target.writestr(MANIFEST, json.dumps({"suffix": foreign, "native": native, "digest": "f" * 64}))
    got, errors = run_from_zip(archive, tmp_path)
    assert got["program"] == "Program" and got["mode"] == "pure-python", got
    assert got["boxes"] == f"{archive}/snet/core/boxes.py" and got["parser"].startswith(archive + "/"), got
    assert got["front"] is None
    assert not [p for p in os.listdir(tmp_path) if p.startswith("snet-native-")]
    assert errors.strip().splitlines() == [
        f"snet: the shipped compiled modules are for '{foreign}', which this Python ({sys.version.split()[0]}, "
        f"'{EXTENSION_SUFFIXES[0]}') cannot load: running snet's pure-Python modules"]


def test_the_compiled_members_an_interpreter_takes_are_those_of_its_own_suffix():
    from snet.shipped_native import usable

    manifest = {"suffix": ".cpython-311-x86_64-linux-gnu.so",
                "native": ["snet/core/boxes.cpython-311-x86_64-linux-gnu.so",
                           "snet_front/core.cpython-311-x86_64-linux-gnu.so",
                           "elsewhere/x.cpython-311-x86_64-linux-gnu.so"]}
    own = [".cpython-311-x86_64-linux-gnu.so", ".abi3.so", ".so"]
    assert usable(manifest, own) == manifest["native"][:2]
    assert usable(manifest, [".cpython-312-x86_64-linux-gnu.so", ".abi3.so", ".so"]) == []
    assert usable(manifest, [".cpython-311-aarch64-linux-gnu.so", ".abi3.so", ".so"]) == []
    assert usable({"suffix": "", "native": []}, own) == []


def test_concurrent_extractions_end_in_one_folder(tmp_path):
    """Workers that extract at once each write a folder of their own and rename it; one rename wins."""
    from concurrent.futures import ThreadPoolExecutor

    from snet.shipped_native import extract

    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for i in range(200):
            z.writestr(f"snet/m{i}.py", f"x = {i}\n" * 50)
    parent = tmp_path / "out"
    parent.mkdir()
    with ThreadPoolExecutor(8) as pool:
        folders = set(pool.map(lambda _: extract(str(archive), "0123456789abcdef" * 4, str(parent)), range(8)))
    assert len(folders) == 1 and os.listdir(parent) == [os.path.basename(folders.pop())]
    assert len(os.listdir(parent / os.listdir(parent)[0] / "snet")) == 200


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
