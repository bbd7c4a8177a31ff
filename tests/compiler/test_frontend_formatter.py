"""The formatter (``snet fmt``'s core): the canonical layout, with every comment kept.

The sample below has a comment in each position the repository's ``.snet``
files use (a file header, a block comment over two lines, an XML
declaration and an XML comment where a definition may start, a comment
inside a metadata block, one on a definition's line after it, ones before
and after local definitions, blank lines between definitions) and the ones
a user may write besides (on a net's ``{`` and ``}`` lines, between ``}``
and ``connect``, inside a connect expression, at the end of the file).
Each must come out where the documented rule puts it, and formatting the
result again must change nothing.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frontend_helpers import ROOT
from quickloop import examples
from snet.errors import SNetCompileError, SNetSyntaxError
from snet.syntax.formatter import format_text
from snet.syntax.parser import parse
from snet.syntax.printer import WIDTH, format_program
from test_frontend_printer import programs

SAMPLE = """\
<?xml version="1.0"?>
// File header: what this program does,
// over two lines.

/* A block comment
   spanning two lines. */
<metadata>
  <!-- defaults for every box -->
  <default> <interface value="Python"/> </default>
</metadata>
box solo ((a) -> (b));   // a trailing comment
net outer ({a} -> {b}) {  // after the brace
  // before the first local definition
  box f ((a) -> (b));
  box longer_name ((b) -> (b));


  // after blank lines
  net one connect f;  /* trailing block */
  net inner {
    box g ((b) -> (b));
    // at the end of inner's braces
  } connect g;
  // at the end of outer's braces
} // on the brace line
// between the brace and connect
connect f .. // inside the expression
  one .. inner;
net tail connect solo;
// at the end of the file
"""

FORMATTED = """\
<?xml version="1.0"?>
// File header: what this program does,
// over two lines.

/* A block comment
   spanning two lines. */
<metadata>
  <!-- defaults for every box -->
  <default> <interface value="Python"/> </default>
</metadata>
box solo ((a) -> (b));  // a trailing comment
net outer ({a} -> {b})
{  // after the brace
  // before the first local definition
  box f           ((a) -> (b));
  box longer_name ((b) -> (b));

  // after blank lines
  net one connect f;  /* trailing block */
  net inner
  {
    box g ((b) -> (b));
    // at the end of inner's braces
  }
  connect g;
  // at the end of outer's braces
}  // on the brace line
// between the brace and connect
// inside the expression
connect f .. one .. inner;
net tail connect solo;
// at the end of the file
"""

# Comments, and metadata blocks whole (a "//" in a metadata value is text, not a comment).
COMMENT = re.compile(r"<metadata>.*?</metadata>|//[^\n]*|/\*.*?\*/|<!--.*?-->|<\?.*?\?>", re.S)


def comments_of(text: str) -> list[str]:
    """The comments of `text`, each without the indentation of its lines (which moves with it)."""
    return sorted(re.sub(r"[ \t]*\n[ \t]*", "\n", c.strip()) for c in COMMENT.findall(text))


def test_every_comment_lands_where_the_rule_puts_it():
    assert format_text(SAMPLE) == FORMATTED
    assert format_text(FORMATTED) == FORMATTED
    assert parse(FORMATTED) == parse(SAMPLE)


def test_metadata_is_kept_as_written_and_moves_with_its_net():
    text = ("net n {\n"
            "      <metadata>\n"
            "        <box name=\"f\">   <!-- why: -->\n"
            "          <cores>4</cores>\n"
            "        </box>\n"
            "      </metadata>\n"
            "  box f ((a) -> (a));\n"
            "} connect f;\n")
    assert format_text(text) == ("net n\n{\n"
                                 "  <metadata>\n"
                                 "    <box name=\"f\">   <!-- why: -->\n"
                                 "      <cores>4</cores>\n"
                                 "    </box>\n"
                                 "  </metadata>\n"
                                 "  box f ((a) -> (a));\n"
                                 "}\nconnect f;\n")


def test_inline_box_code_is_kept_exactly_with_the_comment_in_its_language_part():
    text = ('box count ((A) -> (B)) {\n  <<< C /* not part of the code */ |\n'
            '      int i;\n  >>>\n}\n\nnet foreign connect count;\n')
    assert format_text(text, dialect="rts") == text
    with pytest.raises(SNetSyntaxError):
        format_text(text)  # inline code is read in the rts dialect only


def test_long_connect_expressions_are_broken_to_fit_and_names_line_up():
    text = ("net long connect [{<n>, <m>, <d>} -> if <n <= 1> then {<r=n>, <m>, <d>} "
            "else {<n=n-1>, <m=2*m>, <d=d+1>}; {<n=n-2>, <m=2*m+1>, <d=d+1>}] * {<r>};\n"
            "net s connect long;\n")
    assert format_text(text) == (
        "net long connect\n"
        "    [{<n>, <m>, <d>} -> if <n <= 1> then {<r=n>, <m>, <d>}\n"
        "                        else {<n=n - 1>, <m=2 * m>, <d=d + 1>};\n"
        "                             {<n=n - 2>, <m=2 * m + 1>, <d=d + 1>}]\n"
        "    * {<r>};\n"
        "net s    connect long;\n")
    stages = [f"stage_number_{i}" for i in range(12)]
    out = format_text(f"net n connect {' .. '.join(stages)};\n")
    assert out.splitlines() == ["net n connect", f"    {stages[0]}", *(f"    .. {s}" for s in stages[1:-1]),
                                f"    .. {stages[-1]};"]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_formatting_is_a_fixed_point(program):
    text = format_program(program)
    assert format_text(text) == text


def test_a_text_that_does_not_parse_is_refused_with_its_position():
    with pytest.raises(SNetSyntaxError) as error:
        format_text("net n connect a ..;\n", "bad.snet")
    assert error.value.diagnostics[0].render().startswith("bad.snet:1:19: error: unexpected ';'")


def test_a_program_too_deep_to_print_is_an_error():
    text = (ROOT / "tests" / "compiler" / "golden" / "usage_nested_too_deeply.snet").read_text()
    parse(text)  # the parser takes it; the printer recurses
    with pytest.raises(SNetCompileError, match="nested too deeply to format"):
        format_text(text, "deep.snet")


def repository_snet_files() -> list[Path]:
    try:
        names = subprocess.run(["git", "ls-files", "*.snet"], cwd=ROOT, capture_output=True, text=True,
                               check=True, timeout=60).stdout.split()
        return [ROOT / n for n in names]
    except (OSError, subprocess.SubprocessError):
        return sorted(p for p in ROOT.rglob("*.snet") if "build" not in p.relative_to(ROOT).parts)


@pytest.mark.parametrize("path", repository_snet_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_program_keeps_its_comments_and_meaning(path):
    text = path.read_text(encoding="utf-8-sig")
    for dialect in ("standard", "rts"):
        try:
            program = parse(text, dialect=dialect)
        except SNetSyntaxError:
            continue
        try:
            out = format_text(text, dialect=dialect)
        except SNetCompileError as error:
            assert "nested too deeply" in str(error.diagnostics[0].message)
            return
        assert parse(out, dialect=dialect) == program
        assert comments_of(out) == comments_of(text)
        assert format_text(out, dialect=dialect) == out
        return
    with pytest.raises(SNetSyntaxError):  # an example of an error: refused, as snet check refuses it
        format_text(text, str(path))


def _with_comments(text: str, places: list[int], kinds: list[int]) -> str:
    """`text` with a comment after some of its tokens (``places`` pick them, ``kinds`` pick the form)."""
    tokens = []
    parse(text, tokens=tokens)
    ends = sorted({t.end_pos for t in tokens})
    chosen = sorted({ends[p % len(ends)] for p in places}) if ends else []
    out, last = [], 0
    for n, (end, kind) in enumerate(zip(chosen, kinds)):
        out.append(text[last:end])
        out.append([f" // c{n}\n", f" /* c{n} */ ", f"\n\n/* c{n}\n   more */\n", f"\n  // c{n}\n"][kind % 4])
        last = end
    out.append(text[last:])
    return "".join(out)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs.filter(lambda p: p.definitions), st.lists(st.integers(0, 10_000), max_size=8),
       st.lists(st.integers(0, 3), min_size=8, max_size=8))
def test_comments_anywhere_are_kept_and_the_result_is_a_fixed_point(program, places, kinds):
    text = _with_comments(format_program(program), places, kinds)
    out = format_text(text)
    assert parse(out) == program
    assert comments_of(out) == comments_of(text)
    assert format_text(out) == out, out


def test_windows_line_ends_become_unix_ones():
    assert format_text("// c\r\nnet n connect f; // d\r\n") == "// c\nnet n connect f;  // d\n"
