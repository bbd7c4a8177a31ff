"""Parse the inside of a metadata block (language.md §3.5).

A metadata block arrives from the lexer as one token, ``<metadata>`` to
``</metadata>``.  Its content is a small XML subset: elements with quoted
attributes, self-closing or with either trimmed text or child elements,
and ``<!-- ... -->`` comments between elements.  S-Net comments do not apply
inside.  A small recursive-descent reader is enough and keeps the positions
exact for error messages.
"""

from __future__ import annotations

import re

from snet.source import Source, Span
from snet.syntax.ast import Metadata, MetaElement
from snet.syntax.lexer import METADATA_OPEN_RE

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*")
_SPACE = re.compile(r"\s*")
_ENTITIES = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&apos;": "'"}
_ENTITY_RE = re.compile(r"&(lt|gt|amp|quot|apos);")


class MetadataError(Exception):
    """A malformed metadata block; ``offset`` is the index in the whole source text."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.message = message
        self.offset = offset


def decode(text: str) -> str:
    return _ENTITY_RE.sub(lambda m: _ENTITIES[m.group()], text)


class _Reader:
    def __init__(self, text: str, base: int, source: Source, line_of):
        self.text = text
        self.pos = 0
        self.base = base  # offset of text[0] in the source
        self.source = source
        self.line_of = line_of  # offset -> (line, column)

    def error(self, message: str, at: int | None = None) -> MetadataError:
        return MetadataError(message, self.base + (self.pos if at is None else at))

    def span(self, at: int) -> Span:
        line, column = self.line_of(self.base + at)
        return Span(self.source, line, column, line, column)

    def skip(self) -> None:
        """Whitespace and XML comments."""
        while True:
            space = _SPACE.match(self.text, self.pos)
            self.pos = space.end() if space is not None else self.pos  # (\s* matches everywhere)
            if self.text.startswith("<!--", self.pos):
                close = self.text.find("-->", self.pos + 4)
                if close < 0:
                    raise self.error("unterminated XML comment in metadata")
                self.pos = close + 3
            else:
                return

    def key(self) -> str:
        m = _KEY.match(self.text, self.pos)
        if m is None:
            raise self.error("expected a metadata key")
        self.pos = m.end()
        return m.group()

    def expect(self, literal: str) -> None:
        if not self.text.startswith(literal, self.pos):
            raise self.error(f"expected '{literal}' in metadata")
        self.pos += len(literal)

    def text_content(self, key: str, start: int) -> str:
        """Text up to the closing tag, without the comments in it."""
        parts = []
        while True:
            close = self.text.find("<", self.pos)
            if close < 0:
                raise self.error(f"element <{key}> is not closed in metadata", start)
            parts.append(self.text[self.pos:close])
            self.pos = close
            if not self.text.startswith("<!--", close):
                return "".join(parts).strip()
            end = self.text.find("-->", close + 4)
            if end < 0:
                raise self.error("unterminated XML comment in metadata")
            self.pos = end + 3

    def elements(self) -> list[MetaElement]:
        """Elements up to (not including) the next closing tag ``</``."""
        out: list[MetaElement] = []
        while True:
            self.skip()
            if self.text.startswith("</", self.pos) or self.pos >= len(self.text):
                return out
            if not self.text.startswith("<", self.pos):
                raise self.error("text is not allowed here in metadata")
            out.append(self.element())

    def element(self) -> MetaElement:
        start = self.pos
        self.expect("<")
        key = self.key()
        attributes: list[tuple[str, str]] = []
        while True:
            self.skip()
            if self.text.startswith("/>", self.pos):
                self.pos += 2
                return MetaElement(key, tuple(attributes), "", (), self.span(start))
            if self.text.startswith(">", self.pos):
                self.pos += 1
                break
            name = self.key()
            self.skip()
            self.expect("=")
            self.skip()
            quote = self.text[self.pos:self.pos + 1]
            if quote not in ("'", '"'):
                raise self.error("expected a quoted attribute value in metadata")
            close = self.text.find(quote, self.pos + 1)
            if close < 0:
                raise self.error("unterminated attribute value in metadata")
            attributes.append((name, decode(self.text[self.pos + 1:close])))
            self.pos = close + 1
        # Content: text or child elements (comments allowed around and between them).
        save = self.pos
        self.skip()
        children: tuple[MetaElement, ...]
        if self.text.startswith("</", self.pos):  # empty, or only comments
            text, children = "", ()
        elif self.text.startswith("<", self.pos):
            children = tuple(self.elements())
            text = ""
        else:
            self.pos = save
            text = decode(self.text_content(key, start))
            children = ()
        at = self.pos
        self.expect("</")
        closing = self.key()
        if closing != key:
            raise self.error(f"closing key </{closing}> does not match <{key}> in metadata", at)
        self.skip()
        self.expect(">")
        return MetaElement(key, tuple(attributes), text, children, self.span(start))


def parse_metadata(block: str, offset: int, source: Source, line_of) -> Metadata:
    """Parse a whole ``<metadata>...</metadata>`` token that starts at `offset`.

    Args:
        block: the token text.
        offset: its index in the source text.
        source: the source, for spans.
        line_of: maps a source offset to ``(line, column)``.

    Raises:
        MetadataError: with the offset of the problem.
    """
    opening = METADATA_OPEN_RE.match(block)
    if opening is None:  # the lexer makes a METADATA token only where the opening tag is
        raise MetadataError("a metadata block starts with <metadata> or <PREFIX:metadata>", offset)
    inner_start = opening.end()
    inner_end = block.rfind("</")
    reader = _Reader(block[:inner_end], offset, source, line_of)
    reader.pos = inner_start
    elements = reader.elements()
    if reader.pos < inner_end:
        raise reader.error("unexpected closing tag in metadata")
    prefix = opening.group("prefix")
    if prefix:  # <snet:metadata>: the elements inside may carry the same prefix
        elements = [_unprefixed(e, prefix + ":") for e in elements]
    line, column = line_of(offset)
    return Metadata(tuple(elements), Span(source, line, column, line, column))


def _unprefixed(element: MetaElement, prefix: str) -> MetaElement:
    key = element.key[len(prefix):] if element.key.startswith(prefix) else element.key
    return MetaElement(key, element.attributes, element.text,
                       tuple(_unprefixed(c, prefix) for c in element.children), element.span)
