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


def render(span: Span | None, severity: str, message: str) -> str:
    """Format a message with its position, the source line and a caret.

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
    # Keep tabs so that the caret lines up in a terminal that expands them.
    pad = "".join("\t" if ch == "\t" else " " for ch in text[: span.column - 1])
    return f"{head}\n  {text}\n  {pad}^"
