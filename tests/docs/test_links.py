"""The README and the pages of docs/ link only to what the repository holds.

A clone of the repository is all a reader has, so every relative link must
name a file or folder inside it, and a link to a heading of a Markdown page
(``language.md#13-order-and-determinism``) must name a heading the page has,
spelt as GitHub spells heading anchors.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doc_blocks import DOCS, ROOT

PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.M | re.S)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the headings of ``page``: lower case, punctuation dropped, spaces as hyphens."""
    found = set()
    for line in FENCED.sub("", page.read_text(encoding="utf-8")).splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def links(page: Path) -> list[str]:
    return LINK.findall(FENCED.sub("", page.read_text(encoding="utf-8")))


def test_the_user_pages_exist_and_are_linked_from_the_readme():
    readme = set(links(ROOT / "README.md"))
    for name in ("language.md", "tutorial.md", "cli.md", "boxes.md", "records.md", "embedding.md"):
        assert (DOCS / name).is_file()
        assert f"docs/{name}" in readme, f"README.md does not link docs/{name}"


def test_the_readme_lists_the_users_pages_for_users():
    """Running on several cores, on Spark, and what to do about an error are a user's questions: their pages are
    listed under the README's "For users", not only for contributors."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    users = text[text.index("For users:"):text.index("For contributors:")]
    for name in ("cores.md", "spark.md", "troubleshooting.md"):
        assert (DOCS / name).is_file()
        assert f"(docs/{name})" in users, f"README.md does not list docs/{name} for users"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_links_stay_in_the_repository(page):
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.is_relative_to(ROOT), f"{page.name}: {target} leaves the repository"
        assert resolved.exists(), f"{page.name}: {target} names nothing in the repository"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{page.name}: {target}: {resolved.name} has no such heading"
