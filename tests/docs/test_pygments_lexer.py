"""The Pygments lexer of ``.snet`` files: no Error token in any program of the repository or the docs.

Every ``.snet`` file of the repository is tokenized, except the three whose
point is a character the language's own lexer refuses; so is every
```` ```snet ```` block of the docs and the README.  ``pygmentize`` (run as
``python -m pygments``) loads the lexer and highlights a file with it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pygments = pytest.importorskip("pygments", reason="the lexer is a Pygments plug-in")
from pygments.token import Comment, Error, Keyword, Name  # noqa: E402

from snet.syntax.pygments_lexer import SNetLexer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# Their text holds what the language's lexer rejects on purpose: '$', an unclosed '"' or '<!--'.
LEXICALLY_BROKEN = {"lex_bad_character.snet", "metadata_unterminated_attribute.snet",
                    "metadata_unterminated_comment.snet"}


def repository_files() -> list[Path]:
    try:
        names = subprocess.run(["git", "ls-files", "*.snet"], cwd=ROOT, capture_output=True, text=True, check=True,
                               timeout=60).stdout.split()
        return [ROOT / n for n in names]
    except (OSError, subprocess.SubprocessError):
        return sorted(p for p in ROOT.rglob("*.snet") if "build" not in p.relative_to(ROOT).parts)


def errors(text: str) -> list[tuple[int, str]]:
    return [(i, v) for i, kind, v in SNetLexer().get_tokens_unprocessed(text) if kind in Error]


@pytest.mark.parametrize("path", [p for p in repository_files() if p.name not in LEXICALLY_BROKEN],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_program_tokenizes_without_errors(path):
    assert errors(path.read_text(encoding="utf-8-sig")) == []


def test_every_snet_block_of_the_docs_tokenizes_without_errors():
    blocks = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        blocks += [(page.name, b) for b in re.findall(r"```snet\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]
    assert len(blocks) >= 40
    assert [(name, errors(b)) for name, b in blocks if errors(b)] == []


def test_the_tokens_are_what_they_look_like():
    tokens = [(kind, v) for kind, v in SNetLexer().get_tokens(
        "// c\n<metadata><box name=\"f\"/></metadata>\nnet n ({<#k>} -> {x}) connect f !! <k>;\n")
        if v.strip()]
    assert tokens[0] == (Comment.Single, "// c")
    assert (Name.Attribute, "name") in tokens
    assert (Keyword.Declaration, "net") in tokens and (Name.Function, "n") in tokens
    assert (Name.Variable.Class, "<#k>") in tokens and (Name.Variable, "<k>") in tokens
    assert (Keyword, "connect") in tokens
    assert errors("net n connect f $ g;") == [(16, "$")]  # what the language refuses stays visible


def test_pygmentize_highlights_a_file_with_it(tmp_path):
    lexer = ROOT / "snet" / "syntax" / "pygments_lexer.py"
    result = subprocess.run([sys.executable, "-m", "pygments", "-x", "-l", f"{lexer}:SNetLexer", "-f", "html",
                             str(ROOT / "docs" / "tutorial" / "wordstats.snet")], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert '<span class="kd">net</span>' in result.stdout and '<span class="err">' not in result.stdout
