"""The rts dialect (``--dialect rts``): inline Python boxes, ``type t = t;`` naming an outer ``t``,
declared-only nets bound from ``NAME.snet``, parenthesised patterns and split tags; and the
standard dialect still refusing all four."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

import snet
from frontend_helpers import snet_cli
from snet.errors import SNetCompileError, SNetSyntaxError, SNetUsageError
from snet.options import CompileOptions
from snet.spg.build import compile_analysis
from snet.syntax.parser import parse
from snet.syntax.printer import format_program

DIALECT = Path(__file__).resolve().parent / "dialect"
# What the standard dialect adds to the syntax error of each rts-only form.
INLINE_HINT = "; inline box code {<<< ... >>>} is read in the rts dialect (--dialect rts)"
NET_HINT = "; a net declared without a connect expression (net NAME;) is read in the rts dialect (--dialect rts)"
PAREN_HINT = "; a pattern list or split tag in parentheses is read in the rts dialect (--dialect rts)"


def outputs(stdout: str) -> Counter:
    return Counter(json.dumps(json.loads(line), sort_keys=True) for line in stdout.splitlines())


def first_line(error: Exception) -> str:
    return str(error).split("\n")[0]


# ---- the standard dialect: each form stays the error it was, with a word on the rts dialect

@pytest.mark.parametrize("src,message", [
    ('box f ((a) -> (b)) {<<< python | return {"b": a} >>>}\nnet n connect f;\n',
     "m.snet:1:20: error: unexpected '{' (expected ';')" + INLINE_HINT),
    ("net x;\nnet n connect x;\n", "m.snet:1:6: error: unexpected ';' (expected '(', 'connect', '{')" + NET_HINT),
    ("net x /* a */ ;\n", "m.snet:1:15: error: unexpected ';' (expected '(', 'connect', '{')" + NET_HINT),
    ("net x foo", "m.snet:1:7: error: unexpected name 'foo' (expected '(', 'connect', '{')"),
    ("box f ((a) -> (b)) g", "m.snet:1:20: error: unexpected name 'g' (expected ';')"),
])
def test_standard_dialect_rejects_the_rts_forms_as_before(src, message):
    with pytest.raises(SNetSyntaxError) as info:
        parse(src, "m.snet")
    assert first_line(info.value) == message


def test_standard_dialect_keeps_type_t_equals_t_a_cycle():
    src = "type t = {a};\nnet n { type t = t | {b}; net m (t -> t) connect []; } connect m;\n"
    with pytest.raises(SNetCompileError) as info:
        compile_analysis(src, "m.snet")
    assert [d.render().split("\n")[0] for d in info.value.diagnostics] == [
        "m.snet:2:18: error: type 't' is defined in terms of itself: t -> t; in the rts dialect (--dialect rts), "
        "'t' on the right names the outer type"]


def test_the_rts_word_on_type_t_equals_t_needs_an_outer_t():
    # No outer definition of that name, or a cycle through other names: the rts dialect would refuse it too.
    src = ("typesig s = {a} -> {b};\n"
           "net n { type t = t | {b}; type u = v; type v = u; typesig s = s, {c} -> {d}; } connect [];\n")
    with pytest.raises(SNetCompileError) as info:
        compile_analysis(src, "m.snet")
    assert [d.render().split("\n")[0] for d in info.value.diagnostics] == [
        "m.snet:2:18: error: type 't' is defined in terms of itself: t -> t",
        "m.snet:2:48: error: type 'u' is defined in terms of itself: u -> v -> u",
        "m.snet:2:63: error: typesig 's' is defined in terms of itself: s -> s; in the rts dialect (--dialect rts), "
        "'s' on the right names the outer typesig",
    ]


def test_standard_dialect_keeps_declared_only_nets_an_error(tmp_path):
    # The net files lie beside the program, where the rts dialect would find them; the standard one does not look.
    shutil.copy(DIALECT / "linked.snet", tmp_path)
    for name in ("double.snet", "double.py", "offset.snet"):
        shutil.copy(DIALECT / "lib" / name, tmp_path)
    result = snet_cli("check", "linked.snet", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == ("linked.snet:2:11: error: unexpected ';' (expected '(', 'connect', '{')"
                                             + NET_HINT)
    (tmp_path / "sig.snet").write_text("net offset ({v} -> {w});\nnet sig connect offset;\n")
    result = snet_cli("check", "sig.snet", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        "sig.snet:2:17: error: net 'offset' is declared only (it has no connect expression); "
        "the net to run uses it here")


# ---- inline Python boxes

def test_inline_python_boxes_run_from_the_command_line():
    result = snet_cli("run", "--dialect", "rts", "inline.snet", "-i", "inline.jsonl", cwd=DIALECT)
    assert (result.returncode, result.stderr) == (0, "")
    assert outputs(result.stdout) == outputs('{"small": 6}\n{"text": "big 20"}\n')


def test_inline_python_boxes_through_the_api_bind_by_name():
    src = ('box f ((<b>, a) -> (d)) {<<< python | return {"d": a - b} >>>}\n'
           "net n connect f;\n")
    net = snet.load(src, dialect="rts")
    assert list(net.run([{"a": 10, "<b>": 1}], engine="reference")) == [{"d": 9}]
    assert net.boxes["f"].__name__ == "f"
    assert list(net.run([{"a": 10, "<b>": 1}], workers=2)) == [{"d": 9}]


def test_an_inline_initialiser_has_no_parameters():
    src = ('box start (-> (x)) {<<< python | return {"x": 7} >>>}\n'
           "box inc ((x) -> (x)) {<<< python | return {\"x\": x + 1} >>>}\n"
           "net n connect (start | []) .. inc;\n")
    net = snet.load(src, dialect="rts")
    assert Counter(r["x"] for r in net.run([{"x": 1}], engine="reference")) == Counter({8: 1, 2: 1})


def test_a_syntax_error_in_inline_code_is_reported_at_its_place_in_the_snet_file():
    src = ("box f ((a) -> (b)) {<<< python |\n"
           "    x = a +\n"
           "    return {'b': x}\n"
           ">>>}\n"
           "net n connect f;\n")
    with pytest.raises(SNetSyntaxError) as info:
        parse(src, "m.snet", dialect="rts")
    assert first_line(info.value) == "m.snet:2:12: error: syntax error in the inline Python code of box 'f': " \
                                     "invalid syntax"
    one_line = 'box g ((a) -> (b)) {<<< python | return {"b": a)} >>>}\n'
    with pytest.raises(SNetSyntaxError) as info:
        parse(one_line, "m.snet", dialect="rts")
    assert first_line(info.value).startswith("m.snet:1:48: error: syntax error in the inline Python code of box 'g'")


@pytest.mark.parametrize("src,message", [
    ("box f ((a) -> (b)) {<<< python | return 1\nnet n connect f;\n",
     "m.snet:1:20: error: unterminated inline box code (no '>>>' and '}' after '<<<')"),
    ("box f ((a) -> (b)) {<<< | return 1 >>>}\n",
     "m.snet:1:25: error: inline box code needs a language name after '<<<', as in {<<< python | ... >>>}"),
    ("box f ((a) -> (b)) {<<< python return 1 >>>}\n",
     "m.snet:1:32: error: inline box code needs '|' after the language name 'python', as in "
     "{<<< python | ... >>>}"),
])
def test_malformed_inline_code_is_a_positioned_syntax_error(src, message):
    with pytest.raises(SNetSyntaxError) as info:
        parse(src, "m.snet", dialect="rts")
    assert first_line(info.value) == message


@pytest.mark.parametrize("labels,message", [
    ("(class)", "the parameter 'class' of label 'class' is a Python keyword"),
    ("(a, <a>)", "the parameter 'a' of label 'a' is given by another label too"),
])
def test_labels_that_cannot_be_parameters_are_named(labels, message):
    src = f'box f ({labels} -> (b)) {{<<< python | return {{"b": 1}} >>>}}\n'
    with pytest.raises(SNetSyntaxError) as info:
        parse(src, "m.snet", dialect="rts")
    column = 1 + src.index("|") + 1
    assert first_line(info.value) == (f"m.snet:1:{column}: error: inline Python code of box 'f': {message}; "
                                      f"write the box in a box module instead")


def test_inline_code_in_another_language_is_not_run_and_says_so():
    check = snet_cli("check", "--dialect", "rts", "foreign.snet", cwd=DIALECT)
    assert (check.returncode, check.stdout) == (0, "{A} -> {B}\n")
    assert check.stderr.splitlines()[0] == ("foreign.snet:2:24: warning: the inline C code of box 'count' is not "
                                            "run; the box is bound from the box modules")
    run = snet_cli("run", "--dialect", "rts", "foreign.snet", "-i", "foreign.jsonl", "-q", cwd=DIALECT)
    assert (run.returncode, run.stdout) == (0, '{"B":3}\n')
    strict = snet_cli("check", "--strict", "--dialect", "rts", "foreign.snet", cwd=DIALECT)
    assert strict.returncode == 2 and "foreign.snet:2:24: error: the inline C code" in strict.stderr


def test_inline_boxes_print_and_parse_back():
    src = (DIALECT / "inline.snet").read_text()
    program = parse(src, "inline.snet", dialect="rts")
    again = parse(format_program(program), "again.snet", dialect="rts")
    assert again == program
    assert again.definitions[0].inline.code == ' return {"y": x * k} '


# ---- type t = t

def test_type_t_equals_t_names_the_outer_definition():
    check = snet_cli("check", "-v", "--dialect", "rts", "shadow.snet", cwd=DIALECT)
    assert (check.returncode, check.stderr) == (0, "")
    assert check.stdout == ("shadow: {x} | {y} -> {moved, x} | {moved, y}\n"
                            "step: {x} -> {moved, x}, {y} -> {moved, y}\n")


def test_type_t_equals_t_at_the_file_scope_is_an_unknown_name():
    with pytest.raises(SNetCompileError) as info:
        compile_analysis("type t = t | {a};\nnet n connect [];\n", "m.snet", options=CompileOptions(dialect="rts"))
    assert [d.render().split("\n")[0] for d in info.value.diagnostics] == ["m.snet:1:10: error: unknown name 't'"]


def test_a_longer_cycle_through_an_outer_name_is_still_a_cycle():
    src = "type t = {a};\nnet n { type t = u; type u = t; net m (t -> t) connect []; } connect m;\n"
    with pytest.raises(SNetCompileError) as info:
        compile_analysis(src, "m.snet", options=CompileOptions(dialect="rts"))
    assert "is defined in terms of itself" in str(info.value)


# ---- declared-only nets bound from NAME.snet

def test_declared_only_nets_are_bound_from_the_net_path():
    check = snet_cli("check", "--dialect", "rts", "--net-path", "lib", "linked.snet", cwd=DIALECT)
    assert (check.returncode, check.stdout, check.stderr) == (0, "{v} -> {w}\n", "")
    run = snet_cli("run", "--dialect", "rts", "--net-path", "lib", "linked.snet", "-i", "linked.jsonl", cwd=DIALECT)
    assert (run.returncode, run.stderr) == (0, "")
    assert outputs(run.stdout) == outputs('{"w": 1002}\n{"w": 1042}\n')


def test_a_net_file_beside_the_program_needs_no_net_path(tmp_path):
    shutil.copy(DIALECT / "linked.snet", tmp_path)
    for f in (DIALECT / "lib").iterdir():
        shutil.copy(f, tmp_path)
    net = snet.load(tmp_path / "linked.snet", dialect="rts")
    assert sorted(r["w"] for r in net.run([{"v": 1}, {"v": 2}], engine="reference")) == [1002, 1004]
    assert sorted(net.boxes) == ["plus", "twice"]


def test_a_missing_net_file_says_where_it_was_looked_for(tmp_path):
    shutil.copy(DIALECT / "linked.snet", tmp_path)
    result = snet_cli("check", "--dialect", "rts", "linked.snet", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0] == (f"linked.snet:5:20: error: net 'double' is declared only (it has no connect expression); "
                        f"the net to run uses it here; no double.snet in {tmp_path.resolve()}")


def test_the_declared_signature_is_checked_against_the_bound_net(tmp_path):
    # As for a net written with both a signature and a body: the same warning, at the declaration.
    (tmp_path / "main.snet").write_text("net inc ({a} -> {z});\nnet main connect inc;\n")
    (tmp_path / "inc.snet").write_text("net inc connect [{a} -> {b = a}];\n")
    net = snet.load(tmp_path / "main.snet", dialect="rts")
    assert net.signature == "{a} -> {z}"
    assert [w.split("\n")[0] for w in net.graph.warnings] == [
        f"{tmp_path / 'main.snet'}:1:10: warning: net 'inc': declared output label 'z' is produced by nothing "
        f"in its body"]


def test_net_files_that_need_each_other_are_an_error(tmp_path):
    (tmp_path / "main.snet").write_text("net a;\nnet main connect a;\n")
    (tmp_path / "a.snet").write_text("net b;\nnet a connect b;\n")
    (tmp_path / "b.snet").write_text("net a;\nnet b connect a;\n")
    with pytest.raises(SNetCompileError) as info:
        snet.load(tmp_path / "main.snet", dialect="rts")
    assert first_line(info.value).endswith("which needs itself: a.snet -> b.snet -> a.snet")


def test_a_net_file_without_that_net_is_an_error(tmp_path):
    (tmp_path / "main.snet").write_text("net a;\nnet main connect a;\n")
    (tmp_path / "a.snet").write_text("net other connect [];\n")
    with pytest.raises(SNetCompileError) as info:
        snet.load(tmp_path / "main.snet", dialect="rts")
    assert first_line(info.value) == (f"{tmp_path / 'main.snet'}:1:5: error: net 'a' is declared only, and "
                                      f"{tmp_path / 'a.snet'} defines no top-level net 'a' with a connect "
                                      f"expression")


# ---- parenthesised patterns and split tags

@pytest.mark.parametrize("src,message", [
    ("net n connect A ** ({a});", "m.snet:1:20: error: unexpected '(' (expected '{')" + PAREN_HINT),
    ("net n connect A * ({a} if <a>, {b});", "m.snet:1:19: error: unexpected '(' (expected '{')" + PAREN_HINT),
    ("net n connect A \\ ({a});", "m.snet:1:19: error: unexpected '(' (expected '{')" + PAREN_HINT),
    ("net n connect A ! (<t>);", "m.snet:1:19: error: unexpected '(' (expected '<')" + PAREN_HINT),
    ("net n connect A !! (<t>);", "m.snet:1:20: error: unexpected '(' (expected '<')" + PAREN_HINT),
    ("net n connect A !@ (<t>);", "m.snet:1:20: error: unexpected '(' (expected '<')" + PAREN_HINT),
    ("net n connect A !!@ (<#t>);", "m.snet:1:21: error: unexpected '(' (expected '<')" + PAREN_HINT),
    ("net n connect A ! (<lo>:<hi>);", "m.snet:1:19: error: unexpected '(' (expected '<')" + PAREN_HINT),
    ("net n connect A * ({a};", "m.snet:1:19: error: unexpected '(' (expected '{')" + PAREN_HINT),
    ("net n connect A * [];", "m.snet:1:19: error: unexpected '[' (expected '{')"),
    ("net n connect A ! t;", "m.snet:1:19: error: unexpected name 't' (expected '<')"),
])
def test_standard_dialect_rejects_parenthesised_patterns_as_before(src, message):
    with pytest.raises(SNetSyntaxError) as info:
        parse(src, "m.snet")
    assert first_line(info.value) == message


@pytest.mark.parametrize("src,message", [
    ("net n connect A * (({a}));", "m.snet:1:20: error: unexpected '(' (expected '{')"),
    ("net n connect A * ();", "m.snet:1:20: error: unexpected ')' (expected '{')"),
    ("net n connect A * ({a};", "m.snet:1:23: error: unexpected ';' (expected ')')"),
    ("net n connect A ! (<t>;", "m.snet:1:23: error: unexpected ';' (expected ')', ':')"),
    ("net n connect A * [];", "m.snet:1:19: error: unexpected '[' (expected '(', '{')"),
    ("net n connect A ! t;", "m.snet:1:19: error: unexpected name 't' (expected '(', '<')"),
])
def test_rts_dialect_takes_one_pair_of_parentheses_only(src, message):
    with pytest.raises(SNetSyntaxError) as info:
        parse(src, "m.snet", dialect="rts")
    assert first_line(info.value) == message


@pytest.mark.parametrize("src,column", [
    ("net n connect A * ({a}), {b};", 24),       # around one pattern of several
    ("net n connect A * ({a}) if <n>;", 25),     # a guard after the `)`
    ("net n connect A ! (<lo>):<hi>;", 25),      # around one tag of a range
])
def test_parentheses_around_part_of_an_operand_are_refused(src, column):
    with pytest.raises(SNetSyntaxError) as info:
        parse(src, "m.snet", dialect="rts")
    assert first_line(info.value).startswith(f"m.snet:1:{column}: error: unexpected ")


def test_parenthesised_program_is_the_unparenthesised_one():
    paren = parse((DIALECT / "parens.snet").read_text(), "parens.snet", dialect="rts")
    plain = parse((DIALECT / "parens_plain.snet").read_text(), "parens_plain.snet", dialect="rts")
    assert format_program(paren) == format_program(plain)
    graphs = [snet_cli("graph", "--dialect", "rts", name, cwd=DIALECT) for name in ("parens.snet", "parens_plain.snet")]
    assert [(g.returncode, g.stderr) for g in graphs] == [(0, ""), (0, "")]
    assert graphs[0].stdout == graphs[1].stdout and "star dispatcher (det)" in graphs[0].stdout


def test_parenthesised_program_runs_like_the_unparenthesised_one():
    expected = outputs('{"<k>": 1, "Y": 4, "Z": 16}\n{"<k>": 2, "Y": 7, "Z": 16}\n'
                       '{"<k>": 3, "Y": 12, "Z": 9}\n{"<k>": 4, "Y": 4, "Z": 16}\n')
    for name in ("parens.snet", "parens_plain.snet"):
        for engine in ("reference", "front"):
            result = snet_cli("run", "--dialect", "rts", "--engine", engine, name, "-i", "parens.jsonl", cwd=DIALECT)
            assert (name, engine, result.returncode, result.stderr) == (name, engine, 0, "")
            assert outputs(result.stdout) == expected, (name, engine)
    check = snet_cli("check", "--dialect", "rts", "parens.snet", cwd=DIALECT)
    assert (check.returncode, check.stdout, check.stderr) == (0, "{A, B, <k>} | {Y, Z} -> {Y, Z}\n", "")


FORMS = [  # (parenthesised, unparenthesised, records)
    ("[{<n>, <r>} -> {<n = n / 2>, <r = r + 1>}] * ({<n>} if <2 > n>, {done})",
     "[{<n>, <r>} -> {<n = n / 2>, <r = r + 1>}] * {<n>} if <2 > n>, {done}",
     [{"<n>": 12, "<r>": 0}, {"<n>": 1, "<r>": 0}, {"<n>": 40, "<r>": 0, "done": 1}]),
    ("[{<n>, <r>} -> {<n = n / 2>, <r = r + 1>}] ** ( {<n>} if <(n) < 2> )",
     "[{<n>, <r>} -> {<n = n / 2>, <r = r + 1>}] ** {<n>} if <(n) < 2>",
     [{"<n>": 1000, "<r>": 0}, {"<n>": 2, "<r>": 0}]),
    ("[{<m>, <s>} -> {<m = m - 1>, <s = s + m>}] \\ ({<m>} if <m > 0>)",
     "[{<m>, <s>} -> {<m = m - 1>, <s = s + m>}] \\ {<m>} if <m > 0>",
     [{"<m>": 4, "<s>": 0}, {"<m>": 1, "<s>": 10}]),
    ("[| {a}, {b} |] ! (<k>)", "[| {a}, {b} |] ! <k>",
     [{"a": 1, "<k>": 1}, {"a": 2, "<k>": 2}, {"b": 10, "<k>": 1}, {"b": 20, "<k>": 2}]),
    ("([{a, <#j>} -> {c = a, <#j>}] | [{b, <#j>} -> {b, <#j>}]) !@ (<k>) .. [| {c}, {b} |] !!@ (<#j>)",
     "([{a, <#j>} -> {c = a, <#j>}] | [{b, <#j>} -> {b, <#j>}]) !@ <k> .. [| {c}, {b} |] !!@ <#j>",
     [{"a": 1, "<k>": 3, "<#j>": 1}, {"b": 5, "<k>": 4, "<#j>": 1}, {"b": 6, "<k>": 4, "<#j>": 2},
      {"a": 2, "<k>": 5, "<#j>": 2}]),
    ("[| {cfg}, {job} |] ! (<lo>:<hi>)", "[| {cfg}, {job} |] ! <lo>:<hi>",
     [{"cfg": 7, "<lo>": 1, "<hi>": 2}, {"job": 1, "<lo>": 1, "<hi>": 1}, {"job": 2, "<lo>": 2, "<hi>": 2},
      {"job": 3, "<lo>": 3, "<hi>": 2}]),
    ("([{a, <t>} -> {b = a, <t>}] !! (<t>)) ** ({b})", "([{a, <t>} -> {b = a, <t>}] !! <t>) ** {b}",
     [{"a": 1, "<t>": 1}, {"b": 2, "<t>": 1}]),
]


@pytest.mark.parametrize("paren,plain,records", FORMS, ids=[f"form{i}" for i in range(len(FORMS))])
def test_each_parenthesised_form_means_the_unparenthesised_one(paren, plain, records):
    with pytest.raises(SNetSyntaxError, match=r"^m\.snet:1:\d+: error: unexpected '\(' \(expected '[{<]'\)"):
        parse(f"net n connect {paren};\n", "m.snet")
    assert format_program(parse(f"net n connect {paren};\n", dialect="rts")) == \
        format_program(parse(f"net n connect {plain};\n"))
    paren_net = snet.load(f"net n connect {paren};\n", dialect="rts")
    plain_net = snet.load(f"net n connect {plain};\n")
    assert paren_net.signature == plain_net.signature

    def run(net, **how):
        return Counter(json.dumps(r, sort_keys=True) for r in net.run(records, **how))

    expected = run(plain_net, engine="reference")
    assert expected  # every form lets something out
    for how in ({"engine": "reference"}, {"engine": "front", "workers": 2}):
        assert run(paren_net, **how) == expected, how
        assert run(plain_net, **how) == expected, how


# ---- the options

def test_compile_options_are_checked_when_built(tmp_path):
    assert CompileOptions().dialect == "standard" and CompileOptions().net_path == ()
    assert CompileOptions(dialect="rts", net_path=tmp_path).net_path == (str(tmp_path),)
    with pytest.raises(SNetUsageError, match=r"^dialect: unknown dialect 'rst' \(did you mean 'rts'\? "
                                             r"dialects: standard, rts\)$"):
        CompileOptions(dialect="rst")
    with pytest.raises(SNetUsageError, match="^net_path: no such folder: 'nowhere'$"):
        CompileOptions(net_path=["nowhere"])
    with pytest.raises(SNetUsageError, match="^net_path must be a folder or a list of folders, not 3$"):
        CompileOptions(net_path=3)
    with pytest.raises(AttributeError):
        CompileOptions().dialect = "rts"  # type: ignore[misc]
    with pytest.raises(SNetUsageError, match="unknown dialect"):
        snet.load("net n connect [];\n", dialect="c")


def test_the_command_line_names_its_own_option(tmp_path):
    (tmp_path / "n.snet").write_text("net n connect [];\n")
    result = snet_cli("check", "--dialect", "rts", "--net-path", "nowhere", "n.snet", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, "error: --net-path: no such folder: 'nowhere'\n")
    bad = snet_cli("check", "--dialect", "c", "n.snet", cwd=tmp_path)
    assert bad.returncode == 2 and "invalid choice: 'c'" in bad.stderr


def test_an_undeclared_net_with_a_net_file_is_bound_like_a_declared_one(tmp_path):
    # The reference distribution's compiler tests use nets of other files without declaring them.
    (tmp_path / "main.snet").write_text("net main { type t = {a}; net inner (t -> {b}) connect ext; } connect inner;\n")
    (tmp_path / "ext.snet").write_text("net ext connect [{a} -> {b = a}];\n")
    net = snet.load(tmp_path / "main.snet", dialect="rts")
    assert list(net.run([{"a": 4}], engine="reference")) == [{"b": 4}]
    (tmp_path / "ext.snet").unlink()
    with pytest.raises(SNetCompileError) as info:
        snet.load(tmp_path / "main.snet", dialect="rts")
    assert first_line(info.value) == f"{tmp_path / 'main.snet'}:1:55: error: unknown name 'ext'"


# ---- no false alarm on the rts dialect's example programs

RTS_EXAMPLES = sorted(p for p in [*DIALECT.glob("*.snet"), *DIALECT.glob("lib/*.snet")]
                      if p.name != "foreign.snet")  # foreign.snet shows the warning about inline C code


@pytest.mark.parametrize("path", RTS_EXAMPLES, ids=lambda p: p.name)
def test_strict_check_passes_the_rts_examples(path, snet_in_process):
    result = snet_in_process("check", "--strict", "--dialect", "rts", "--net-path", str(DIALECT / "lib"), path.name,
                      cwd=path.parent)
    assert (result.returncode, result.stderr) == (0, "")
