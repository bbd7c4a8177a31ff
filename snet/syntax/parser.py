"""Text to AST: the one place where lark and its exceptions are known.

:func:`parse` runs lark's LALR(1) parser over the tokens of
:mod:`snet.syntax.lexer` with :class:`~snet.syntax.to_ast.AstBuilder` as an
inline transformer, so the result is a :class:`~snet.syntax.ast.Program`
directly.  The grammar is loaded once per process.

Every failure becomes an :class:`~snet.errors.SNetSyntaxError` holding one
positioned diagnostic (the first error; LALR cannot recover meaningfully)::

    net.snet:5:16: error: unexpected '|' (expected name, '(', '[', '[|')
      } connect f .. | g;
                     ^
"""

from __future__ import annotations

import bisect
import functools
import os
import threading
from pathlib import Path

import lark
from lark import Lark
from lark.exceptions import UnexpectedInput, UnexpectedToken, VisitError

from snet.errors import Diagnostic, SNetSyntaxError
from snet.gcpause import gc_paused
from snet.inlinecode import InlineCodeError
from snet.source import Source, Span
from snet.syntax.ast import Program
from snet.syntax.lexer import DISPLAY, INLINE_OPEN_RE, LexicalError, SNetLexer
from snet.syntax.metadata import MetadataError
from snet.syntax.to_ast import AstBuilder

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")  # in a source tree or an installed package


@functools.lru_cache(maxsize=None)
def _grammar_text() -> str:
    """The grammar, read as package data: also from a zip of the package (what Spark executors get)."""
    from importlib import resources

    return resources.files("snet.syntax").joinpath("grammar.lark").read_text(encoding="utf-8")


def build_lark(strict: bool = False) -> Lark:
    """A fresh LALR parser for the grammar (``strict`` reports every conflict)."""
    return Lark(_grammar_text(), parser="lalr", lexer=SNetLexer, strict=strict, maybe_placeholders=True)


def _cache_file() -> str | bool:
    """Where lark keeps the compiled parse tables between processes (False: nowhere).

    Building the LALR tables takes about half a second, which every ``snet``
    command would otherwise pay at start-up.  lark checks the grammar's hash
    stored in the file, so a changed grammar is rebuilt.  The file lives in
    the user's own cache folder rather than the shared temporary folder,
    because lark reads it with pickle.
    """
    if os.environ.get("SNET_NO_GRAMMAR_CACHE"):
        return False
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "snet")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    if not os.access(folder, os.W_OK):
        return False
    return os.path.join(folder, f"grammar-lark-{lark.__version__}.cache")


class _Parsers:
    """One lark parser per process, with a transformer whose source is swapped per parse."""

    def __init__(self) -> None:
        self.builder = AstBuilder(Source("<none>", ""), lambda offset: (1, 1))
        self.lark = Lark(_grammar_text(), parser="lalr", lexer=SNetLexer, transformer=self.builder,
                         maybe_placeholders=True, cache=_cache_file())
        # The builder holds the source of the parse in progress, so parses take turns.
        self.lock = threading.Lock()


@functools.lru_cache(maxsize=None)
def _parsers() -> _Parsers:
    return _Parsers()


def line_locator(text: str):
    """A function mapping a text offset to its 1-based ``(line, column)``."""
    starts = [0]
    find = text.find
    i = find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = find("\n", i + 1)

    def line_of(offset: int) -> tuple[int, int]:
        n = bisect.bisect_right(starts, offset) - 1
        return n + 1, offset - starts[n] + 1

    return line_of


def parse(text: str, filename: str = "<string>", source: Source | None = None, dialect: str = "standard",
          tokens: list | None = None) -> Program:
    """Parse a whole `.snet` text.

    Args:
        text: the program.
        filename: the name messages report.
        source: the :class:`Source` to attach to spans (made from the others if None).
        dialect: ``"standard"`` or ``"rts"`` (:class:`snet.options.CompileOptions`):
            the rts dialect also reads inline box code, ``net NAME;`` and
            parenthesised patterns and split tags (``A ** ({a})``, ``A ! (<t>)``).
        tokens: a list that receives every token and comment (COMMENT tokens) in
            the order the lexer meets them: what the formatter keeps of the layout.

    Returns:
        The program's AST.

    Raises:
        SNetSyntaxError: a lexical or syntax error, positioned.
    """
    if source is None:
        source = Source(filename, text)
    line_of = line_locator(text)
    parsers = _parsers()
    rts = dialect == "rts"
    try:
        with parsers.lock, gc_paused():
            parsers.builder.source = source
            parsers.builder.line_of = line_of
            parsers.builder.rts = SNetLexer.rts = rts
            SNetLexer.record = tokens
            try:
                program = parsers.lark.parse(text)  # the AstBuilder, lark's transformer, made it
                assert isinstance(program, Program), type(program)
                return program
            finally:
                parsers.builder.rts = SNetLexer.rts = False
                SNetLexer.record = None
    except LexicalError as e:  # InlineCodeError included
        raise _error(source, e.line, e.column, e.message) from None
    except MetadataError as e:
        line, column = line_of(e.offset)
        raise _error(source, line, column, e.message) from None
    except VisitError as e:
        inner = e.orig_exc
        if isinstance(inner, MetadataError):
            line, column = line_of(inner.offset)
            raise _error(source, line, column, inner.message) from None
        if isinstance(inner, InlineCodeError):
            raise _error(source, inner.line, inner.column, inner.message) from None
        raise
    except UnexpectedToken as e:
        raise _unexpected(source, text, e, rts) from None
    except UnexpectedInput as e:  # not produced by this lexer, but keep the contract
        raise _error(source, getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1, str(e).split("\n")[0]) from None


def _error(source: Source, line: int, column: int, message: str) -> SNetSyntaxError:
    span = Span(source, line, column, line, column)
    return SNetSyntaxError([Diagnostic("error", span, message)])


def _unexpected(source: Source, text: str, e: UnexpectedToken, rts: bool = False) -> SNetSyntaxError:
    token = e.token
    names = set(e.expected)
    try:
        # LALR lookahead sets are merged across states; ask the parser which
        # tokens it would really take here.
        names = e.interactive_parser.accepts() or names
    except Exception:  # noqa: BLE001 - only the message's quality depends on it
        pass
    hint = ""
    if not rts:  # forms of the rts dialect only: the standard dialect does not offer them, but says where they are
        if "INLINE_CODE" in names and token.type != "$END" and INLINE_OPEN_RE.match(text, token.start_pos or 0):
            hint = "inline box code {<<< ... >>>}"
        elif "_PLPAR" in names and token == "(":
            hint = "a pattern list or split tag in parentheses"
        names = set(names) - {"INLINE_CODE", "_PLPAR"}
        if "_LPAR" in names and "_CONNECT" in names:  # after `net NAME`, where `;` is rts only
            names.discard("_SEMI")
    expected = sorted({DISPLAY.get(name, name) for name in names if not name.startswith("__")},
                      key=_expected_order)
    if token.type == "$END":
        line, column = _end_position(text)
        what = "end of input"
    else:
        line, column = token.line, token.column
        if token.type == "NAME":
            what = f"name '{token}'"
        elif token.type == "INT":
            what = f"integer {token}"
        elif token.type == "METADATA":
            what = "metadata block"
        elif token.type == "INLINE_CODE":  # not the whole body, which may run over many lines
            what = "inline box code"
        else:
            what = f"'{token}'"
    message = f"unexpected {what}"
    if expected:
        message += f" (expected {', '.join(expected)})"
    if hint:
        message += f"; {hint} is read in the rts dialect (--dialect rts)"
    return _error(source, line, column, message)


def _expected_order(text: str) -> tuple[int, str]:
    # Words first ("name", "integer"), then keywords and punctuation.
    return (0 if not text.startswith("'") else 1, text)


def _end_position(text: str) -> tuple[int, int]:
    """Where "end of input" is reported: just after the last non-blank character."""
    stripped = text.rstrip()
    if not stripped:
        return 1, 1
    line = stripped.count("\n") + 1
    last_nl = stripped.rfind("\n")
    return line, len(stripped) - last_nl
