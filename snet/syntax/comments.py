"""What the printer keeps of a text besides its AST: comments, blank lines, metadata as written.

The parser drops comments; :func:`collect_trivia` puts them back in place
from the tokens the lexer recorded (``parse(..., tokens=...)``).  Each
comment is attached to a definition, at the level of definitions it sits in:

* a comment on the last line of a definition, after it, is **trailing**:
  it stays at the end of that line;
* a comment on lines of its own (or before a definition on its line) goes
  **before** the next definition, or to the **end** of its list of
  definitions (the file, or the braces of a net) when none follows;
* a comment inside a definition (its signature, its connect expression)
  is **hoisted** to the line above the definition, since the printer lays
  expressions out anew; one between a net's closing ``}`` and the end of
  its connect expression goes on the lines between ``}`` and ``connect``,
  and one on the line of a net's ``{`` or ``}``, after it, stays there.

A blank line (or several) before a definition or an own-line comment is
kept as one blank line.  Metadata blocks are printed as written, with their
lines moved to the new indentation: comments and layout inside them stay.
Inline box code (rts dialect) is printed exactly as written, from its
``{`` to its ``}``: its language part may hold a comment, and its code's
indentation is the code's own.

Comment texts keep their own lines; a block comment's later lines move with
its first.  All of this is a fixed point: the printed text, parsed again,
gives the same attachments, so formatting twice changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from snet.syntax import ast

_OPENERS = frozenset(("_LPAR", "_PLPAR", "LBRACK", "LBRACE", "LSYNC"))
_CLOSERS = frozenset(("_RPAR", "RBRACK", "_RBRACE", "_RSYNC"))


@dataclass
class Comment:
    """A comment as written, its 1-based column, and whether a blank line came before it."""

    text: str
    column: int
    blank_before: bool = False


@dataclass
class DefinitionTrivia:
    """The comments around and inside one definition."""

    before: list[Comment] = field(default_factory=list)
    blank_before: bool = False
    hoisted: list[Comment] = field(default_factory=list)
    trailing: list[str] = field(default_factory=list)
    after_brace: list[Comment] = field(default_factory=list)
    open_trailing: list[str] = field(default_factory=list)  # on a net's "{" line
    close_trailing: list[str] = field(default_factory=list)  # on a net's "}" line
    inner: BlockTrivia | None = None  # a net's local definitions
    verbatim: str | None = None  # a metadata block, or a box's inline code, as written
    verbatim_column: int = 1


@dataclass
class BlockTrivia:
    """The trivia of a list of definitions (one per definition), and the comments after the last."""

    definitions: list[DefinitionTrivia]
    end: list[Comment] = field(default_factory=list)

    @classmethod
    def bare(cls, count: int) -> BlockTrivia:
        return cls([DefinitionTrivia() for _ in range(count)])


def reindent(text: str, pad: str, column: int | None = None) -> list[str]:
    """The lines of `text` (a comment or metadata block first written at `column`), moved to `pad`.

    Later lines lose up to ``column - 1`` leading spaces and gain `pad`, so
    they keep their indentation relative to the first; trailing blanks go.
    """
    lines = text.split("\n")
    out = [pad + lines[0].rstrip()]
    cut = (column or 1) - 1
    for rest in lines[1:]:
        rest = rest.rstrip()
        if not rest:
            out.append("")
            continue
        stripped = rest.lstrip(" ")
        lost = len(rest) - len(stripped)
        out.append(pad + " " * max(lost - cut, 0) + stripped)
    return out


def collect_trivia(program: ast.Program, tokens: list, text: str) -> BlockTrivia:
    """The trivia of `program`, from the `tokens` its parse recorded over `text`."""
    toks = [t for t in tokens if t.type != "COMMENT"]
    comments = [t for t in tokens if t.type == "COMMENT"]
    return _Collector(toks, text).block(program.definitions, 0, len(toks), comments, 0)


@dataclass
class _Extent:
    first: int  # token indexes, inclusive
    last: int
    braces: tuple[int, int] | None = None  # the "{" and "}" around a net's local definitions


class _Collector:
    def __init__(self, toks: list, text: str) -> None:
        self.toks = toks
        self.text = text

    def _blank_between(self, start: int, stop: int) -> bool:
        return self.text.count("\n", start, stop) >= 2

    def block(self, definitions, lo: int, hi: int, comments: list, region_start: int) -> BlockTrivia:
        """Attach `comments` (all between token `lo` and `hi`) to `definitions`."""
        extents = self.split(lo, hi)
        if len(extents) != len(definitions):
            raise RuntimeError(f"formatter: {len(extents)} definitions in the tokens, {len(definitions)} parsed")
        trivia = BlockTrivia([DefinitionTrivia() for _ in definitions])
        inner_comments: list[list] = [[] for _ in definitions]
        toks = self.toks
        previous_end = region_start  # the end of the last thing placed at this level
        k = 0  # the next definition not yet passed
        for c in comments:
            while k < len(extents) and toks[extents[k].last].end_pos <= c.start_pos:
                e = extents[k]
                trivia.definitions[k].blank_before = self._blank_between(previous_end, toks[e.first].start_pos)
                previous_end = toks[e.last].end_pos
                k += 1
            comment = Comment(c.value, c.column)
            if k < len(extents) and toks[extents[k].first].start_pos < c.start_pos:
                self._inside(extents[k], trivia.definitions[k], inner_comments[k], c, comment)
                continue
            if k > 0 and toks[extents[k - 1].last].end_line == c.line:
                trivia.definitions[k - 1].trailing.append(c.value.rstrip())
                previous_end = c.end_pos
                continue
            comment.blank_before = self._blank_between(previous_end, c.start_pos)
            previous_end = c.end_pos
            (trivia.definitions[k].before if k < len(extents) else trivia.end).append(comment)
        for k in range(k, len(extents)):
            trivia.definitions[k].blank_before = self._blank_between(previous_end, toks[extents[k].first].start_pos)
            previous_end = toks[extents[k].last].end_pos
        for d, e, t, inner in zip(definitions, extents, trivia.definitions, inner_comments):
            if isinstance(d, ast.Metadata):
                t.verbatim, t.verbatim_column = toks[e.first].value, toks[e.first].column
            elif isinstance(d, ast.BoxDecl) and d.inline is not None:
                t.verbatim = next(tok.value for tok in toks[e.first:e.last + 1] if tok.type == "INLINE_CODE")
            if e.braces is not None and isinstance(d, ast.NetDef) and d.definitions is not None:
                opening, closing = e.braces
                t.inner = self.block(d.definitions, opening + 1, closing, inner, toks[opening].end_pos)
        return trivia

    def _inside(self, e: _Extent, t: DefinitionTrivia, inner: list, c, comment: Comment) -> None:
        """A comment within a definition's tokens: in its braces, after them, or hoisted."""
        toks = self.toks
        if e.braces is not None:
            opening, closing = toks[e.braces[0]], toks[e.braces[1]]
            if opening.end_pos <= c.start_pos < closing.start_pos:
                if c.line == opening.end_line and toks[e.braces[0] + 1].start_pos > c.start_pos:
                    t.open_trailing.append(c.value.rstrip())
                else:
                    inner.append(c)
                return
            if c.start_pos > closing.start_pos:
                if c.line == closing.line and toks[e.braces[1] + 1].start_pos > c.start_pos:
                    t.close_trailing.append(c.value.rstrip())
                else:
                    t.after_brace.append(comment)
                return
        t.hoisted.append(comment)

    def split(self, lo: int, hi: int) -> list[_Extent]:
        """The extents of the definitions made of tokens `lo` to `hi` (exclusive)."""
        toks = self.toks
        extents = []
        i = lo
        while i < hi:
            if toks[i].type == "METADATA":
                extents.append(_Extent(i, i))
                i += 1
                continue
            extent = _Extent(i, i)
            is_net = toks[i].type == "_NET"
            depth = 0
            connect = False
            opening = None  # the "{" of a net's local definitions
            j = i
            while j < hi:
                kind = toks[j].type
                if kind == "_CONNECT" and depth == 0:
                    connect = True
                elif kind in _OPENERS:
                    if kind == "LBRACE" and depth == 0 and is_net and not connect and opening is None:
                        opening = j
                    depth += 1
                elif kind in _CLOSERS:
                    depth -= 1
                    if depth == 0 and opening is not None and extent.braces is None:
                        extent.braces = (opening, j)
                elif kind == "_SEMI" and depth == 0:
                    break
                elif kind == "INLINE_CODE" and depth == 0:
                    if j + 1 < hi and toks[j + 1].type == "_SEMI":
                        j += 1
                    break
                j += 1
            extent.last = min(j, hi - 1)
            extents.append(extent)
            i = extent.last + 1
        return extents


def definition_extents(program: ast.Program, tokens: list) -> list[tuple[object, int, int]]:
    """``(definition, start, end)`` text offsets of every definition, local ones after their net's."""
    toks = [t for t in tokens if t.type != "COMMENT"]
    collector = _Collector(toks, "")
    out: list[tuple[object, int, int]] = []

    def walk(definitions, lo: int, hi: int) -> None:
        for d, e in zip(definitions, collector.split(lo, hi)):
            out.append((d, toks[e.first].start_pos, toks[e.last].end_pos))
            if e.braces is not None and isinstance(d, ast.NetDef) and d.definitions:
                walk(d.definitions, e.braces[0] + 1, e.braces[1])

    walk(program.definitions, 0, len(toks))
    return out
