"""A Pygments lexer for S-Net (``.snet``), for the ```` ```snet ```` blocks of the docs.

Registered as the ``pygments.lexers`` entry point ``snet`` (setup.py), so an
installed snet makes ``pygmentize -l snet FILE`` and any Pygments-based
documentation tool highlight S-Net.  It follows the lexer of
:mod:`snet.syntax.lexer` (language.md §2): ``//`` and ``/* */`` comments,
keywords, tags ``<t>`` and binding tags ``<#t>``, integer literals, the
operators longest first, metadata blocks read as XML, and the rts dialect's
inline box code ``{<<< python | ... >>>}`` highlighted as Python.  Pygments
is imported only by whoever uses the lexer: the compiler does not need it.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, using, words  # type: ignore[import-untyped]
from pygments.lexers.python import PythonLexer  # type: ignore[import-untyped]
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace  # type: ignore[import-untyped]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_METADATA_END = r"</(?:[A-Za-z_][\w.-]*:)?metadata\s*>"


class SNetLexer(RegexLexer):
    """S-Net coordination programs (both dialects)."""

    name = "S-Net"
    aliases = ["snet", "s-net"]
    filenames = ["*.snet"]
    mimetypes = ["text/x-snet"]

    tokens = {
        "root": [
            (r"[ \t\r\n\f]+", Whitespace),
            (r"//[^\n]*", Comment.Single),
            (r"/\*[\s\S]*?\*/", Comment.Multiline),
            (r"<!--[\s\S]*?-->", Comment.Multiline),
            (r"<\?[\s\S]*?\?>", Comment.Preproc),
            (rf"<(?:{_NAME}:)?metadata(?=[\s>])(?=[\s\S]*?{_METADATA_END})", Name.Tag, "metadata"),
            (r"(\{\s*<<<)(\s*python\s*)(\|)([\s\S]*?)(>>>\s*\})",
             bygroups(Punctuation, Name.Builtin, Punctuation, using(PythonLexer), Punctuation)),
            (r"(\{\s*<<<)([^|]*)(\|)([\s\S]*?)(>>>\s*\})",  # another language's code: shown as is
             bygroups(Punctuation, Name.Builtin, Punctuation, String.Other, Punctuation)),
            (rf"\b(net|box)(\s+)({_NAME})", bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            (rf"\b(type|typesig)(\s+)({_NAME})", bygroups(Keyword.Declaration, Whitespace, Name.Class)),
            (words(("connect", "if", "then", "else"), suffix=r"\b"), Keyword),
            (words(("abs", "min", "max"), suffix=r"\b"), Name.Builtin),
            (rf"<#{_NAME}>", Name.Variable.Class),  # a binding tag
            (rf"<{_NAME}>", Name.Variable),  # a tag
            (_NAME, Name),
            (r"0[xX][0-9a-fA-F]+", Number.Hex),
            (r"0[0-7]+", Number.Oct),
            (r"[0-9]+", Number.Integer),
            (r"!!@|\.\.\.|->|\.\.|\|\||\*\*|!!|!@|==|!=|<=|>=|&&|[<>|*!@\\#?+\-/%=]", Operator),
            (r"\[\||\|\]|[()\[\]{},;:]", Punctuation),
        ],
        "metadata": [
            (_METADATA_END, Name.Tag, "#pop"),
            (r"<!--[\s\S]*?-->", Comment.Multiline),
            (r"[ \t\r\n\f]+", Whitespace),
            (r"</?[\w.:-]+", Name.Tag),
            (r"/?>", Name.Tag),
            (r"[\w.:-]+(?=\s*=)", Name.Attribute),
            (r"=", Operator),
            (r'"[^"]*"|\'[^\']*\'', String),
            (r"[^<>\"'=\s]+", Text),
        ],
    }
