"""What the distribution installs: the packages, their data files, and its metadata.

setup.py is imported as a module here (its ``setup()`` call runs only as a
script), so the test sees the very package list and data patterns the build
uses.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
from pathlib import Path

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
    assert ast.literal_eval(keywords["entry_points"]) == {"console_scripts": ["snet = snet.__main__:main"]}
    assert ast.literal_eval(keywords["license"]) == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_the_default_test_extra_needs_no_spark_and_all_has_everything():
    setup = load_setup()
    names = lambda reqs: {r.split("[")[0].split(">")[0].split("<")[0].split("=")[0] for r in reqs}  # noqa: E731
    assert not names(setup.TEST) & {"pyspark", "pandas", "pyarrow", "cloudpickle"}
    assert {"pytest", "hypothesis", "mypy"} <= names(setup.TEST)
    assert ast.unparse(setup_keywords()["extras_require"]).count("sorted(set(TEST + SPARK + EXAMPLES))") == 1
