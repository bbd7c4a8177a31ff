"""Box arguments bound by name when the parameters are named after the input labels (interfaces.md §2).

Before, values were always passed by position and only their number was
checked: ``def f(b, a)`` for ``box f ((a, b) -> (d))`` silently swapped them.
"""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

import snet
from snet.core.boxes import argument_binding

SWAP = "box f ((a, b) -> (d)); net n connect f;"


def load(source, boxes, caplog):
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="snet"):
        net = snet.load(source, boxes=boxes)
    return net, [r.getMessage() for r in caplog.records]


def test_parameters_named_after_the_labels_take_them_in_any_order(run_net):
    def f(b, a):
        return {"d": a - b}

    outputs, _ = run_net(SWAP, [{"a": 10, "b": 1}, {"a": 3, "b": 5}], boxes={"f": f})
    assert outputs == [{"d": 9}, {"d": -2}]


def test_tags_and_binding_tags_bind_by_their_bare_names(run_net):
    def f(k, x, n):
        return {"d": (x, n, k)}

    outputs, _ = run_net("box f ((x, <n>, <#k>) -> (d)); net n connect f;",
                         [{"x": "a", "<n>": 1, "<#k>": 2, "kept": 0}], boxes={"f": f})
    assert outputs == [{"d": ("a", 1, 2), "kept": 0}]


def test_keyword_only_and_defaulted_parameters(run_net):
    def f(a, scale=10, *, b):
        return {"d": a * scale - b}

    outputs, _ = run_net(SWAP, [{"a": 2, "b": 1}], boxes={"f": f})
    assert outputs == [{"d": 19}]


def test_other_names_are_passed_by_position(run_net):
    def f(x, y):
        return {"d": x - y}

    outputs, _ = run_net(SWAP, [{"a": 10, "b": 1}], boxes={"f": f})
    assert outputs == [{"d": 9}]


def test_another_order_is_warned_about_with_the_box_position(caplog):
    _, warnings = load(SWAP, {"f": lambda b, a: {"d": a - b}}, caplog)
    assert warnings == [
        "<string>:1:5: warning: box 'f' has its parameters (b, a) in another order than its input labels "
        "(a, b): the values are passed by name\n  box f ((a, b) -> (d)); net n connect f;\n      ^"]


def test_names_that_match_some_labels_but_not_all_are_warned_about(caplog):
    net, warnings = load(SWAP, {"f": lambda a, x: {"d": a - x}}, caplog)
    assert warnings == [
        "<string>:1:5: warning: box 'f' has parameters named after some of its input labels (a, b) but not "
        "all: the values are passed by position (a = a, x = b); name every parameter after a label to pass "
        "them by name\n  box f ((a, b) -> (d)); net n connect f;\n      ^"]
    assert list(net.run([{"a": 10, "b": 1}], engine="reference")) == [{"d": 9}]


def test_parameters_in_label_order_or_unrelated_names_give_no_warning(caplog):
    for function in (lambda a, b: {"d": 0}, lambda x, y: {"d": 0}, lambda *values: {"d": 0}):
        _, warnings = load(SWAP, {"f": function}, caplog)
        assert warnings == []


def test_a_field_and_a_tag_of_one_name_bind_by_position():
    binding = argument_binding("f", ("n", "<n>"), lambda n, m: None)
    assert binding.positional == ("n", "<n>") and not binding.by_name


def test_a_field_and_a_tag_of_one_name_warn_when_a_parameter_sits_at_another_label():
    binding = argument_binding("f", ("x", "<x>", "y"), lambda y, x, z: None)
    assert binding.positional == ("x", "<x>", "y") and not binding.by_name
    assert binding.note == ("box 'f' has parameters named after its input labels (x, <x>, y) in other positions, "
                            "but a field and a tag share a name, so the values are passed by position "
                            "(y = x, x = <x>, z = y)")
    assert argument_binding("f", ("x", "<x>", "y"), lambda x, t, y: None).note is None
    assert argument_binding("f", ("x", "<x>"), lambda a, b: None).note is None


def test_binding_by_name_is_checked_at_load_time():
    with pytest.raises(snet.SNetBindingError, match="box 'f' cannot be called"):
        snet.load(SWAP, boxes={"f": lambda a, b, c: None})


def test_every_label_named_in_order_before_an_extra_parameter_is_no_partial_match():
    # The labels all have their parameter at their place; the extra one is the error, not a naming slip.
    assert argument_binding("f", ("a", "<b>"), lambda a, b, c: None).note is None
    assert argument_binding("f", ("a", "<b>"), lambda a, c, b: None).note is not None  # b would receive c's place


def test_binding_builds_the_call_once():
    binding = argument_binding("f", ("a", "b", "c"), lambda a, c, scale=1, b=0: None)
    assert binding.by_name
    assert binding.positional == ("a", "c")
    assert binding.keywords == (("b", "b"),)


def test_snet_check_and_snet_run_print_the_warning(tmp_path):
    (tmp_path / "n.snet").write_text("box f ((a, b) -> (d));\nnet n connect f;\n")
    (tmp_path / "n.py").write_text("def f(b, a):\n    return {'d': a - b}\n")
    expected = ("n.snet:1:5: warning: box 'f' has its parameters (b, a) in another order than its input labels "
                "(a, b): the values are passed by name")
    check = subprocess.run([sys.executable, "-m", "snet", "check", "n.snet", "--boxes", "n.py"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and expected in check.stderr.splitlines()
    run = subprocess.run([sys.executable, "-m", "snet", "run", "n.snet"], cwd=tmp_path, input='{"a": 10, "b": 1}\n',
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.replace(" ", "") == '{"d":9}\n'
    assert expected in run.stderr.splitlines()
