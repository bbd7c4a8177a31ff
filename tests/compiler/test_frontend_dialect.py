"""Forms of the reference distribution's S-Net dialect that the front end accepts."""

from __future__ import annotations

import json

import pytest

from frontend_helpers import snet_cli
from snet.errors import SNetSyntaxError
from snet.syntax import ast
from snet.syntax.parser import parse

EARLY_METADATA = """<?xml version="1.0" encoding="ISO-8859-1" ?>
<!-- an early S-Net file -->
<metadata xmlns="snet-home.org">
  <boxdefault><interface value="C4SNet"/></boxdefault>
</metadata>
<snet:metadata xmlns:snet="snet-home.org">
  <snet:box name="f"><snet:observer value="1"/></snet:box>
</snet:metadata>
box f ((a) -> (b));
<!-- between definitions -->
net early {
  <!-- inside a net -->
  box g ((b) -> (c));
} connect f .. g;
"""


def test_early_metadata_forms_are_read_like_metadata():
    program = parse(EARLY_METADATA, "early.snet")
    first, second = program.definitions[:2]
    assert [e.key for e in first.elements] == ["boxdefault"]
    assert first.elements[0].children[0].attribute("value") == "C4SNet"
    assert [e.key for e in second.elements] == ["box"]
    assert second.elements[0].attribute("name") == "f"
    assert second.elements[0].children[0].key == "observer"
    assert [type(d) for d in program.definitions[2:]] == [ast.BoxDecl, ast.NetDef]


def test_early_metadata_program_checks_and_runs(tmp_path):
    (tmp_path / "early.snet").write_text(EARLY_METADATA)
    (tmp_path / "early.py").write_text("def f(a):\n    return {'b': a + 1}\n\ndef g(b):\n    return {'c': b * 2}\n")
    (tmp_path / "in.jsonl").write_text('{"a": 1}\n{"a": 4}\n')
    check = snet_cli("check", "--strict", "early.snet", cwd=tmp_path)
    assert (check.returncode, check.stdout, check.stderr) == (0, "{a} -> {c}\n", "")
    run = snet_cli("run", "early.snet", "-i", "in.jsonl", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert sorted(json.loads(line)["c"] for line in run.stdout.splitlines()) == [4, 10]


@pytest.mark.parametrize("src,message,position", [
    ('<?xml version="1.0"\nnet n connect [];\n', "unterminated XML declaration", (1, 1)),
    ("net n connect [];\n<!-- open\n", "unterminated XML comment", (2, 1)),
    ('<snet:metadata xmlns:snet="x"><box name="n"/></metadata>\nnet n connect [];\n',
     "unterminated metadata block", (1, 1)),
])
def test_unterminated_early_markup_is_a_lexical_error(src, message, position):
    with pytest.raises(SNetSyntaxError) as info:
        parse(src, "m.snet")
    assert f"m.snet:{position[0]}:{position[1]}: error: {message}" in str(info.value)


def test_markup_is_only_skipped_where_a_definition_may_start():
    # Inside a guard, '<!--a>' is '<', '!', '-', '-', 'a', '>'.
    f = parse("net n connect [{<a>} -> if <!--a> then {} else {}];").definitions[0].body
    assert f.clauses[0].guard is not None
    record = parse("net n connect [{<metadata>} -> {}];").definitions[0].body.pattern
    assert [label.text for label in record.labels] == ["<metadata>"]


GREATER = """net gt connect
  [{<N>, <L>, <P>} -> if <N > 0> then {<pos>}
                      else if <L > P> then {<big>}
                      else if <N>0> then {<never>}
                      else {<other>}];
"""


def test_unparenthesised_greater_than_program_runs(tmp_path):
    (tmp_path / "gt.snet").write_text(GREATER)
    (tmp_path / "in.jsonl").write_text('{"<N>": 3, "<L>": 0, "<P>": 0}\n{"<N>": 0, "<L>": 5, "<P>": 1}\n'
                                       '{"<N>": -1, "<L>": 1, "<P>": 2}\n')
    check = snet_cli("check", "--strict", "gt.snet", cwd=tmp_path)
    assert (check.returncode, check.stderr) == (0, "")
    run = snet_cli("run", "gt.snet", "-i", "in.jsonl", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    # The pattern's tags are dropped (§6.5); only the chosen tag remains.
    assert [list(json.loads(line)) for line in run.stdout.splitlines()] == [["<pos>"], ["<big>"], ["<other>"]]
