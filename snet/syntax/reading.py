"""Reading a `.snet` file: its bytes to the text the parser takes.

A program is UTF-8 text; a UTF-8 byte-order mark at its start is skipped.
Bytes that are not UTF-8 are an error in the program like any other
(interfaces.md §1): positioned by line and column, with the source line and
a caret, not a byte offset into the file.  The line is shown with each
undecodable byte replaced by U+FFFD, and the column counts characters up to
the first bad byte, as the lexer counts them.

Rejected: decoding with ``errors="replace"`` and going on would parse a
program other than the one written (a replaced byte inside a comment would
pass unnoticed, one inside a name would become a stray character), so the
first bad byte stops the compilation.
"""

from __future__ import annotations

import os
from pathlib import Path

from snet.errors import Diagnostic, SNetSyntaxError
from snet.source import Source, Span

_BOM = b"\xef\xbb\xbf"


def read_program(path: str | os.PathLike) -> str:
    """The text of the `.snet` file at `path`.

    Raises:
        OSError: the file cannot be read (the caller words this error).
        SNetSyntaxError: the file is not UTF-8, positioned at the first bad byte.
    """
    return decode_program(Path(path).read_bytes(), os.fspath(path))


def decode_program(data: bytes, name: str) -> str:
    """`data` decoded as a program reported under `name`; see :func:`read_program`."""
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(data, name, exc) from None


def _not_utf8(data: bytes, name: str, exc: UnicodeDecodeError) -> SNetSyntaxError:
    before = data[:exc.start].decode("utf-8")  # valid: the decoder stopped at the first bad byte
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    bad = data[exc.start:exc.end]
    shown = " ".join(f"0x{b:02x}" for b in bad)
    what = "byte" if len(bad) == 1 else "bytes"
    source = Source(name, data.decode("utf-8", errors="replace"))
    message = f"invalid UTF-8 ({what} {shown}: {exc.reason}); a .snet file must be UTF-8 text"
    return SNetSyntaxError([Diagnostic("error", Span(source, line, column, line, column), message)])
