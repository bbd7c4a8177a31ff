"""The S-Net lexer (language.md §2), written by hand for lark's LALR parser.

Why not lark's own lexers: the language asks for three things they do not
give together.

* **Longest token, always.**  lark's contextual lexer only tries the
  terminals the parser can accept next, so it would split ``!!`` into two
  ``!`` where a double negation fits; the language says ``!!`` is one token
  everywhere.  One master regular expression, longer operators first, does
  it here.
* **Metadata blocks only where a definition may start.**  ``<metadata>`` is
  also a tag named ``metadata`` inside a record type, so the lexer asks the
  parser state (which lark passes to a custom lexer) whether a METADATA
  token is acceptable before taking one.
* **Lexical errors with a position**: an unterminated ``/*`` at its start,
  ``08``, a stray character, an integer literal of more decimal digits
  than Python converts (:func:`_long_literal_problem`).  They are raised as :class:`LexicalError`, which
  :mod:`snet.syntax.parser` renders like any syntax error.

Positions are 1-based lines and columns counted in characters.
"""

from __future__ import annotations

import re
import sys
from typing import Iterator

from lark import Token
from lark.lexer import Lexer

KEYWORDS = {
    "net": "_NET", "box": "_BOX", "connect": "_CONNECT", "type": "_TYPE", "typesig": "_TYPESIG",
    "if": "_IF", "then": "_THEN", "else": "_ELSE", "abs": "ABS", "min": "MIN", "max": "MAX",
}

# Longest first where one operator is a prefix of another.
OPERATORS = {
    "!!@": "BANGBANGAT", "...": "ELLIPSIS",
    "->": "_ARROW", "..": "DOTDOT", "||": "BARBAR", "**": "STARSTAR", "!!": "BANGBANG", "!@": "BANGAT",
    "[|": "LSYNC", "|]": "_RSYNC", "==": "EQEQ", "!=": "NE", "<=": "LE", ">=": "GE", "&&": "ANDAND",
    "(": "_LPAR", ")": "_RPAR", "{": "LBRACE", "}": "_RBRACE", "[": "LBRACK", "]": "RBRACK",
    "<": "LT", ">": "GT", ",": "_COMMA", ";": "_SEMI", ":": "_COLON", "=": "_EQ", "|": "BAR",
    "*": "STAR", "!": "BANG", "@": "AT", "\\": "BACKSLASH", "#": "HASH", "?": "_QUESTION",
    "+": "PLUS", "-": "MINUS", "/": "SLASH", "%": "PERCENT",
}

# What a terminal looks like in "expected ..." messages.
DISPLAY = {name: f"'{text}'" for text, name in OPERATORS.items()}
DISPLAY.update({name: f"'{word}'" for word, name in KEYWORDS.items()})
DISPLAY["GTCMP"] = "'>'"
DISPLAY["_PLPAR"] = "'('"
DISPLAY.update({"NAME": "name", "INT": "integer", "METADATA": "metadata block", "$END": "end of input",
                "INLINE_CODE": "inline box code"})

_OPERATOR_RE = "|".join(re.escape(op) for op in sorted(OPERATORS, key=len, reverse=True))
_TOKEN_RE = re.compile(
    r"(?P<ws>[ \t\r\n\f]+)"
    r"|(?P<comment>//[^\n]*|/\*.*?\*/)"
    r"|(?P<open_comment>/\*)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<int>0[xX][0-9a-fA-F]+|[0-9]+)"
    rf"|(?P<op>{_OPERATOR_RE})",
    re.DOTALL,
)
# The opening tag of a metadata block: <metadata>, or an early form with attributes
# (<metadata xmlns="...">) or a namespace prefix (<snet:metadata xmlns:snet="...">).
METADATA_OPEN_RE = re.compile(
    r"<(?:(?P<prefix>[A-Za-z_][A-Za-z0-9_.-]*):)?metadata"
    r"(?:\s+[A-Za-z_][A-Za-z0-9_.:-]*\s*=\s*(?:\"[^\"]*\"|'[^']*'))*\s*>")


# Inline box code of the rts dialect: "{", blanks, "<<<" ... ">>>", blanks, "}" is one token.
INLINE_OPEN_RE = re.compile(r"\{\s*<<<")
INLINE_CLOSE_RE = re.compile(r">>>\s*\}")


class LexicalError(Exception):
    """A lexical error at ``line``:``column`` (1-based)."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def int_value(text: str) -> int:
    """The value of an integer literal already matched by the lexer."""
    if text[:2] in ("0x", "0X"):
        return int(text[2:], 16)
    if len(text) > 1 and text[0] == "0":
        return int(text[1:], 8)
    return int(text)


class SNetLexer(Lexer):
    """Tokens for lark's LALR parser; see the module docstring."""

    __future_interface__ = 2  # lex(lexer_state, parser_state): we need the parser state
    # Set by snet.syntax.parser.parse, under its lock, for the parse in progress.
    rts = False
    # A list that receives every token and every comment of the parse in progress
    # (the formatter's view of the text), or None.
    record: list | None = None

    def __init__(self, lexer_conf) -> None:  # lark's interface
        pass

    def lex(self, lexer_state, parser_state) -> Iterator[Token]:
        slice_ = lexer_state.text
        text = slice_.text if hasattr(slice_, "text") else slice_
        record = SNetLexer.record
        if record is None:
            return tokenize(text, parser_state, SNetLexer.rts)
        return _recorded(tokenize(text, parser_state, SNetLexer.rts, record), record)


def _recorded(tokens: Iterator[Token], record: list) -> Iterator[Token]:
    for token in tokens:
        record.append(token)
        yield token


def tokenize(text: str, parser_state=None, rts: bool = False, comments: list | None = None) -> Iterator[Token]:
    """Yield the tokens of `text`; with a parser state, metadata is context-sensitive.

    With ``rts`` (the reference distribution's dialect), ``{ <<< ... >>> }``
    is one INLINE_CODE token, and a ``(`` where the parser can take the
    parenthesised operand of a star, feedback or split is _PLPAR.  With a
    ``comments`` list, every comment (and every XML comment or declaration
    skipped where a definition may start) is appended to it as a COMMENT
    token when the lexer passes it.
    """
    pos = 0
    line = 1
    line_start = 0  # index of the first character of `line`
    end = len(text)
    match = _TOKEN_RE.match
    keywords = KEYWORDS
    operators = OPERATORS
    last_op = ""  # the last operator, so that only a "(" right after one of _BEFORE_PLPAR asks the parser
    while pos < end:
        m = match(text, pos)
        if m is None:
            raise LexicalError(f"unexpected character {text[pos]!r}", line, pos - line_start + 1)
        kind = m.lastgroup
        value = m.group()
        stop = m.end()
        if kind == "ws" or kind == "comment":
            if kind == "comment" and comments is not None:
                comments.append(_token("COMMENT", value, pos, line, line_start, text))
            newlines = value.count("\n")
            if newlines:
                line += newlines
                line_start = text.rfind("\n", pos, stop) + 1
            pos = stop
            continue
        column = pos - line_start + 1
        if kind == "name":
            yield Token(keywords.get(value, "NAME"), value, pos, line, column, line, column + len(value), stop)
        elif kind == "op":
            if value == "{" and rts and INLINE_OPEN_RE.match(text, pos):
                close = INLINE_CLOSE_RE.search(text, pos)
                if close is None:
                    raise LexicalError("unterminated inline box code (no '>>>' and '}' after '<<<')", line, column)
                value = text[pos:close.end()]
                yield _token("INLINE_CODE", value, pos, line, line_start, text)
                newlines = value.count("\n")
                if newlines:
                    line += newlines
                    line_start = text.rfind("\n", pos, close.end()) + 1
                pos = close.end()
                continue
            if value == "<" and stop < end and (text[stop] in "?!" or text[stop].isalpha()):
                skipped = _definition_level_markup(text, pos, parser_state, line, column)
                if skipped is not None:
                    kind, stop = skipped
                    value = text[pos:stop]
                    if kind == "METADATA":
                        yield _token("METADATA", value, pos, line, line_start, text)
                    elif comments is not None:
                        comments.append(_token("COMMENT", value, pos, line, line_start, text))
                    newlines = value.count("\n")
                    if newlines:
                        line += newlines
                        line_start = text.rfind("\n", pos, stop) + 1
                    pos = stop
                    continue
            kind = operators[value]
            if value == ">" and parser_state is not None and _comparison_here(parser_state, text, stop):
                kind = "GTCMP"
            elif value == "(" and rts and last_op in _BEFORE_PLPAR and parser_state is not None \
                    and _parser_takes(parser_state, "_PLPAR"):
                kind = "_PLPAR"  # a parenthesised pattern list or split tag (rts dialect)
            last_op = value
            yield Token(kind, value, pos, line, column, line, column + len(value), stop)
        elif kind == "int":
            if len(value) > 1 and value[0] == "0" and value[1] not in "xX" and not _is_octal(value):
                raise LexicalError(f"invalid octal literal '{value}'", line, column)
            if len(value) > _SHORT_LITERAL:
                problem = _long_literal_problem(value)
                if problem is not None:
                    raise LexicalError(problem, line, column)
            yield Token("INT", value, pos, line, column, line, column + len(value), stop)
        else:  # open_comment: a /* with no */ after it
            raise LexicalError("unterminated comment", line, column)
        pos = stop


_PREFIX = frozenset(("-", "!", "abs"))
# Operators that a parenthesised pattern list or split tag may follow (rts dialect); the
# parser state decides, since "*" and "!" are tag-expression operators too.
_BEFORE_PLPAR = frozenset(("*", "**", "\\", "!", "!!", "!@", "!!@"))


def _comparison_here(parser_state, text: str, pos: int) -> bool:
    """Is the ``>`` that ends before `pos` a comparison (language.md §3.4, the ``>`` rule)?

    It is when the parser, inside a tag-expression bracket, can take a
    comparison here, and the tokens after it begin an operand: after any
    prefix operators (``-``, ``!``, ``abs``), a number, a name other than a
    keyword, ``#`` or ``(``.  So ``<N > 0>`` and ``<N>0>`` compare, while
    the ``>`` of ``<n == 0> ! <k>`` closes its bracket: ``!`` there is
    followed by ``<``, which begins no operand.
    """
    if not _parser_takes(parser_state, "GTCMP"):
        return False
    end = len(text)
    while pos < end:
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            return False
        kind, value = m.lastgroup, m.group()
        pos = m.end()
        if kind == "ws" or kind == "comment":
            continue
        if kind == "int":
            return True
        if kind == "name":
            if value == "abs":
                continue
            return value not in KEYWORDS
        if kind == "op" and value in _PREFIX:
            continue
        return kind == "op" and value in ("#", "(")
    return False


def _parser_takes(parser_state, terminal: str) -> bool:
    """Would the LALR parser shift `terminal` next (after the reductions it makes first)?

    LALR merges the lookaheads of states with the same core, so the current
    state alone may list a terminal that a reduction would then refuse; this
    runs the reductions on a copy of the state stack, without building values.
    """
    try:
        states = parser_state.parse_conf.states
        entry = states[parser_state.state_stack[-1]].get(terminal)
        if entry is None or entry[0].name == "Shift":  # the usual answers, without copying the stack
            return entry is not None
        stack = list(parser_state.state_stack)
        while True:
            entry = states[stack[-1]].get(terminal)
            if entry is None:
                return False
            action, arg = entry
            if action.name == "Shift":
                return True
            size = len(arg.expansion)
            if size:
                del stack[-size:]
            stack.append(states[stack[-1]][arg.origin.name][1])
    except (AttributeError, KeyError, IndexError, TypeError):  # another lark version
        return False


# Python converts an int to and from decimal text of at most sys.get_int_max_str_digits()
# digits (never set below 640); a literal this short is within the limit in any base.
_SHORT_LITERAL = 500


def _long_literal_problem(text: str) -> str | None:
    """Why the integer literal `text` cannot be taken, or None.

    A value of more decimal digits than the interpreter converts could be
    neither read from decimal text nor written in any message, output tag
    or printed program, so such a literal is refused here, where its
    position is known, whatever its base.
    """
    try:
        str(int_value(text))
    except ValueError:
        limit = sys.get_int_max_str_digits()
        return (f"integer literal too long: its value has more than {limit} decimal digits, "
                f"the most this Python converts")
    return None


def _is_octal(text: str) -> bool:
    return all(c in "01234567" for c in text)


def _definition_level_markup(text: str, pos: int, parser_state, line: int, column: int):
    """Markup where a definition may start: ``("METADATA", end)``, ``("skip", end)`` or None.

    A metadata block in any of its forms is one token.  An XML declaration
    ``<?xml ...?>`` and an XML comment ``<!-- ... -->`` are skipped like
    comments, as the early S-Net files write them around metadata.
    Anywhere else (``{<metadata>}``, ``<!x>`` in a guard) the ``<`` is an
    ordinary operator, so None.
    """
    m = METADATA_OPEN_RE.match(text, pos)
    if m is None and not text.startswith(("<?", "<!--"), pos):
        return None
    if not _metadata_allowed(parser_state):
        return None
    if m is None:
        opener, closer, what = ("<?", "?>", "XML declaration") if text[pos + 1] == "?" else \
            ("<!--", "-->", "XML comment")
        close = text.find(closer, pos + len(opener))
        if close < 0:
            raise LexicalError(f"unterminated {what}", line, column)
        return "skip", close + len(closer)
    prefix = m.group("prefix")
    closing = re.compile(rf"</{re.escape(prefix) + ':' if prefix else ''}metadata\s*>")
    found = closing.search(text, m.end())
    if found is None:
        raise LexicalError("unterminated metadata block", line, column)
    return "METADATA", found.end()


def _metadata_allowed(parser_state) -> bool:
    if parser_state is None:
        return True
    try:
        return "METADATA" in parser_state.parse_conf.parse_table.states[parser_state.position]
    except (AttributeError, KeyError, IndexError):  # another lark version: be permissive
        return True


def _token(kind: str, value: str, pos: int, line: int, line_start: int, text: str) -> Token:
    column = pos - line_start + 1
    stop = pos + len(value)
    last_nl = value.rfind("\n")
    if last_nl < 0:
        end_line, end_column = line, column + len(value)
    else:
        end_line, end_column = line + value.count("\n"), len(value) - last_nl
    return Token(kind, value, pos, line, column, end_line, end_column, stop)
