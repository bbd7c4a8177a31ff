"""Tag arithmetic (language.md §8): C division, 1/0 truth values, short circuits.

The generated Python (what engines run) is checked against the tree-walking
definition on random expressions and records.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from quickloop import examples

from snet.tagexpr import (MAX_TAG_BITS, Binary, Cond, Const, DivisionByZero, Ref, TagTooLarge, Unary, c_div,
                          c_mod, c_mul, evaluate, generated_globals, reads, to_python, to_python_test)

LABELS = ["<a>", "<b>", "<#k>"]


@pytest.mark.parametrize("a,b,q,r", [(-7, 2, -3, -1), (7, -2, -3, 1), (7, 2, 3, 1), (-7, -2, 3, -1), (0, 5, 0, 0)])
def test_c_division(a, b, q, r):
    assert c_div(a, b) == q and c_mod(a, b) == r
    assert a == c_div(a, b) * b + c_mod(a, b)


def test_division_by_zero_carries_the_span():
    with pytest.raises(DivisionByZero):
        c_div(1, 0)
    with pytest.raises(DivisionByZero):
        c_mod(1, 0)


def compiled(expr):
    spans = []
    code = to_python(expr, spans)
    scope = generated_globals(spans)
    exec(f"def _f(r):\n    return {code}", scope)
    return scope["_f"]


def test_short_circuit_skips_absent_tags():
    e = Binary("&&", Const(0), Ref("<x>"))
    assert evaluate(e, {}) == 0 and compiled(e)({}) == 0
    e = Binary("||", Const(2), Ref("<x>"))
    assert evaluate(e, {}) == 1 and compiled(e)({}) == 1
    e = Cond(Const(1), Const(5), Ref("<x>"))
    assert evaluate(e, {}) == 5 and compiled(e)({}) == 5
    with pytest.raises(KeyError):
        compiled(Binary("+", Const(1), Ref("<x>")))({})


def test_truth_values_are_one_or_zero():
    for op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
        for a, b in ((3, 5), (5, 3), (4, 4), (0, 7)):
            v = compiled(Binary(op, Const(a), Const(b)))({})
            assert v in (0, 1) and v == evaluate(Binary(op, Const(a), Const(b)), {})
    assert compiled(Unary("!", Const(9)))({}) == 0


def exprs():
    leaves = st.one_of(st.integers(-50, 50).map(Const), st.sampled_from(LABELS).map(Ref))

    def extend(children):
        return st.one_of(
            st.builds(Unary, st.sampled_from(["-", "!", "abs"]), children),
            st.builds(Binary, st.sampled_from(["||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/",
                                               "%", "min", "max"]), children, children),
            st.builds(Cond, children, children, children),
        )
    return st.recursive(leaves, extend, max_leaves=12)


def outcome(f, *args):
    try:
        return ("value", f(*args))
    except KeyError as e:
        return ("absent", e.args[0])
    except DivisionByZero:
        return ("div0", None)
    except TagTooLarge:
        return ("too large", None)


@settings(max_examples=examples(400), deadline=None)
@given(exprs(), st.dictionaries(st.sampled_from(LABELS), st.integers(-10**30, 10**30)))
def test_generated_code_agrees_with_the_definition(expr, record):
    assert outcome(compiled(expr), record) == outcome(evaluate, expr, record)
    assert reads(expr) <= set(LABELS)


def compiled_test(expr):
    spans = []
    source = f"def _g(r):\n    return bool({to_python_test(expr, spans)})"
    scope = generated_globals(spans)
    exec(source, scope)
    return scope["_g"]


@settings(max_examples=examples(400), deadline=None)
@given(exprs(), st.dictionaries(st.sampled_from(LABELS), st.integers(-10**30, 10**30)))
def test_generated_guard_test_agrees_with_the_definition(expr, record):
    """A guard's test (comparisons and logic as Python's own tests) holds exactly where the value is not 0."""
    expected = outcome(evaluate, expr, record)
    if expected[0] == "value":
        expected = ("value", expected[1] != 0)
    assert outcome(compiled_test(expr), record) == expected


@pytest.mark.parametrize("op", ["/", "%"])
@pytest.mark.parametrize("a", [-7, -6, -1, 0, 1, 6, 7, 10**30 + 1, -(10**30) - 1])
@pytest.mark.parametrize("b", [1, 2, 3, 7])
def test_division_by_a_constant_is_written_out_and_agrees(op, a, b):
    """A positive constant divisor is inlined (no call), nested too, with C's truncation."""
    spans = []
    expr = Binary(op, Binary(op, Ref("<a>"), Const(b)), Const(b))
    source = to_python(expr, spans)
    assert "_c_div" not in source and "_c_mod" not in source and spans == []
    assert compiled(expr)({"<a>": a}) == evaluate(expr, {"<a>": a})


@pytest.mark.parametrize("a,b", [(2 ** 7000, 2 ** 6999), (-(2 ** 13999), 1), (2 ** 13999, -1)])
def test_a_product_within_the_tag_bound_is_made(a, b):
    assert c_mul(a, b) == a * b
    assert outcome(compiled(Binary("*", Ref("<a>"), Ref("<b>"))), {"<a>": a, "<b>": b}) == ("value", a * b)


@pytest.mark.parametrize("a,b", [(2 ** 7000, 2 ** 7000), (-(2 ** 14000), 1), (3 ** 9000, 3 ** 9000)])
def test_a_product_past_the_tag_bound_is_an_error_in_both_forms(a, b):
    """Repeated squaring stops at the bound instead of multiplying ever larger numbers (language.md §8)."""
    assert (a * b).bit_length() > MAX_TAG_BITS
    with pytest.raises(TagTooLarge, match="more than a record holds"):
        c_mul(a, b)
    product = Binary("*", Ref("<a>"), Ref("<b>"))
    assert outcome(compiled(product), {"<a>": a, "<b>": b}) == ("too large", None)
    assert outcome(evaluate, product, {"<a>": a, "<b>": b}) == ("too large", None)
