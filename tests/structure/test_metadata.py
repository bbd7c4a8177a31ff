"""The distribution's metadata: who wrote it and which Pythons it is for, in valid classifiers."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_setup():
    spec = importlib.util.spec_from_file_location("snet_setup_metadata", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def setup_keyword(name: str):
    tree = ast.parse((ROOT / "setup.py").read_text())
    (call,) = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
               and isinstance(node.func, ast.Name) and node.func.id == "setup"]
    values = {kw.arg: kw.value for kw in call.keywords}
    return ast.literal_eval(values[name]) if name in values else None


def test_the_author_is_the_one_the_licence_names():
    author = setup_keyword("author")
    assert author == "The snet authors"
    assert f"Copyright (c) 2026 {author}" in (ROOT / "LICENSE").read_text()


def test_the_classifiers_name_every_supported_python_and_the_free_threaded_build():
    classifiers = load_setup().CLASSIFIERS
    for version in ("3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {version}" in classifiers
    assert any(c.startswith("Programming Language :: Python :: Free Threading :: ") for c in classifiers)
    assert len(set(classifiers)) == len(classifiers)


def test_every_classifier_is_a_known_one():
    trove = pytest.importorskip("trove_classifiers", reason="the trove-classifiers package is not installed")
    unknown = [c for c in load_setup().CLASSIFIERS if c not in trove.classifiers]
    assert not unknown
