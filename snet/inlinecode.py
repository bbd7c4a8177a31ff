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
body may start on the next line at any indentation.  A Python syntax
error in the body is reported at its line and column in the ``.snet``
file, when the program is parsed.

Code in another language (``<<< C | ... >>>``) is not run: the box is
bound from the box modules like a box without a body, with a warning.
"""

from __future__ import annotations

import ast
import keyword
import re
import textwrap
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
    lines: tuple[tuple[int, int], ...]  # per body line: (line in the .snet file, columns removed)


FUNCTION_PREFIX = "snet_inline_"


def python_body(box: str, labels: tuple[str, ...], parts: InlineParts) -> PythonBody:
    """The function text for a Python body (see the module docstring for the layout rule)."""
    raw = parts.code.split("\n")
    first = raw[0]
    rest = raw[1:]
    # The line of '|': what follows it, if anything, is the first statement.
    lines: list[str] = []
    where: list[tuple[int, int]] = []
    if first.strip():
        lead = len(first) - len(first.lstrip())
        lines.append(first.strip())
        where.append((parts.line, parts.column - 1 + lead))
    dedented = textwrap.dedent("\n".join(rest)).split("\n") if rest else []
    for i, (original, text) in enumerate(zip(rest, dedented)):
        removed = len(original) - len(text) if text.strip() else 0
        lines.append(text.rstrip())
        where.append((parts.line + 1 + i, removed))
    while lines and not lines[-1].strip():
        lines.pop()
        where.pop()
    if not lines:
        lines, where = ["pass"], [(parts.line, parts.column - 1)]
    params = ", ".join(parameter_names(labels))
    body = "\n".join("    " + text if text else "" for text in lines)
    return PythonBody(f"def {FUNCTION_PREFIX}{box}({params}):\n{body}\n", tuple(where))


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
        compile(body.source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        number = (e.lineno or 2) - 2  # line 1 is the def line
        if 0 <= number < len(body.lines):
            line, removed = body.lines[number]
            column = max(1, (e.offset or 5) - 4 + removed)
        elif number < 0:  # the parameters: a label that is no Python name
            line, column = parts.line, parts.column
        else:
            line, removed = body.lines[-1]
            column = 1 + removed
        raise InlineCodeError(f"syntax error in the inline Python code of box '{box}': {e.msg}",
                              line, column) from None
    return compile(_placed(ast.parse(body.source), body.lines), filename, "exec", dont_inherit=True)


def _placed(tree: ast.Module, lines: tuple[tuple[int, int], ...]) -> ast.Module:
    """``tree`` with every position moved to its place in the ``.snet`` file, so that a traceback
    names the file's line (and quotes it) and its carets stand under the code there."""
    def place(lineno: int, col: int) -> tuple[int, int]:
        if lineno < 2:  # the def line: where the body starts
            return lines[0][0], 0
        line, removed = lines[min(lineno - 2, len(lines) - 1)]
        return line, max(0, col - 4 + removed)  # the body is indented by 4 in the function text

    for node in ast.walk(tree):
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
