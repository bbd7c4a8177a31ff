"""What the distribution installs: the packages, their data files, and its metadata.

setup.py is imported as a module here (its ``setup()`` call runs only as a
script), so the test sees the very package list and data patterns the build
uses.  The source distribution is built, from a copy of the tree without
earlier build output, to check that it carries what its install compiles.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_setup():
    spec = importlib.util.spec_from_file_location("snet_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def setup_keywords() -> dict[str, ast.expr]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    (call,) = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
               and isinstance(node.func, ast.Name) and node.func.id == "setup"]
    return {kw.arg: kw.value for kw in call.keywords}


def test_only_snet_and_snet_front_are_installed_not_the_examples():
    packages = load_setup().PACKAGES
    assert {"snet", "snet.syntax", "snet.core", "snet.spark", "snet_front"} <= set(packages)
    assert {name.split(".")[0] for name in packages} == {"snet", "snet_front"}, packages
    assert (ROOT / "boxes" / "imaging.snet").is_file()  # the examples stay in the repository
    keywords = setup_keywords()
    assert ast.unparse(keywords["packages"]) == "PACKAGES"
    assert ast.unparse(keywords["package_data"]) == "PACKAGE_DATA"


def test_the_data_the_package_needs_at_run_time_and_for_type_checkers_ships():
    data = load_setup().PACKAGE_DATA
    grammars = sorted(p.name for p in (ROOT / "snet" / "syntax").glob("*.lark"))
    assert grammars and all(any(fnmatch.fnmatch(g, pat) for pat in data["snet.syntax"]) for g in grammars)
    assert "py.typed" in data["snet"] and (ROOT / "snet" / "py.typed").is_file()


def test_the_distribution_name_is_free_and_the_command_is_snet():
    setup = load_setup()
    assert setup.DISTRIBUTION == "snet-lang"  # "snet" on PyPI is another project
    keywords = setup_keywords()
    assert ast.literal_eval(keywords["entry_points"]) == {
        "console_scripts": ["snet = snet.__main__:main"],
        "pygments.lexers": ["snet = snet.syntax.pygments_lexer:SNetLexer"]}
    assert ast.literal_eval(keywords["license"]) == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_the_default_test_extra_needs_no_spark_and_all_has_everything():
    setup = load_setup()
    names = lambda reqs: {r.split("[")[0].split(">")[0].split("<")[0].split("=")[0] for r in reqs}  # noqa: E731
    assert not names(setup.TEST) & {"pyspark", "pandas", "pyarrow"}
    assert {"pytest", "hypothesis", "mypy"} <= names(setup.TEST)
    assert ast.unparse(setup_keywords()["extras_require"]).count("sorted(set(TEST + SPARK + EXAMPLES))") == 1


def test_prometheus_client_is_an_extra_not_a_base_requirement():
    setup = load_setup()
    keywords = setup_keywords()
    assert "prometheus" not in ast.unparse(keywords["install_requires"])
    assert "'metrics': METRICS" in ast.unparse(keywords["extras_require"])
    assert any(r.startswith("prometheus-client") for r in setup.METRICS)
    assert set(setup.METRICS) <= set(setup.TEST)  # so "all" has it too


# What ``pip install snet-lang-X.tar.gz`` compiles FRONT and the box caller from.
COMPILED_SOURCES = ("snet_front/*.pyx", "snet_front/*.pxi", "snet_front/*.pxd", "snet_front/includes/*.h",
                    "snet/core/*.pxd")


@pytest.mark.slow
def test_the_source_distribution_carries_every_source_of_the_compiled_modules(tmp_path):
    """Without MANIFEST.in the archive held the generated .c files, which setup.py does not read, and no .pyx:
    an install from it had no FRONT.  Built from a copy, since an earlier build's file list would be reused."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(
        ".git", "*.egg-info", "build", "dist", "__pycache__", "*.so", "*.c", ".pytest_cache", ".hypothesis",
        ".benchmarks", "spark-warehouse", "metastore_db"))
    done = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path / "dist")], cwd=tree,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (archive,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        inside = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    needed = {p.relative_to(ROOT).as_posix() for pattern in COMPILED_SOURCES for p in ROOT.glob(pattern)}
    assert {"snet_front/runtime.pyx", "snet_front/core.pxi", "snet/core/boxes.pxd"} <= needed  # patterns match
    assert sorted(needed - inside) == []


def requirement_names(reqs) -> set[str]:
    return {r.split("[")[0].split(">")[0].split("<")[0].split("=")[0] for r in reqs}


def test_box_processes_need_no_extra_and_the_tests_can_build_a_source_distribution():
    """Box processes (a core feature) send functions from ``__main__``, notebooks and closures by value with
    cloudpickle, so every install has it, not only the Spark extra's; the test extra has Cython, which
    ``setup.py sdist`` (the source-distribution test above) runs, while a build gets it from pyproject.toml."""
    base = requirement_names(ast.literal_eval(setup_keywords()["install_requires"]))
    assert "cloudpickle" in base
    assert "Cython" in requirement_names(load_setup().TEST)
