"""Inline Python boxes: box bodies written in the ``.snet`` file (rts dialect).

The reference distribution lets a box carry its code inline, in the box
language named after ``<<<``::

    box inc ((a, <n>) -> (b)) {<<< python | return {"b": a + n} >>>}

Here the code is the body of a Python function whose parameters are the
box's input labels in order (a tag ``<n>`` or binding tag ``<#n>`` as
``n``), so values are bound by name like any box function (docs/boxes.md).
An initialiser (``( -> ...)``) has no parameters.

The body is read this way: a statement on the line of ``|`` starts the
body; the lines after it are dedented by their common indentation, so a
body may start on the next line at any indentation.  A line that continues
a string begun on an earlier line stays as written (it is string text).  A Python syntax
error in the body is reported at its line and column in the ``.snet``
file, when the program is parsed.

Code in another language (``<<< C | ... >>>``) is not run: the box is
bound from the box modules like a box without a body, with a warning.
"""

from __future__ import annotations

import ast
import io
import keyword
import os
import re
import tokenize
from dataclasses import dataclass
from typing import Any, Callable

from snet.syntax.lexer import LexicalError

INLINE_LANGUAGE = "python"

_HEAD_RE = re.compile(r"\{\s*<<<\s*(?P<language>[A-Za-z0-9_+.-]*)")
_GAP_RE = re.compile(r"(?:\s+|/\*.*?\*/|//[^\n]*)*", re.S)  # blanks and comments before '|'


class InlineCodeError(LexicalError):
    """A problem in inline box code (or an rts-only form read in the standard dialect) at ``line``:``column``."""


@dataclass(frozen=True, slots=True)
class InlineParts:
    """The pieces of one ``{<<< language | code >>>}`` token."""

    language: str
    code: str  # the text between '|' and '>>>'
    line: int  # where the code starts in the program (1-based)
    column: int


def split_token(text: str, line: int, column: int) -> InlineParts:
    """Split an INLINE_CODE token that starts at ``line``:``column``.

    Raises:
        InlineCodeError: no language name, or no ``|`` after it.
    """
    head = _HEAD_RE.match(text)
    assert head is not None  # the lexer matched the same opening
    language = head.group("language")
    gap = _GAP_RE.match(text, head.end())
    bar = gap.end() if gap is not None else head.end()
    if not language or bar >= len(text) or text[bar] != "|":
        where_line, where_column = _advance(text, 0, bar, line, column)
        what = "a language name after '<<<'" if not language else f"'|' after the language name '{language}'"
        raise InlineCodeError(f"inline box code needs {what}, as in {{<<< python | ... >>>}}",
                              where_line, where_column)
    close = text.rindex(">>>")
    start = bar + 1
    code_line, code_column = _advance(text, 0, start, line, column)
    return InlineParts(language, text[start:close], code_line, code_column)


def _advance(text: str, start: int, stop: int, line: int, column: int) -> tuple[int, int]:
    """The position of ``text[stop]`` when ``text[start]`` is at ``line``:``column``."""
    chunk = text[start:stop]
    newlines = chunk.count("\n")
    if not newlines:
        return line, column + len(chunk)
    return line + newlines, len(chunk) - chunk.rfind("\n")


def parameter_names(labels: tuple[str, ...]) -> tuple[str, ...]:
    """``("a", "<n>", "<#b>")`` -> ``("a", "n", "b")``."""
    return tuple(label.strip("<>").lstrip("#") for label in labels)


@dataclass(frozen=True, slots=True)
class PythonBody:
    """A Python box body turned into a function definition, with its way back to the ``.snet`` file."""

    source: str  # "def NAME(params):\n    ..." (line 1 is the def line)
    lines: tuple[tuple[int, int], ...]  # per body line: (line in the .snet file, its column minus the text's)


FUNCTION_PREFIX = "snet_inline_"


def python_body(box: str, labels: tuple[str, ...], parts: InlineParts) -> PythonBody:
    """The function text for a Python body (see the module docstring for the layout rule).

    The lines that continue a string begun on an earlier line are part of
    that string's text: they are taken as written, neither dedented nor
    indented, so the string holds what the ``.snet`` file shows.
    """
    raw = parts.code.split("\n")
    inside = _string_continuations(raw)
    lines: list[str] = []
    where: list[tuple[int, int]] = []  # (line in the .snet file, .snet column - function text column)
    # The line of '|': what follows it, if anything, is the first statement.
    if raw[0].strip():
        lead = len(raw[0]) - len(raw[0].lstrip())
        lines.append("    " + raw[0].lstrip())
        where.append((parts.line, parts.column - 1 + lead - 4))
    statements = [line for i, line in enumerate(raw) if i > 0 and i not in inside and line.strip()]
    indent = _common_indent(statements)
    for i in range(1, len(raw)):
        line = raw[i]
        if i in inside:
            lines.append(line)
            where.append((parts.line + i, 0))
        elif line.strip():
            lines.append("    " + line[len(indent):])
            where.append((parts.line + i, len(indent) - 4))
        else:
            lines.append("")
            where.append((parts.line + i, 0))
    while lines and not lines[-1].strip():
        lines.pop()
        where.pop()
    if not lines:  # a box that drops every record says so: an empty body is a slip
        raise InlineCodeError(f"the inline Python code of box '{box}' is empty, so the box would emit nothing "
                              f"for any record; write 'pass' in it if that is meant", parts.line, parts.column)
    params = ", ".join(parameter_names(labels))
    body = "\n".join(lines)
    return PythonBody(f"def {FUNCTION_PREFIX}{box}({params}):\n{body}\n", tuple(where))


def _common_indent(lines: list[str]) -> str:
    """The leading blanks that every one of ``lines`` starts with."""
    if not lines:
        return ""
    return os.path.commonprefix([line[:len(line) - len(line.lstrip())] for line in lines])


def _string_continuations(raw: list[str]) -> set[int]:
    """The indices of the lines of ``raw`` that continue a string literal begun on an earlier line.

    Found with Python's tokenizer on the lines without their indentation
    (which keeps every token on its line); a text it cannot read gives no
    such line, and its syntax error is reported when the body is compiled.
    """
    if not any('"""' in line or "'''" in line or line.endswith("\\") for line in raw):
        return set()  # the common case: no string can span lines
    text = "\n".join(line.lstrip() for line in raw) + "\n"
    found: set[int] = set()
    starts: list[int] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            name = tokenize.tok_name.get(token.type, "")
            if name == "FSTRING_START":
                starts.append(token.start[0])
            elif name == "FSTRING_END" and starts:
                found.update(range(starts.pop(), token.end[0]))
            elif token.type == tokenize.STRING and token.end[0] > token.start[0]:
                found.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return set()
    return found  # (the tokenizer counts lines from 1, so its lines start + 1 .. end are these indices)


def compile_python(box: str, labels: tuple[str, ...], parts: InlineParts, filename: str) -> Any:
    """Compile a Python body to a code object.

    Raises:
        InlineCodeError: a Python syntax error, at its place in the ``.snet`` file.
    """
    names = parameter_names(labels)
    for label, name in zip(labels, names):
        problem = ("is a Python keyword" if keyword.iskeyword(name) else
                   "is given by another label too" if names.count(name) > 1 else None)
        if problem is not None:
            raise InlineCodeError(f"inline Python code of box '{box}': the parameter '{name}' of label '{label}' "
                                  f"{problem}; write the box in a box module instead", parts.line, parts.column)
    body = python_body(box, labels, parts)
    try:
        # Under a name that is no file: Python takes the text of a SyntaxError from the file it names.
        compile(body.source, f"<inline code of box {box}>", "exec", dont_inherit=True)
    except SyntaxError as e:
        number = (e.lineno or 2) - 2  # line 1 is the def line
        if 0 <= number < len(body.lines):
            line, shift = body.lines[number]
            column = max(1, (e.offset or 5) + shift)
        elif number < 0:  # the parameters: a label that is no Python name
            line, column = parts.line, parts.column
        else:
            line, shift = body.lines[-1]
            column = max(1, 5 + shift)
        raise InlineCodeError(f"syntax error in the inline Python code of box '{box}': {e.msg}",
                              line, column) from None
    # Under the .snet file's name, with its positions: a traceback names and quotes the line there.
    return compile(_placed(ast.parse(body.source), body.lines), filename, "exec", dont_inherit=True)


def _placed(tree: ast.Module, lines: tuple[tuple[int, int], ...]) -> ast.Module:
    """``tree`` with every position moved to its place in the ``.snet`` file, so that a traceback
    names the file's line (and quotes it) and its carets stand under the code there."""
    def place(lineno: int, col: int) -> tuple[int, int]:
        if lineno < 2:  # the def line: where the body starts
            return lines[0][0], 0
        line, shift = lines[min(lineno - 2, len(lines) - 1)]
        return line, max(0, col + shift)

    for walked in ast.walk(tree):
        node: Any = walked  # the classes with positions (expressions, statements, arguments...) share no base
        if getattr(node, "lineno", None) is not None:
            node.lineno, node.col_offset = place(node.lineno, node.col_offset)
        if getattr(node, "end_lineno", None) is not None:
            node.end_lineno, node.end_col_offset = place(node.end_lineno, node.end_col_offset or 0)
    return tree


def make_function(box: str, labels: tuple[str, ...], code: str, line: int, column: int,
                  filename: str) -> Callable:
    """The box function of an inline Python body (compiled again here: code objects are not kept in the graph)."""
    parts = InlineParts(INLINE_LANGUAGE, code, line, column)
    namespace: dict[str, Any] = {"__name__": "snet_inline"}
    exec(compile_python(box, labels, parts, filename), namespace)  # noqa: S102 - the program's own code
    function = namespace[FUNCTION_PREFIX + box]
    function.__qualname__ = function.__name__ = box
    function.__code__ = function.__code__.replace(co_name=box, co_qualname=box)  # tracebacks say "in BOX"
    return function


def inline_boxes(graph: Any) -> dict[str, Callable]:
    """box name -> function for every declared box of ``graph`` with an inline Python body."""
    out: dict[str, Callable] = {}
    for decl in graph.boxes:
        inline = getattr(decl, "inline", None)
        if inline is None or decl.name in out:
            continue
        code, line, column = inline
        filename = decl.span.source.name if decl.span is not None else "<string>"
        out[decl.name] = make_function(decl.name, decl.arguments, code, line, column, filename)
    return out


def with_inline_boxes(graph: Any, namespaces: list[Any]) -> list[Any]:
    """The namespaces to bind ``graph``'s boxes from: its inline bodies first, then ``namespaces``."""
    inline = inline_boxes(graph)
    return [inline, *namespaces] if inline else namespaces
