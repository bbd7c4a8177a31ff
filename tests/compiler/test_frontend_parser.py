"""The parser: every construct to its AST, precedence, lexical rules, rejections."""

from __future__ import annotations

import pytest

from snet.errors import SNetSyntaxError
from snet.syntax import ast
from snet.syntax.parser import build_lark, parse
from snet.tagexpr import Binary, Cond, Const, Ref, Unary


def L(*texts):
    return tuple(ast.Label(t) for t in texts)


def R(*texts):
    return ast.RecordType(L(*texts))


def N(name):
    return ast.NameRef(name)


def G(labels, guard=None):
    return ast.Guarded(R(*labels), guard)


def body(src: str):
    """The connect expression of a one-net program."""
    return parse(f"net n connect {src};").definitions[0].body


def texpr(src: str):
    """A tag expression, read as the value of a filter assignment."""
    f = body(f"[{{}} -> {{<v={src}>}}]")
    return f.clauses[0].outputs[0].items[0].expr


def T(name):
    return Ref(f"<{name}>")


def test_grammar_is_lalr1_without_conflicts():
    build_lark(strict=True)


# ---- definitions


def test_box_declarations_with_variants_empty_tuples_and_initialisers():
    prog = parse("""
        box split ((img, <n>, <#k>) -> (part, <i>) | (done) | ());
        box tick (() -> (<t>));
        box init ( -> (a));
    """)
    assert prog.definitions == (
        ast.BoxDecl("split", L("img", "<n>", "<#k>"), (L("part", "<i>"), L("done"), ())),
        ast.BoxDecl("tick", (), (L("<t>"),)),
        ast.BoxDecl("init", None, (L("a"),)),
    )


def test_nets_with_and_without_signature_and_braces_and_declaration_only():
    prog = parse("""
        net a connect f;
        net b ({x} -> {y}) connect f;
        net c { } connect f;
        net d ({x} -> ...) { box f ((x) -> (y)); } connect f;
        net e ({a} -> {b});
    """)
    a, b, c, d, e = prog.definitions
    assert a == ast.NetDef("a", None, None, N("f"))
    sig = ast.Signature((ast.TypeMap(ast.TypeExpr((R("x"),)), ast.TypeExpr((R("y"),))),))
    assert b == ast.NetDef("b", sig, None, N("f"))
    assert c == ast.NetDef("c", None, (), N("f"))
    assert d.signature.items[0].output is None
    assert d.definitions == (ast.BoxDecl("f", L("x"), (L("y"),)),)
    assert e.body is None and e.definitions is None and e.signature is not None


def test_nets_nest_to_any_depth():
    prog = parse("net a { net b { net c { net d connect x; } connect d; } connect c; } connect b;")
    d = prog.definitions[0].definitions[0].definitions[0].definitions[0]
    assert d.name == "d" and d.body == N("x")


def test_types_typesigs_and_signature_items():
    prog = parse("""
        type Pair = {a, b};
        typesig Step = Pair | {<n>} -> {c};
        net m (Step, {x} -> ..., Pair -> Pair | {<#k>}) connect f;
    """)
    pair, step, m = prog.definitions
    assert pair == ast.TypeDef("Pair", ast.TypeExpr((R("a", "b"),)))
    assert step.signature.items == (
        ast.TypeMap(ast.TypeExpr((ast.TypeRef("Pair"), R("<n>"))), ast.TypeExpr((R("c"),))),)
    items = m.signature.items
    assert items[0] == ast.TypesigRef("Step")
    assert items[1] == ast.TypeMap(ast.TypeExpr((R("x"),)), None)
    assert items[2] == ast.TypeMap(ast.TypeExpr((ast.TypeRef("Pair"),)),
                                   ast.TypeExpr((ast.TypeRef("Pair"), R("<#k>"))))


def test_metadata_blocks_where_definitions_start():
    prog = parse("""<metadata>
        <!-- a comment -->
        <boxdefault><interface value="C4SNet"/></boxdefault>
        <box name='f'><note>a &lt; b &amp; c</note><flag/></box>
    </metadata>
    net n { <metadata><default><x value="1"/></default></metadata> } connect f;""")
    meta = prog.definitions[0]
    assert meta.elements[0] == ast.MetaElement("boxdefault", (), "", (ast.MetaElement("interface", (("value", "C4SNet"),)),))
    box = meta.elements[1]
    assert box.attribute("name") == "f"
    assert box.children[0] == ast.MetaElement("note", (), "a < b & c")
    assert box.children[1] == ast.MetaElement("flag")
    inner = prog.definitions[1].definitions[0]
    assert isinstance(inner, ast.Metadata) and inner.elements[0].key == "default"


def test_metadata_is_a_tag_inside_a_record_type():
    f = body("[{<metadata>} -> {}]")
    assert f.pattern == R("<metadata>")


# ---- connect expressions


def test_filters_identity_renames_tags_and_multiple_outputs():
    assert body("[]") == ast.Identity()
    f = body("[{a, <t>} -> {b=a, <t>}; {a, <u=t*2>, <#k>, <#j=1>}; {}]")
    assert f.pattern == R("a", "<t>")
    (clause,) = f.clauses
    assert clause.guard is None
    assert clause.outputs == (
        ast.OutRecord((ast.OutItem("b", "a"), ast.OutItem("<t>", "<t>"))),
        ast.OutRecord((ast.OutItem("a", "a"), ast.OutItem("<u>", None, Binary("*", T("t"), Const(2))),
                       ast.OutItem("<#k>", "<#k>"), ast.OutItem("<#j>", None, Const(1)))),
        ast.OutRecord(()),
    )


def test_filter_guards_else_if_chains_and_empty_outputs():
    f = body("[{<n>} -> if <n < 0> then {<s=0-1>} else if <n == 0> then else {<h=n/2>}; {<n>}]")
    assert [c.guard for c in f.clauses] == [
        Binary("<", T("n"), Const(0)), Binary("==", T("n"), Const(0)), None]
    assert f.clauses[1].outputs == ()
    assert len(f.clauses[2].outputs) == 2
    assert body("[{<k>} -> ]").clauses == (ast.FilterClause(None, ()),)


def test_sync_cells_with_guarded_patterns():
    s = body("[| {a}, {b, <t>} if <t >= 4>, {<#k>} |]")
    assert s == ast.SyncCell((G(["a"]), G(["b", "<t>"], Binary(">=", T("t"), Const(4))), G(["<#k>"])))


def test_star_exit_patterns_guard_belongs_to_the_pattern_before_it():
    s = body("A * {<n>} if <n == 0>, {done}")
    assert s == ast.Star(N("A"), (G(["<n>"], Binary("==", T("n"), Const(0))), G(["done"])))
    assert body("A ** {x}") == ast.Star(N("A"), (G(["x"]),), deterministic=True)


def test_every_split_form_and_the_range_split():
    assert body("A ! <t>") == ast.Split(N("A"), ast.Label("<t>"))
    assert body("A !! <#t>") == ast.Split(N("A"), ast.Label("<#t>"), deterministic=True)
    assert body("A !@ <t>") == ast.Split(N("A"), ast.Label("<t>"), placed=True)
    assert body("A !!@ <t>") == ast.Split(N("A"), ast.Label("<t>"), deterministic=True, placed=True)
    assert body("A ! <lo> : <hi>") == ast.Split(N("A"), ast.Label("<lo>"), ast.Label("<hi>"))


def test_feedback_and_placement():
    assert body("A \\ {x} if <#b>, {y}") == ast.Feedback(N("A"), (G(["x"], Ref("<#b>")), G(["y"])))
    assert body("A @ 3") == ast.Placement(N("A"), 3)
    assert body("(A .. B) @ 0x10") == ast.Placement(ast.Serial((N("A"), N("B"))), 16)


# ---- combinator precedence (§3.3)


@pytest.mark.parametrize("src,expected", [
    ("A .. B | C .. D",
     ast.Parallel((ast.Serial((N("A"), N("B"))), ast.Serial((N("C"), N("D")))))),
    ("A | B || C", ast.Parallel((N("A"), ast.Parallel((N("B"), N("C")), True)))),
    ("A .. B * {x}", ast.Serial((N("A"), ast.Star(N("B"), (G(["x"]),))))),
    ("A * {x} \\ {y}", ast.Feedback(ast.Star(N("A"), (G(["x"]),)), (G(["y"]),))),
    ("A | B @ 1", ast.Parallel((N("A"), ast.Placement(N("B"), 1)))),
    ("A | B | C", ast.Parallel((N("A"), N("B"), N("C")))),
    ("(A | B) | C", ast.Parallel((ast.Parallel((N("A"), N("B"))), N("C")))),
    ("A .. B .. C", ast.Serial((N("A"), N("B"), N("C")))),
    ("A || B || C .. D", ast.Parallel((N("A"), N("B"), ast.Serial((N("C"), N("D")))), True)),
    ("A ! <k> * {x} @ 2", ast.Placement(ast.Star(ast.Split(N("A"), ast.Label("<k>")), (G(["x"]),)), 2)),
    ("[] | count * {<done>} .. explode",
     ast.Parallel((ast.Identity(), ast.Serial((ast.Star(N("count"), (G(["<done>"]),)), N("explode")))))),
])
def test_combinator_precedence_table(src, expected):
    assert body(src) == expected


# ---- tag expressions (§3.4)


@pytest.mark.parametrize("src,expected", [
    ("a + b * c", Binary("+", T("a"), Binary("*", T("b"), T("c")))),
    ("a - b - c", Binary("-", Binary("-", T("a"), T("b")), T("c"))),
    ("a * b min c", Binary("*", T("a"), Binary("min", T("b"), T("c")))),
    ("-a max b", Binary("max", Unary("-", T("a")), T("b"))),
    ("abs (a - b)", Unary("abs", Binary("-", T("a"), T("b")))),
    ("!a && b || c", Binary("||", Binary("&&", Unary("!", T("a")), T("b")), T("c"))),
    ("a == b < c", Binary("==", T("a"), Binary("<", T("b"), T("c")))),
    ("a < b + 1 != 0", Binary("!=", Binary("<", T("a"), Binary("+", T("b"), Const(1))), Const(0))),
    ("a ? b : c ? d : e", Cond(T("a"), T("b"), Cond(T("c"), T("d"), T("e")))),
    ("a || b ? 1 : 2", Cond(Binary("||", T("a"), T("b")), Const(1), Const(2))),
    ("(a > b) && c", Binary("&&", Binary(">", T("a"), T("b")), T("c"))),
    ("n >= 4", Binary(">=", T("n"), Const(4))),
    ("n<=1", Binary("<=", T("n"), Const(1))),
    ("#b % 2", Binary("%", Ref("<#b>"), Const(2))),
    ("(a ? b > c : d)", Cond(T("a"), Binary(">", T("b"), T("c")), T("d"))),
    ("0x1F + 017 + 0 + 10", Binary("+", Binary("+", Binary("+", Const(31), Const(15)), Const(0)), Const(10))),
    ("T + F", Binary("+", T("T"), T("F"))),
    ("a /* a comment */ + 1", Binary("+", T("a"), Const(1))),
])
def test_tag_expression_precedence(src, expected):
    assert texpr(src) == expected


def test_greater_than_compares_when_an_operand_follows_and_closes_otherwise():
    guard = Binary(">", T("a"), T("b"))
    assert body("[{<a>} -> if <(a > b)> then {} else {}]").clauses[0].guard == guard
    assert body("[{<a>} -> if <a > b> then {} else {}]").clauses[0].guard == guard
    assert body("[{<a>} -> if <a>b> then {} else {}]").clauses[0].guard == guard
    assert body("[{<N>} -> if <N > 0> then {} else {}]").clauses[0].guard == Binary(">", T("N"), Const(0))
    assert body("[{<N>} -> if <N>0> then {} else {}]").clauses[0].guard == Binary(">", T("N"), Const(0))
    assert body("[{<a>} -> if <a > /* c */ -b> then {} else {}]").clauses[0].guard == \
        Binary(">", T("a"), Unary("-", T("b")))
    assert body("[{<a>} -> if <a > abs #b> then {} else {}]").clauses[0].guard == \
        Binary(">", T("a"), Unary("abs", Ref("<#b>")))
    assert body("[{<a>} -> if <a > (b)> then {} else {}]").clauses[0].guard == guard
    assert body("[{<a>} -> {<c = a > b>, <d = a>}]").clauses[0].outputs[0].items[0].expr == guard
    # Comparison binds tighter than ==, as any relational operator.
    assert body("[{<a>} -> if <a > b == 1> then {} else {}]").clauses[0].guard == \
        Binary("==", guard, Const(1))


def test_greater_than_before_a_token_that_begins_no_operand_closes_the_bracket():
    # '!' followed by '<' is a split, not a negation: the guard ends at the first '>'.
    split = body("[] * {<n>} if <n == 0> ! <k>")
    assert isinstance(split, ast.Split) and split.operand.patterns[0].guard == Binary("==", T("n"), Const(0))
    # Labels and tag references are brackets of their own, never tag expressions.
    assert body("[{<a>} -> {<a>, b}]").clauses[0].outputs[0].items[0].label == "<a>"
    with pytest.raises(SNetSyntaxError, match=r"unexpected 'then' \(expected .*'>'"):
        body("[{<a>} -> if <a > b then {} else {}]")


def test_longest_token_double_bang_is_not_double_negation():
    with pytest.raises(SNetSyntaxError, match=r"unexpected '!!'"):
        texpr("!!a")
    assert texpr("! !a") == Unary("!", Unary("!", T("a")))


# ---- lexical rules (§2)


def test_comments_and_directive_lines_are_ignored():
    prog = parse("//! snet core\n/* block\n over lines */ net n // trailing\n connect f; // end")
    assert prog.definitions == (ast.NetDef("n", None, None, N("f")),)


@pytest.mark.parametrize("src,message,position", [
    ("net n connect f;\n  /* never closed", "unterminated comment", (2, 3)),
    ("net n connect [{} -> {<t=09>}];", "invalid octal literal '09'", (1, 26)),
    ("net n connect [{} -> {<t=1 /* open>}];", "unterminated comment", (1, 28)),
    ("net n connect f ~ g;", "unexpected character '~'", (1, 17)),
])
def test_lexical_errors_are_positioned(src, message, position):
    with pytest.raises(SNetSyntaxError) as info:
        parse(src, "x.snet")
    (d,) = info.value.diagnostics
    assert d.message == message
    assert (d.span.line, d.span.column) == position


def test_reserved_words_are_not_names():
    for word in "net box connect type typesig if then else abs min max".split():
        with pytest.raises(SNetSyntaxError):
            parse(f"net {word} connect f;")


@pytest.mark.parametrize("src", [
    "net n connect p::x;",                       # package-qualified name
    "net n connect [(a) -> (b)];",               # translation filter
    "net n connect || A B C;",                   # prefix parallel
    "box f g ((a) -> (b));",                     # a box with two names
    "box f ((a) -> (b)) { <<< code >>> };",      # inline box code
    "net n connect [{=a} -> {a}];",              # record qualifier
    "net n !(a) connect f;",                     # net n !(...)
    "net n connect <{a}> A | <{b}> B;",          # typed branch list
    "net n connect A ** ({a});",                 # parenthesised pattern
    "net n connect A ! <t> : ;",                 # incomplete range
    "net n connect [| {a} |];",                  # a synchro-cell needs two patterns
    "net n connect [{a} -> if <a> then {a}];",   # the last action must be unguarded
    "net n ({a} -> ... | {b}) connect f;",       # ... only as a whole output side
])
def test_constructs_outside_the_language_are_syntax_errors(src):
    with pytest.raises(SNetSyntaxError):
        parse(src)


def test_syntax_error_message_names_the_token_and_what_was_expected():
    with pytest.raises(SNetSyntaxError) as info:
        parse("net n {\n  box f ((a) -> (b));\n} connect f .. | g;\n", "net.snet")
    text = str(info.value)
    assert text.startswith("net.snet:3:16: error: unexpected '|' (expected name, '(', '[', '[|')")
    assert text.endswith("  } connect f .. | g;\n                 ^")


def test_spans_point_at_names_operators_and_brackets():
    prog = parse("net n connect f .. g | [{a} -> {b=a}];", "x.snet")
    par = prog.definitions[0].body
    assert (par.span.line, par.span.column) == (1, 22)
    serial = par.branches[0]
    assert serial.span.column == 17 and serial.stages[1].span.column == 20
    assert par.branches[1].span.column == 24
    assert prog.definitions[0].span.column == 5
