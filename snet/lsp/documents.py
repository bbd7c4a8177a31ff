"""What the language server knows of one `.snet` text, without the protocol.

:func:`analyse_document` runs the compiler's front end as ``snet check``
does (parse, resolve, type-check, warnings) and keeps what the editor
features need: the diagnostics, the AST with each definition's extent in
the text, and the type checker.  The answers are plain values, so the
server (:mod:`snet.lsp.server`) only translates them into LSP messages.

Positions here are 0-based lines and character columns, as LSP counts them
(columns in characters: a program is ASCII in practice).
"""

from __future__ import annotations

import ast as python_ast
import bisect
import os
import re
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING

from snet.errors import Diagnostic, SNetCompileError, SNetError
from snet.syntax import ast
from snet.tagexpr import Ref

if TYPE_CHECKING:
    from snet.spg.build import Analysis

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARTIAL_LABEL = re.compile(r"<?#?[A-Za-z0-9_]*$")


@dataclass
class Problem:
    """A diagnostic in LSP terms: 0-based start and end, severity "error" or "warning"."""

    severity: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str


@dataclass
class Document:
    """One analysed text: its problems, and (when it compiled) its program and types."""

    path: str
    text: str
    problems: list[Problem] = field(default_factory=list)
    program: ast.Program | None = None
    extents: list[tuple[object, int, int]] = field(default_factory=list)
    analysis: Analysis | None = None
    labels: set[str] = field(default_factory=set)


def analyse_document(text: str, path: str, dialect: str = "standard") -> Document:
    """The diagnostics ``snet check PATH`` would print for `text`, and what hover and the rest need."""
    from snet.options import CompileOptions
    from snet.spg.build import compile_analysis
    from snet.syntax.comments import definition_extents
    from snet.syntax.parser import parse

    if text.startswith("\ufeff"):
        text = text[1:]
    doc = Document(path, text)
    options = CompileOptions(dialect=dialect)
    try:
        tokens: list = []
        doc.program = parse(text, path, dialect=dialect, tokens=tokens)
        doc.extents = definition_extents(doc.program, tokens)
        doc.labels = labels_of(doc.program)
        analysis, _ = compile_analysis(text, path, None, require_run=False, options=options)
        doc.analysis = analysis
        doc.extents = definition_extents(analysis.program, tokens)  # the nodes the resolution knows
        doc.problems = [problem(d, text, path) for d in analysis.warnings]
    except SNetCompileError as error:
        doc.problems = [problem(d, text, path) for d in error.diagnostics]
    except SNetError as error:  # a usage error: no position
        doc.problems = [Problem("error", 0, 0, 0, 0, str(error))]
    except RecursionError:
        doc.problems = [Problem("error", 0, 0, 0, 0, "the program is nested too deeply to compile")]
    return doc


def problem(d: Diagnostic, text: str, path: str) -> Problem:
    """A compiler diagnostic as a range: its span, or the word (else the character) at its start."""
    span = d.span
    if span is None or span.source.name != path:  # no position, or in another (linked) file
        where = "" if span is None else f"{span.location}: "
        return Problem(d.severity, 0, 0, 0, 0, where + d.message)
    line, column = span.line - 1, span.column - 1
    if span.end_line:
        return Problem(d.severity, line, column, span.end_line - 1, span.end_column, d.message)
    lines = text.split("\n")
    source_line = lines[line] if line < len(lines) else ""
    m = _WORD.match(source_line, column)
    end = m.end() if m else min(column + 1, max(len(source_line), column))
    return Problem(d.severity, line, column, line, max(end, column + 1) if source_line else column, d.message)


def offset_of(text: str, line: int, column: int) -> int:
    """The text offset of a 0-based position."""
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    return starts[min(line, len(starts) - 1)] + column


def word_at(text: str, line: int, column: int) -> str | None:
    """The name under (or just before) the cursor."""
    lines = text.split("\n")
    if line >= len(lines):
        return None
    for m in _WORD.finditer(lines[line]):
        if m.start() <= column <= m.end():
            return m.group()
    return None


def resolve_at(doc: Document, line: int, column: int):
    """The definition the name at the cursor stands for, looked up from the scope there."""
    name = word_at(doc.text, line, column)
    if name is None or doc.analysis is None:
        return None
    offset = offset_of(doc.text, line, column)
    resolution = doc.analysis.resolution
    scope = resolution.file_scope
    for d, start, end in doc.extents:  # nets with braces, outer before inner
        if isinstance(d, ast.NetDef) and d.definitions is not None and start <= offset <= end:
            scope = resolution.net_scope(d)
    return scope.lookup(name)


def hover(doc: Document, line: int, column: int) -> str | None:
    """Markdown for the name at the cursor: a net's signature (inferred when undeclared), a box's."""
    from snet.syntax.printer import format_definition, format_signature, format_type

    d = resolve_at(doc, line, column)
    if d is None or doc.analysis is None:
        return None
    checker = doc.analysis.checker
    if isinstance(d, ast.NetDef):
        kind = "declared" if d.signature is not None else "inferred"
        text = f"net {d.name} ({checker.signature_text(d)})"
        return f"```snet\n{text}\n```\n{kind} signature"
    if isinstance(d, ast.BoxDecl):
        head = format_definition(d, 0)[0].split(" {<<<")[0].rstrip(";")
        where = box_function(doc, d)
        bound = f"\n\nPython: `{os.path.basename(where[0])}` line {where[1] + 1}" if where else ""
        return f"```snet\n{head}\n```\nbox{bound}"
    if isinstance(d, ast.TypeDef):
        return f"```snet\ntype {d.name} = {format_type(d.type)}\n```"
    if isinstance(d, ast.TypesigDef):
        return f"```snet\ntypesig {d.name} = {format_signature(d.signature)}\n```"
    return None


def box_module(path: str) -> str:
    """The box module ``snet check`` and ``snet run`` bind by default: NET.py beside NET.snet."""
    return os.path.splitext(path)[0] + ".py"


def box_function(doc: Document, box: ast.BoxDecl) -> tuple[str, int, int] | None:
    """``(file, line, column)`` of the Python function of `box` in the box module, read not run."""
    module = box_module(doc.path)
    try:
        with open(module, encoding="utf-8") as f:
            tree = python_ast.parse(f.read(), module)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    found = None
    for node in tree.body:  # the last binding of the name wins, as in the module
        if isinstance(node, (python_ast.FunctionDef, python_ast.AsyncFunctionDef, python_ast.ClassDef)) \
                and node.name == box.name:
            found = (module, node.lineno - 1, node.col_offset + len("async def " if isinstance(
                node, python_ast.AsyncFunctionDef) else "class " if isinstance(node, python_ast.ClassDef) else "def "))
        elif isinstance(node, python_ast.Assign) and any(
                isinstance(t, python_ast.Name) and t.id == box.name for t in node.targets):
            found = (module, node.lineno - 1, node.col_offset)
    return found


def definition(doc: Document, line: int, column: int) -> tuple[str, int, int] | None:
    """Where the name at the cursor is defined: a box's Python function, else its declaration."""
    d = resolve_at(doc, line, column)
    if d is None:
        return None
    if isinstance(d, ast.BoxDecl) and d.inline is None:
        found = box_function(doc, d)
        if found is not None:
            return found
    span = getattr(d, "span", None)
    if span is None or span.source.name != doc.path:
        return None
    return doc.path, span.line - 1, span.column - 1


def labels_of(program: ast.Program) -> set[str]:
    """Every label and tag the program spells: ``a``, ``<t>``, ``<#b>``."""
    found: set[str] = set()
    stack: list[object] = [program]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Label):
            found.add(node.text)
        elif isinstance(node, ast.OutItem):
            found.update(label for label in (node.label, node.source) if label)
        elif isinstance(node, Ref):
            found.add(node.label)
        elif isinstance(node, (tuple, list)):
            stack.extend(node)
        if is_dataclass(node) and not isinstance(node, type):
            stack.extend(getattr(node, f.name) for f in fields(node) if f.name != "span")
    return {label for label in found if re.fullmatch(r"<?#?[A-Za-z_]\w*>?", label)}


def completions(doc: Document, known: set[str], line: int, column: int) -> tuple[int, list[str]]:
    """``(start column, labels)``: labels that complete what is typed before the cursor."""
    lines = doc.text.split("\n")
    before = lines[line][:column] if line < len(lines) else ""
    m = _PARTIAL_LABEL.search(before)
    typed = m.group() if m else ""
    labels = sorted(doc.labels | known | set(re.findall(r"<#?[A-Za-z_]\w*>", doc.text)))
    if typed.startswith("<"):
        labels = [label for label in labels if label.startswith("<")]
    return column - len(typed), [label for label in labels if label.startswith(typed) and label != typed]


@dataclass
class Symbol:
    """A definition for the editor's outline: its kind, its extent, its name's position, its local ones."""

    name: str
    kind: str  # "net", "box", "type" or "typesig"
    start: tuple[int, int]
    end: tuple[int, int]
    name_at: tuple[int, int]
    children: list[Symbol] = field(default_factory=list)


_KINDS = {ast.NetDef: "net", ast.BoxDecl: "box", ast.TypeDef: "type", ast.TypesigDef: "typesig"}


def outline(doc: Document) -> list[Symbol]:
    """The named definitions of the document, local ones inside their net's (empty if it does not parse)."""
    program = doc.analysis.program if doc.analysis is not None else doc.program
    if program is None:
        return []
    extents = {id(d): (start, end) for d, start, end in doc.extents}
    position = _positions(doc.text)

    def symbols(definitions) -> list[Symbol]:
        out = []
        for d in definitions:
            kind = _KINDS.get(type(d))
            if kind is None or id(d) not in extents:
                continue
            start, end = extents[id(d)]
            span = d.span
            name_at = (span.line - 1, span.column - 1) if span is not None else position(start)
            inner = symbols(d.definitions) if isinstance(d, ast.NetDef) and d.definitions else []
            out.append(Symbol(d.name, kind, position(start), position(end), name_at, inner))
        return out

    return symbols(program.definitions)


def _positions(text: str):
    """A function from a text offset to its 0-based (line, column)."""
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def position(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(starts, offset) - 1
        return line, offset - starts[line]

    return position
