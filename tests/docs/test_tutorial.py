"""docs/tutorial.md, README.md and docs/cli.md show what their commands really print.

Every ``$ command`` of a ``console`` block in the tutorial (and in the
README, whose first example is the tutorial's step 2, and in cli.md, whose
examples use the tutorial's files) is run in a copy
of ``docs/tutorial/`` (``snet`` and ``python3`` stand for this checkout's
``python3 -m snet`` and interpreter), and its output, standard error merged
in as on a terminal, must equal the lines shown under it; in a block marked
``console unordered`` as a multiset, for networks that promise no order.  A
command whose shown output has an ``error:`` line must fail (``snet check``
with exit status 2, others with 1 or 2), every other one must succeed.  The program and Python listings of the page must be the
files' own text, so the pages cannot drift from the files either.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doc_blocks import DOCS, ROOT, blocks, console_commands, normalised

TUTORIAL = DOCS / "tutorial.md"
README = ROOT / "README.md"
FILES = DOCS / "tutorial"
COMMANDS = console_commands(TUTORIAL)
README_COMMANDS = console_commands(README)
CLI_COMMANDS = console_commands(DOCS / "cli.md")

# The shell the commands run in: `snet` and `python3` are this checkout's.
PRELUDE = f"""
snet() {{ {shlex.quote(sys.executable)} -m snet "$@"; }}
python3() {{ {shlex.quote(sys.executable)} "$@"; }}
"""


def test_the_tutorial_shows_commands_of_every_kind():
    shown = [c.command.split()[:2] for c in COMMANDS]
    for kind in (["snet", "run"], ["snet", "check"], ["snet", "graph"], ["python3", "embed.py"]):
        assert kind in shown, f"the tutorial shows no '{' '.join(kind)}' command"
    assert len(COMMANDS) >= 10
    assert README_COMMANDS, "the README shows no command of its first example"
    assert len(CLI_COMMANDS) >= 4


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    target = tmp_path / "tutorial"
    shutil.copytree(FILES, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.mark.parametrize("command", COMMANDS + README_COMMANDS + CLI_COMMANDS,
                         ids=[f"tutorial-line{c.line}" for c in COMMANDS] + [f"README-line{c.line}" for c in README_COMMANDS]
                         + [f"cli-line{c.line}" for c in CLI_COMMANDS])
def test_command_prints_what_the_page_shows(command, workdir):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(["bash", "-c", PRELUDE + command.command], cwd=workdir, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    actual, expected = normalised(done.stdout), normalised("\n".join(command.output))
    if command.unordered:
        assert sorted(actual) == sorted(expected), f"{command}\n{done.stdout}"
    else:
        assert actual == expected, f"{command}\n{done.stdout}"
    if any("error:" in line for line in expected):
        # a check fails before anything runs (2); a run may fail on the way (1)
        allowed = (2,) if command.command.startswith("snet check") else (1, 2)
        assert done.returncode in allowed, f"{command}: exit status {done.returncode}"
    else:
        assert done.returncode == 0, f"{command}: exit status {done.returncode}\n{done.stdout}"
    words = shlex.split(command.command)
    if "-o" in words:  # the file it writes is there and not empty
        written = workdir / words[words.index("-o") + 1]
        assert written.is_file() and written.stat().st_size > 0, f"{command}: wrote no {written.name}"


@pytest.mark.parametrize("page", [TUTORIAL, README], ids=["tutorial", "README"])
def test_listings_are_the_files_text(page):
    """Each snet and python listing of the page is a whole file of docs/tutorial/ or a part of one.

    A listing fenced as ``python sketch`` is an outline with names left to the
    reader, not a program, and is not held to this.
    """
    texts = {p.name: p.read_text(encoding="utf-8") for p in FILES.iterdir() if p.suffix in (".snet", ".py")}
    listings = [b for b in blocks(page) if b.kind in ("snet", "python") and "sketch" not in b.info]
    assert len(listings) >= (8 if page == TUTORIAL else 2)
    for block in listings:
        assert any(block.text in text for text in texts.values()), \
            f"{page.name}:{block.line}: this listing is in no file of docs/tutorial/"


def test_input_shown_is_the_input_file():
    shown = [b.text for b in blocks(TUTORIAL) if b.kind == "" and '"<doc>"' in b.text]
    assert shown == [(FILES / "docs.jsonl").read_text(encoding="utf-8")]


def test_readme_imaging_example_binds_without_warnings():
    """The README's larger example: its boxes bind by name, with nothing to warn about."""
    pytest.importorskip("numpy")  # the examples extra
    done = subprocess.run([sys.executable, "-m", "snet", "check", "boxes/imaging.snet", "--boxes", "boxes/imaging.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{img} -> {img}"
    assert "warning" not in done.stderr, done.stderr
