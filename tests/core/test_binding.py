"""Box binding (interfaces.md §2): where boxes come from and the load-time checks."""

from __future__ import annotations

import types

import pytest

import snet
from snet.errors import SNetBindingError

SRC = "box f ((a, b) -> (c)); box g ((a) -> (a)); net n connect f | g;"


def test_every_missing_box_is_named():
    with pytest.raises(SNetBindingError) as info:
        snet.load(SRC, boxes={})
    text = str(info.value)
    assert "declared boxes 'f', 'g' not found" in text
    assert "<string>:1:5: error: box 'f' is declared here" in text
    assert info.value.exit_status == 2


def test_arity_is_checked_at_load_time():
    with pytest.raises(SNetBindingError, match=r"box 'f' cannot be called with its 2 input label\(s\) \{a, b\}"):
        snet.load(SRC, boxes={"f": lambda a: None, "g": lambda a: None})


def test_defaults_and_varargs_are_accepted():
    net = snet.load(SRC, boxes={"f": lambda *args: {"c": sum(args)}, "g": lambda a, extra=0: {"a": a}})
    assert list(net.run([{"a": 1, "b": 2}], engine="reference")) == [{"c": 3}]


def test_not_callable_is_an_error():
    with pytest.raises(SNetBindingError, match="box 'g' is bound to a int, not a function"):
        snet.load(SRC, boxes={"f": lambda a, b: None, "g": 3})


def test_first_module_that_has_the_box_wins():
    first = types.ModuleType("first")
    first.g = lambda a: {"a": "first"}
    second = types.ModuleType("second")
    second.g = lambda a: {"a": "second"}
    second.f = lambda a, b: {"c": 0}
    net = snet.load(SRC, boxes=[first, second])
    assert list(net.run([{"a": 1}], engine="reference")) == [{"a": "first"}]


def test_default_module_beside_the_net_file(tmp_path):
    (tmp_path / "pair.snet").write_text("box twice ((a) -> (a)); net pair connect twice;")
    (tmp_path / "pair.py").write_text("def twice(a):\n    return {'a': 2 * a}\n")
    net = snet.load(tmp_path / "pair.snet")
    assert list(net.run([{"a": 4}], engine="reference")) == [{"a": 8}]


def test_module_path_and_dotted_name(tmp_path, monkeypatch):
    (tmp_path / "mybox_mod.py").write_text("def g(a):\n    return {'a': -a}\n\ndef f(a, b):\n    return {'c': a}\n")
    net = snet.load(SRC, boxes=str(tmp_path / "mybox_mod.py"))
    assert list(net.run([{"a": 4}], engine="reference")) == [{"a": -4}]
    monkeypatch.syspath_prepend(str(tmp_path))
    net = snet.load(SRC, boxes="mybox_mod")
    assert list(net.run([{"a": 5}], engine="reference")) == [{"a": -5}]


def test_box_module_that_fails_to_import(tmp_path):
    (tmp_path / "broken.py").write_text("raise RuntimeError('no import for you')\n")
    with pytest.raises(SNetBindingError, match="failed to import: RuntimeError: no import for you"):
        snet.load(SRC, boxes=str(tmp_path / "broken.py"))


def test_unknown_dotted_module():
    with pytest.raises(SNetBindingError, match="cannot find box module 'no_such_module_xyz'"):
        snet.load(SRC, boxes="no_such_module_xyz")
