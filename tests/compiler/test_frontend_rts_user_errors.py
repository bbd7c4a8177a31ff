"""User mistakes around the rts dialect's forms and box binding: each gives a clear message saying
where and what, with the documented exit status (docs/cli.md, docs/language.md §19, docs/boxes.md)."""

from __future__ import annotations

import pytest

import snet
from frontend_helpers import snet_cli
from snet.errors import SNetBindingError, SNetUsageError
from snet.options import CompileOptions

TYPO = 'net n\n{\n  box f ((a) -> (b)) {<<< pyhton | return {"b": a + 1} >>>}\n}\nconnect f;\n'


def test_a_misspelt_inline_language_is_named_with_a_hint(tmp_path):
    (tmp_path / "n.snet").write_text(TYPO)
    result = snet_cli("check", "--dialect", "rts", "n.snet", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr.splitlines()[0] == (
        "n.snet:3:22: warning: the inline pyhton code of box 'f' is not run; the box is bound from the box "
        "modules; did you mean 'python'?")


def test_a_foreign_inline_language_gets_no_hint(tmp_path):
    (tmp_path / "n.snet").write_text(TYPO.replace("pyhton", "C"))
    result = snet_cli("check", "--dialect", "rts", "n.snet", cwd=tmp_path)
    assert result.stderr.splitlines()[0] == (
        "n.snet:3:22: warning: the inline C code of box 'f' is not run; the box is bound from the box modules")


def test_snet_run_shows_the_warnings_that_explain_a_binding_error(tmp_path):
    # The box is missing *because* its inline code is not run: the warning that says so must not be lost.
    (tmp_path / "n.snet").write_text(TYPO)
    result = snet_cli("run", "--dialect", "rts", "n.snet", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if not line.startswith("  ")]
    assert lines == [
        "n.snet:3:22: warning: the inline pyhton code of box 'f' is not run; the box is bound from the box "
        "modules; did you mean 'python'?",
        "error: declared box 'f' not found: no box module (give --boxes, or put NET.py beside NET.snet)",
        "n.snet:3:7: error: box 'f' is declared here",
    ]


def test_load_logs_the_compile_and_binding_warnings_before_a_binding_error(caplog):
    src = "box f ((a, b) -> (c));\nbox g ((x) -> (y));\nnet n ({a, b} -> {y}) connect f .. [{c} -> {y=c}] .. g;\n"
    with pytest.raises(SNetBindingError):
        snet.load(src, boxes={"f": lambda b, a: {"c": a}})
    logged = [r.getMessage().splitlines()[0] for r in caplog.records if r.levelname == "WARNING"]
    assert logged == [
        "<string>:3:8: warning: net 'n': box 'g' needs 'x', which neither declared input {a, b} nor anything "
        "before it produces",
        "<string>:3:54: warning: box 'g' needs 'x', which no record reaching it carries (it receives {y})",
        "<string>:1:5: warning: box 'f' has its parameters (b, a) in another order than its input labels (a, b): "
        "the values are passed by name",
    ]


def test_check_boxes_shows_the_binding_warnings_before_a_binding_error(tmp_path):
    (tmp_path / "n.snet").write_text("box f ((a, b) -> (c));\nbox g ((c) -> (d));\nnet n connect f .. g;\n")
    (tmp_path / "n.py").write_text("def f(b, a):\n    return {'c': a}\n")
    result = snet_cli("check", "--boxes", "n.py", "n.snet", cwd=tmp_path)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if not line.startswith("  ")]
    assert lines[0] == ("n.snet:1:5: warning: box 'f' has its parameters (b, a) in another order than its input "
                        "labels (a, b): the values are passed by name")
    assert lines[1].startswith("error: declared box 'g' not found in ")


def test_net_path_without_the_rts_dialect_is_an_option_error(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "ext.snet").write_text("net ext connect [];\n")
    (tmp_path / "n.snet").write_text("net ext ({a} -> {a});\nnet n connect ext;\n")
    result = snet_cli("run", "--net-path", "lib", "n.snet", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("error: --net-path: binds declared-only nets of the rts dialect only; "
                             "add --dialect rts\n")
    with pytest.raises(SNetUsageError, match=r"^net_path: binds declared-only nets of the rts dialect only; "
                                             r"add dialect='rts'$"):
        CompileOptions(net_path=[str(tmp_path)])
    assert snet_cli("check", "--dialect", "rts", "--net-path", "lib", "n.snet", cwd=tmp_path).returncode == 0


def test_a_net_path_entry_that_is_a_file_is_not_a_folder(tmp_path):
    (tmp_path / "n.snet").write_text("net n connect [];\n")
    result = snet_cli("check", "--dialect", "rts", "--net-path", "n.snet", "n.snet", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, "error: --net-path: not a folder: 'n.snet'\n")


def test_an_exception_in_inline_code_points_at_its_line_in_the_snet_file(tmp_path):
    (tmp_path / "n.snet").write_text(
        "net n\n{\n  box f ((a) -> (b)) {<<< python |\n      x = a + 1\n      return {\"b\": x / 0}\n  >>>}\n}\n"
        "connect f;\n")
    result = snet_cli("run", "--dialect", "rts", "n.snet", cwd=tmp_path, stdin='{"a": 1}\n')
    assert result.returncode == 1
    assert '  File "n.snet", line 5, in f\n' in result.stderr
    assert 'return {"b": x / 0}' in result.stderr  # the traceback quotes the .snet line
    assert result.stderr.rstrip().endswith("ZeroDivisionError: division by zero")


def test_the_strict_summary_counts_in_good_english(tmp_path):
    (tmp_path / "n.snet").write_text("box f ((a) -> (b) | (err));\nbox g ((b) -> (c));\nnet n connect f .. g;\n")
    one = snet_cli("check", "--strict", "n.snet", cwd=tmp_path)
    assert one.returncode == 2 and one.stderr.rstrip().endswith("n.snet: 1 warning treated as an error (--strict)")


def test_every_binding_problem_starts_with_its_place_then_error(tmp_path):
    # As every message about the .snet file: FILE:LINE:COL: error: ..., one per box.
    (tmp_path / "n.snet").write_text("box f ((a, b) -> (d));\nbox g ((a) -> (d));\nnet n connect f | g;\n")
    (tmp_path / "n.py").write_text("def f(a, b, c):\n    return {'d': 1}\n\ng = 3\n")
    result = snet_cli("run", "n.snet", cwd=tmp_path, stdin="")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "n.snet:1:5: error: box 'f' cannot be called with its 2 input label(s) {a, b}: missing a required "
        "argument: 'c'",
        "n.snet:2:5: error: box 'g' is bound to a int, not a function",
    ]


def test_a_string_over_several_lines_in_inline_code_keeps_its_text():
    # A string that spans lines holds the text the .snet file shows, as in a Python file: nothing added or removed.
    src = ('net n {\n  box f ((a) -> (b, c)) {<<< python |\n      s = """x\n      y"""\n'
           '      return {"b": s, "c": f"""{a}\n{a}"""}\n  >>>}\n} connect f;\n')
    net = snet.load(src, dialect="rts")
    assert list(net.run([{"a": 3}], engine="reference")) == [{"b": "x\n      y", "c": "3\n3"}]


@pytest.mark.parametrize("body,where,message", [
    ("x = (\n      return 1", "2:40", "'(' was never closed"),  # at the '('
    ("return 1 +* 2", "2:46", "invalid syntax"),
    ("\n      nonlocal q\n      return None", "3:7", "no binding for nonlocal 'q' found"),
    ("\n      x = 1\n        y = 2", "4:8", "unexpected indent"),  # Python's place: the indentation's end
])
def test_syntax_errors_in_inline_code_are_placed_in_the_snet_file(body, where, message):
    src = f"net n {{\n  box f ((a) -> (b)) {{<<< python | {body}\n  >>>}}\n}} connect f;\n"
    with pytest.raises(snet.SNetCompileError) as info:
        snet.load(src, dialect="rts")
    assert str(info.value).splitlines()[0] == (
        f"<string>:{where}: error: syntax error in the inline Python code of box 'f': {message}")


def test_a_syntax_error_in_inline_code_of_a_file_is_placed_in_that_file(tmp_path):
    # Python reads a SyntaxError's line from the file it is told the code comes from: the position must not
    # depend on what that file holds at the function text's line numbers.
    (tmp_path / "n.snet").write_text('net n\n{\n  box f ((a) -> (b)) {<<< python | return {"b": a +* 1} >>>}\n'
                                     '  box g ((b) -> (c)) {<<< python |\n      x = (\n      return x\n  >>>}\n'
                                     '}\nconnect f .. g;\n')
    result = snet_cli("check", "--dialect", "rts", "n.snet", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        "n.snet:3:52: error: syntax error in the inline Python code of box 'f': invalid syntax")
    (tmp_path / "n.snet").write_text((tmp_path / "n.snet").read_text().replace("+* 1", "+ 1"))
    result = snet_cli("check", "--dialect", "rts", "n.snet", cwd=tmp_path)
    assert result.stderr.splitlines()[0] == (
        "n.snet:5:11: error: syntax error in the inline Python code of box 'g': '(' was never closed")


def test_misplaced_inline_code_is_named_not_quoted_whole():
    src = ('box f ((a) -> (b)) {<<< python | return {"b": a} >>>} {<<< python |\n    x = 1\n    return None\n>>>}\n'
           'net z connect f;\n')
    with pytest.raises(snet.SNetCompileError) as info:
        snet.load(src, dialect="rts")
    assert str(info.value).splitlines()[0] == (
        "<string>:1:55: error: unexpected inline box code (expected end of input, metadata block, ';', 'box', "
        "'net', 'type', 'typesig')")


@pytest.mark.parametrize("body", ["{<<< python | >>>}", "{<<< python |\n\n  >>>}"])
def test_an_empty_inline_python_body_is_an_error_not_a_box_that_drops_everything(tmp_path, body):
    (tmp_path / "n.snet").write_text(f"box f ((a) -> (b)) {body};\nnet n connect f;\n")
    (tmp_path / "in.jsonl").write_text('{"a": 1}\n')
    result = snet_cli("run", "--dialect", "rts", "n.snet", "-i", "in.jsonl", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[0] == (
        "n.snet:1:33: error: the inline Python code of box 'f' is empty, so the box would emit nothing for any "
        "record; write 'pass' in it if that is meant")


def test_an_inline_body_of_pass_drops_every_record(tmp_path):
    (tmp_path / "n.snet").write_text("box f ((a) -> (b)) {<<< python | pass >>>};\nnet n connect f;\n")
    (tmp_path / "in.jsonl").write_text('{"a": 1}\n')
    result = snet_cli("run", "--dialect", "rts", "n.snet", "-i", "in.jsonl", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == ""
