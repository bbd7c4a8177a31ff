"""Source text, positions and the rendering of positioned messages.

Every user-facing message about a `.snet` file goes through :func:`render`, so
that all of them share one form::

    net.snet:5:16: error: unexpected '|'
      } connect f .. | g;
                     ^

Lines and columns are 1-based and counted in characters (a tab is one column),
as the language reference requires.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, eq=False)
class Source:
    """One `.snet` text and the name it is reported under."""

    name: str
    text: str
    _lines: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        # Lines end at "\n" only, as the lexer counts them ("\r" before it is dropped);
        # str.splitlines would also break at form feeds and other separators.
        lines = self.text.split("\n")
        object.__setattr__(self, "_lines", tuple(line[:-1] if line.endswith("\r") else line for line in lines))

    def line(self, number: int) -> str:
        """The text of 1-based line `number`, or '' past the end."""
        if 1 <= number <= len(self._lines):
            return self._lines[number - 1]
        return ""


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source: start and (inclusive) end, 1-based."""

    source: Source = field(compare=False, repr=False)
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    @property
    def location(self) -> str:
        """`FILE:LINE:COL`, the prefix of every positioned message."""
        return f"{self.source.name}:{self.line}:{self.column}"

    def __str__(self) -> str:
        return self.location


# A source line longer than this is shown as a window of this many characters
# around the column, cut ends marked with "...".  Shorter lines are shown whole.
EXCERPT_WIDTH = 100
_CUT = "..."


def render(span: Span | None, severity: str, message: str) -> str:
    """Format a message with its position, the source line and a caret.

    A line longer than :data:`EXCERPT_WIDTH` characters is cut to a window
    of that many characters around the column, each cut end marked with
    ``...``; the caret stays under the character the column counts.

    Args:
        span: where the message points; None for a message with no position.
        severity: "error" or "warning".
        message: the text after the severity.

    Returns:
        The message, possibly over three lines, without a trailing newline.
    """
    if span is None:
        return f"{severity}: {message}"
    head = f"{span.location}: {severity}: {message}"
    text = span.source.line(span.line)
    if not text:
        return head
    shown, pad = excerpt(text, span.column)
    return f"{head}\n  {shown}\n  {pad}^"


def excerpt(text: str, column: int, width: int = EXCERPT_WIDTH) -> tuple[str, str]:
    """The part of line `text` to show for 1-based `column`, and the padding before its caret.

    A line of at most `width` characters is shown whole.  A longer one is
    cut to `width` characters with the column near the middle (or the
    line's first or last `width` characters near its ends), and each cut end
    gets ``...``.  The padding keeps tabs, so that the caret lines up in a
    terminal that expands them, and gives a wide character two spaces and a
    combining mark none.
    """
    at = min(max(column - 1, 0), len(text))
    if len(text) <= width:
        return text, _pad(text[:at])
    start = max(0, min(at - width // 2, len(text) - width))
    end = start + width
    head = _CUT if start > 0 else ""
    tail = _CUT if end < len(text) else ""
    return head + text[start:end] + tail, " " * len(head) + _pad(text[start:at])


def _pad(before: str) -> str:
    if before.isascii():
        return "".join("\t" if ch == "\t" else " " for ch in before)
    return "".join(_blank(ch) for ch in before)


def _blank(ch: str) -> str:
    if ch == "\t":
        return "\t"
    if unicodedata.combining(ch):
        return ""
    return "  " if unicodedata.east_asian_width(ch) in ("W", "F") else " "
