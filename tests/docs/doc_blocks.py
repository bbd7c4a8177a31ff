"""Reading the fenced code blocks of a Markdown page, for the tests of docs/.

A block is opened by a line of three backticks at the start of a line, with
an optional info string (``console``, ``snet``, ``console unordered``...), and
closed by the next line of three backticks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

FENCE = re.compile(r"^```(.*)$")


@dataclass
class Block:
    info: list[str]  # the words of the info string: ["console", "unordered"]
    text: str
    line: int  # of the opening fence, 1-based

    @property
    def kind(self) -> str:
        return self.info[0] if self.info else ""


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"{path.name}:{start + 1}: unclosed code block"
        found.append(Block(m.group(1).split(), "\n".join(body) + "\n", start + 1))
        i += 1
    return found


@dataclass
class Command:
    command: str
    output: list[str] = field(default_factory=list)
    unordered: bool = False
    line: int = 0

    def __str__(self) -> str:
        return f"line {self.line}: $ {self.command}"


def console_commands(path: Path) -> list[Command]:
    """The ``$ command`` lines of the ``console`` blocks, each with the output shown under it."""
    commands: list[Command] = []
    for block in blocks(path):
        if block.kind != "console":
            continue
        current: Command | None = None
        for offset, line in enumerate(block.text.splitlines(), 1):
            if line.startswith("$ "):
                current = Command(line[2:], unordered="unordered" in block.info, line=block.line + offset)
                commands.append(current)
            else:
                assert current is not None, f"{path.name}:{block.line}: a console block starts with '$ '"
                current.output.append(line)
    return commands


def normalised(text: str) -> list[str]:
    """Lines without trailing blanks, without blank lines at the end."""
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines
