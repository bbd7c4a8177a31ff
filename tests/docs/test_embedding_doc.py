"""The Python examples of docs/embedding.md run and print what the page shows.

The ``python`` blocks (not those fenced ``python sketch``, which are
outlines) run one after another in one interpreter, as the page says, from
a copy of ``docs/tutorial/``; what each prints must equal the ``text`` block
right after it, and a block with no ``text`` block after it must print
nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from doc_blocks import DOCS, ROOT, blocks, normalised

PAGE = DOCS / "embedding.md"
MARK = "=== example at line {} ==="


def examples():
    found = blocks(PAGE)
    for i, block in enumerate(found):
        if block.kind == "python" and "sketch" not in block.info:
            after = found[i + 1] if i + 1 < len(found) and found[i + 1].kind == "text" else None
            yield block, (after.text if after else "")


def test_examples_print_what_the_page_shows(tmp_path):
    shown = list(examples())
    assert len(shown) >= 5
    script = "".join(f"print({MARK.format(b.line)!r})\n{b.text}" for b, _ in shown)
    workdir = tmp_path / "tutorial"
    shutil.copytree(DOCS / "tutorial", workdir, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-c", script], cwd=workdir, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    printed = done.stdout
    for block, expected in shown:
        mark = MARK.format(block.line)
        assert mark in printed, f"embedding.md:{block.line}: never ran"
        part = printed.split(mark + "\n", 1)[1].split("=== example at line", 1)[0]
        assert normalised(part) == normalised(expected), f"embedding.md:{block.line}:\n{part}"
