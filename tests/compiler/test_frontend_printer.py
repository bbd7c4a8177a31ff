"""The pretty-printer: printed programs parse back to an equal AST.

A hypothesis strategy builds random ASTs over every construct (definitions,
signatures, metadata, all combinators, filters with guards and empty
outputs, and tag expressions with every operator, including ``>``, which the
printer must parenthesise); each must survive print -> parse unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontend_helpers import CASES_DIR
from quickloop import examples
from snet.syntax import ast
from snet.syntax.parser import parse
from snet.syntax.printer import format_expr, format_program, format_texpr
from snet.tagexpr import BINARY_OPS, UNARY_OPS, Binary, Cond, Const, Ref, Unary

NAMES = st.sampled_from(["a", "b", "c", "f", "g", "x1", "T", "F", "_u", "netx", "iff", "long_name"])

labels = st.one_of(NAMES, NAMES.map(lambda n: f"<{n}>"), NAMES.map(lambda n: f"<#{n}>")).map(ast.Label)
tag_labels = st.one_of(NAMES.map(lambda n: f"<{n}>"), NAMES.map(lambda n: f"<#{n}>")).map(ast.Label)
record_types = st.lists(labels, max_size=3).map(lambda ls: ast.RecordType(tuple(ls)))

texprs = st.recursive(
    st.one_of(st.integers(min_value=0, max_value=2**70).map(Const),
              st.one_of(NAMES.map(lambda n: f"<{n}>"), NAMES.map(lambda n: f"<#{n}>")).map(Ref)),
    lambda inner: st.one_of(
        st.builds(Unary, st.sampled_from(UNARY_OPS), inner),
        st.builds(Binary, st.sampled_from(BINARY_OPS), inner, inner),
        st.builds(Cond, inner, inner, inner)),
    max_leaves=12)

guardeds = st.builds(ast.Guarded, record_types, st.none() | texprs)
pattern_lists = st.lists(guardeds, min_size=1, max_size=3).map(tuple)

out_items = st.one_of(
    NAMES.map(lambda n: ast.OutItem(n, n)),
    st.builds(lambda a, b: ast.OutItem(a, b), NAMES, NAMES),
    tag_labels.map(lambda l: ast.OutItem(l.text, l.text)),
    st.builds(lambda l, e: ast.OutItem(l.text, None, e), tag_labels, texprs))
out_records = st.lists(out_items, max_size=3).map(lambda items: ast.OutRecord(tuple(items)))
outputs = st.lists(out_records, max_size=3).map(tuple)
filters = st.builds(
    lambda pattern, guarded, last: ast.Filter(
        pattern, tuple(ast.FilterClause(g, o) for g, o in guarded) + (ast.FilterClause(None, last),)),
    record_types, st.lists(st.tuples(texprs, outputs), max_size=2), outputs)

primaries = st.one_of(
    NAMES.map(ast.NameRef), st.just(ast.Identity()), filters,
    st.lists(guardeds, min_size=2, max_size=3).map(lambda ps: ast.SyncCell(tuple(ps))))


def _combinators(inner):
    some = st.lists(inner, min_size=2, max_size=3).map(tuple)
    return st.one_of(
        some.map(ast.Serial),
        st.builds(ast.Parallel, some, st.booleans()),
        st.builds(ast.Star, inner, pattern_lists, st.booleans()),
        st.builds(ast.Split, inner, tag_labels, st.none() | tag_labels, st.booleans(), st.booleans()),
        st.builds(ast.Feedback, inner, pattern_lists),
        st.builds(ast.Placement, inner, st.integers(min_value=0, max_value=999)))


connect_exprs = st.recursive(primaries, _combinators, max_leaves=10)

type_exprs = st.lists(st.one_of(record_types, NAMES.map(ast.TypeRef)), min_size=1, max_size=3).map(
    lambda atoms: ast.TypeExpr(tuple(atoms)))
signatures = st.lists(
    st.one_of(NAMES.map(ast.TypesigRef), st.builds(ast.TypeMap, type_exprs, st.none() | type_exprs)),
    min_size=1, max_size=3).map(lambda items: ast.Signature(tuple(items)))

KEYS = st.sampled_from(["default", "boxdefault", "box", "x.y", "ns:key", "a-b", "_k"])
XML_TEXT = st.text(alphabet="ab <>&\"'=/", max_size=8)
meta_elements = st.recursive(
    st.builds(lambda k, attrs, text: ast.MetaElement(k, tuple(attrs), text.strip()),
              KEYS, st.lists(st.tuples(KEYS, XML_TEXT), max_size=2), XML_TEXT),
    lambda inner: st.builds(lambda k, attrs, children: ast.MetaElement(k, tuple(attrs), "", tuple(children)),
                            KEYS, st.lists(st.tuples(KEYS, XML_TEXT), max_size=2),
                            st.lists(inner, min_size=1, max_size=2)),
    max_leaves=4)
metadata = st.lists(meta_elements, max_size=3).map(lambda es: ast.Metadata(tuple(es)))

box_decls = st.builds(
    ast.BoxDecl, NAMES, st.none() | st.lists(labels, max_size=3).map(tuple),
    st.lists(st.lists(labels, max_size=3).map(tuple), min_size=1, max_size=3).map(tuple))


def _nets(definitions):
    full = st.builds(ast.NetDef, NAMES, st.none() | signatures,
                     st.none() | st.lists(definitions, max_size=3).map(tuple), connect_exprs)
    declared = st.builds(lambda n, s: ast.NetDef(n, s, None, None), NAMES, signatures)
    return st.one_of(full, declared)


definitions = st.recursive(
    st.one_of(box_decls, metadata, st.builds(ast.TypeDef, NAMES, type_exprs),
              st.builds(ast.TypesigDef, NAMES, signatures)),
    _nets, max_leaves=6)
programs = st.lists(definitions, max_size=4).map(lambda ds: ast.Program(tuple(ds)))


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_printed_programs_parse_back_to_the_same_ast(program):
    text = format_program(program)
    assert parse(text) == program, text


@settings(max_examples=examples(500), deadline=None)
@given(texprs)
def test_printed_tag_expressions_parse_back_inside_brackets(expr):
    text = f"net n connect [{{}} -> if <{format_texpr(expr)}> then {{<v={format_texpr(expr)}>}} else ];"
    f = parse(text).definitions[0].body
    assert f.clauses[0].guard == expr
    assert f.clauses[0].outputs[0].items[0].expr == expr


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None)
@given(connect_exprs)
def test_printed_connect_expressions_keep_their_shape(expr):
    assert parse(f"net n connect {format_expr(expr)};").definitions[0].body == expr


def test_greater_than_is_always_parenthesised():
    e = Binary("&&", Binary(">", Ref("<a>"), Ref("<b>")), Ref("<c>"))
    assert format_texpr(e) == "(a > b) && c"
    assert format_texpr(Unary("!", Unary("!", Ref("<a>")))) == "! !a"


def test_every_shared_example_round_trips():
    for path in sorted(CASES_DIR.glob("*/net.snet")):
        if path.parent.name == "err_syntax":
            continue
        program = parse(path.read_text())
        assert parse(format_program(program)) == program, path
