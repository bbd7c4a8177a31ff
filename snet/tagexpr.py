"""Tag expressions: their tree, their meaning, and their translation to Python.

The same frozen nodes serve the AST (the parser builds them) and the static
property graph (engines evaluate them), so nothing has to be converted
between the two.

Meaning (language.md §8): values are unbounded Python ints; ``/`` truncates
toward zero and ``%`` takes the sign of the dividend, as in C; comparisons and
the logical operators yield 1 or 0; ``&&``, ``||`` and ``?:`` evaluate left to
right and skip what they do not need; reading an absent tag is an error.

Engines do not walk the tree per record: :func:`to_python` turns an expression
into Python source over a record ``r``, and the filter and pattern compilers
put that source into one generated function per construct.  Reading an
absent label then surfaces as ``KeyError(label)``, which the caller turns
into a positioned run-time error naming the label and the construct.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Union

from snet.source import Span

UNARY_OPS = ("-", "!", "abs")
BINARY_OPS = ("||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "min", "max")


@dataclass(frozen=True, slots=True)
class Const:
    value: int
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Ref:
    """Reads a tag (``"<t>"``) or binding tag (``"<#b>"``); the label is spelled."""

    label: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    operand: "Expr"
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    left: "Expr"
    right: "Expr"
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Cond:
    test: "Expr"
    then: "Expr"
    otherwise: "Expr"
    span: Span | None = field(default=None, compare=False, repr=False)


Expr = Union[Const, Ref, Unary, Binary, Cond]


#: The most bits a tag value computed by an expression may have: about 4,200
#: decimal digits, within the 4,300 that a record file can write
#: (``sys.get_int_max_str_digits()``).  A product is the one operation that
#: grows a value fast (each squaring doubles it); past the bound it is an
#: error at once, not a multiplication of ever larger numbers that holds the
#: interpreter for seconds and then cannot be written.
MAX_TAG_BITS = 14_000


class TagExpressionError(ArithmeticError):
    """Raised by generated code; carries the span of the offending operator."""

    def __init__(self, message: str, span: Span | None):
        super().__init__(message)
        self.span = span


class DivisionByZero(TagExpressionError):
    """``/`` or ``%`` by zero."""

    def __init__(self, span: Span | None):
        super().__init__("division by zero", span)


class TagTooLarge(TagExpressionError):
    """A product of more than :data:`MAX_TAG_BITS` bits."""

    def __init__(self, span: Span | None):
        super().__init__(f"a tag value of more than {MAX_TAG_BITS:,} bits (about 4,200 digits), "
                         f"more than a record holds", span)


def c_mul(a: int, b: int, span: Span | None = None) -> int:
    """``a * b``, or TagTooLarge when the product passes :data:`MAX_TAG_BITS`.

    The factors are tag values, within the bound themselves (or read from a
    record file, within its digits), so the product is cheap to make.
    """
    product = a * b
    if product.bit_length() > MAX_TAG_BITS:
        raise TagTooLarge(span)
    return product


def too_large(span: Span | None) -> int:
    """Raise TagTooLarge (for generated code, which cannot ``raise`` in an expression)."""
    raise TagTooLarge(span)


def c_div(a: int, b: int, span: Span | None = None) -> int:
    """Integer division truncating toward zero, as C does."""
    if b == 0:
        raise DivisionByZero(span)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a: int, b: int, span: Span | None = None) -> int:
    """Remainder with the sign of the dividend, so a == c_div(a,b)*b + c_mod(a,b)."""
    if b == 0:
        raise DivisionByZero(span)
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def reads(expr: Expr) -> frozenset[str]:
    """Every label the expression may read."""
    if type(expr) is Ref:
        return frozenset((expr.label,))
    found = set()
    stack = [expr]  # one walk that collects, where unions at every node would build a set each
    while stack:
        e = stack.pop()
        if isinstance(e, Ref):
            found.add(e.label)
        elif isinstance(e, Binary):
            stack.append(e.right)
            stack.append(e.left)
        elif isinstance(e, Unary):
            stack.append(e.operand)
        elif isinstance(e, Cond):
            stack.extend((e.otherwise, e.then, e.test))
    return frozenset(found)


def evaluate(expr: Expr, record: Mapping[str, Any]) -> int:
    """Evaluate by walking the tree: the executable definition of the semantics.

    Raises:
        KeyError: with the label, when an absent tag is read.
        DivisionByZero: on ``/`` or ``%`` by zero.
        TagTooLarge: on a product of more than MAX_TAG_BITS bits.
    """
    if isinstance(expr, Const):
        return expr.value
    if isinstance(expr, Ref):
        return record[expr.label]
    if isinstance(expr, Unary):
        v = evaluate(expr.operand, record)
        if expr.op == "-":
            return -v
        if expr.op == "!":
            return 0 if v else 1
        return abs(v)
    if isinstance(expr, Cond):
        return evaluate(expr.then if evaluate(expr.test, record) else expr.otherwise, record)
    op = expr.op
    if op == "&&":
        return 1 if evaluate(expr.left, record) and evaluate(expr.right, record) else 0
    if op == "||":
        return 1 if evaluate(expr.left, record) or evaluate(expr.right, record) else 0
    a = evaluate(expr.left, record)
    b = evaluate(expr.right, record)
    return _BINARY[op](a, b, expr.span)


_BINARY = {
    "==": lambda a, b, s: 1 if a == b else 0,
    "!=": lambda a, b, s: 1 if a != b else 0,
    "<": lambda a, b, s: 1 if a < b else 0,
    "<=": lambda a, b, s: 1 if a <= b else 0,
    ">": lambda a, b, s: 1 if a > b else 0,
    ">=": lambda a, b, s: 1 if a >= b else 0,
    "+": lambda a, b, s: a + b,
    "-": lambda a, b, s: a - b,
    "*": c_mul,
    "/": c_div,
    "%": c_mod,
    "min": lambda a, b, s: min(a, b),
    "max": lambda a, b, s: max(a, b),
}

_PY_COMPARE = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def to_python(expr: Expr, spans: list[Span | None], record: str = "r") -> str:
    """Python source computing `expr` over the record variable `record`.

    Args:
        expr: the expression.
        spans: receives the spans that the generated code refers to as
            ``_S[i]`` (for division-by-zero messages); pass the same list for
            every expression of one generated function.
        record: the name of the record variable in the generated code.

    Returns:
        A Python expression; it needs ``_c_div``, ``_c_mod``, ``_too_large`` and ``_S`` in scope.
        Division and remainder by a positive constant are written out in
        place (with an assignment expression naming the dividend ``_tN``).
    """
    temps = [0]

    def go(e: Expr) -> str:
        if isinstance(e, Const):
            return repr(e.value)
        if isinstance(e, Ref):
            return f"{record}[{e.label!r}]"
        if isinstance(e, Unary):
            inner = go(e.operand)
            if e.op == "-":
                return f"(-{inner})"
            if e.op == "!":
                return f"(0 if {inner} else 1)"
            return f"abs({inner})"
        if isinstance(e, Cond):
            return f"({go(e.then)} if {go(e.test)} else {go(e.otherwise)})"
        op = e.op
        left, right = go(e.left), go(e.right)
        if op == "&&":
            return f"(1 if ({left} and {right}) else 0)"
        if op == "||":
            return f"(1 if ({left} or {right}) else 0)"
        if op in _PY_COMPARE:
            return f"(1 if {left} {_PY_COMPARE[op]} {right} else 0)"
        if op in ("+", "-"):
            return f"({left} {op} {right})"
        if op == "*":  # the product, checked against MAX_TAG_BITS without a call
            spans.append(e.span)
            t = f"_t{temps[0]}"
            temps[0] += 1
            return f"({t} if ({t} := {left} * {right}).bit_length() <= {MAX_TAG_BITS} else _too_large(_S[{len(spans) - 1}]))"
        if op in ("/", "%") and type(e.right) is Const and e.right.value > 0:
            # C's truncating division and remainder by a constant divisor, without a call:
            # Python's // and % agree with C for a dividend >= 0; a negative one is negated around them.
            t = f"_t{temps[0]}"
            temps[0] += 1
            py = "//" if op == "/" else "%"
            return f"({t} {py} {right} if ({t} := {left}) >= 0 else -(-{t} {py} {right}))"
        if op in ("/", "%"):
            spans.append(e.span)
            fn = "_c_div" if op == "/" else "_c_mod"
            return f"{fn}({left}, {right}, _S[{len(spans) - 1}])"
        if op in ("min", "max"):
            return f"{op}({left}, {right})"
        raise ValueError(f"unknown operator {op!r}")

    return go(expr)


def to_python_test(expr: Expr, spans: list[Span | None], record: str = "r") -> str:
    """Like :func:`to_python`, for a guard: Python source that is true where `expr` is non-zero.

    A comparison, ``&&``, ``||`` and ``!`` are written as Python's own tests
    instead of being turned into 0 or 1 first; anything else is its value,
    which Python tests against zero.
    """
    if isinstance(expr, Binary) and expr.op in _PY_COMPARE:
        return f"({to_python(expr.left, spans, record)} {_PY_COMPARE[expr.op]} {to_python(expr.right, spans, record)})"
    if isinstance(expr, Binary) and expr.op in ("&&", "||"):
        word = "and" if expr.op == "&&" else "or"
        return f"({to_python_test(expr.left, spans, record)} {word} {to_python_test(expr.right, spans, record)})"
    if isinstance(expr, Unary) and expr.op == "!":
        return f"(not {to_python_test(expr.operand, spans, record)})"
    return to_python(expr, spans, record)


def generated_globals(spans: list[Span | None]) -> dict[str, Any]:
    """The globals a function generated from :func:`to_python` source needs."""
    return {"_c_div": c_div, "_c_mod": c_mod, "_too_large": too_large, "_S": tuple(spans), "__builtins__": {
        "abs": abs, "min": min, "max": max, "bool": bool, "KeyError": KeyError}}
