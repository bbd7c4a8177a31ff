"""``snet fmt``'s core: S-Net text to the same program in the canonical layout.

:func:`format_text` parses the text (recording its tokens and comments),
collects what the AST does not hold (:mod:`snet.syntax.comments`) and
prints the program with it (:mod:`snet.syntax.printer`).  The result parses
to an equal AST, keeps every comment and metadata block, and is a fixed
point: formatting it again gives it back unchanged.  A text that does not
parse raises :class:`~snet.errors.SNetSyntaxError`, positioned, before
anything is printed; one nested too deeply for the printer's recursion
raises :class:`~snet.errors.SNetCompileError`.
"""

from __future__ import annotations

from snet.errors import Diagnostic, SNetCompileError
from snet.syntax.comments import collect_trivia
from snet.syntax.parser import parse
from snet.syntax.printer import format_program


def format_text(text: str, filename: str = "<string>", dialect: str = "standard") -> str:
    """`text` in the canonical layout (``dialect``: ``"standard"`` or ``"rts"``)."""
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark, as the compiler skips it
    text = text.replace("\r\n", "\n")  # lines end in "\n" only
    tokens: list = []
    program = parse(text, filename, dialect=dialect, tokens=tokens)
    try:
        return format_program(program, collect_trivia(program, tokens, text))
    except RecursionError:  # the printer recurses over the expression tree, as the compiler's passes do
        raise SNetCompileError([Diagnostic("error", None, f"{filename}: the program is nested too deeply "
                                                          "to format")]) from None
