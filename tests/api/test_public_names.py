"""Every type a printed object or the embedding guide names can be imported from ``snet``."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import snet

DOCS = Path(__file__).resolve().parents[2] / "docs"

SOURCE = "net pair { box double ((a) -> (a)); box keep ((a) -> (a)); } connect double .. keep;"
BOXES = {"double": lambda a: {"a": 2 * a}, "keep": lambda a: {"a": a}}


def _named_types(text: str) -> set[str]:
    """The ``snet.Name`` and ``<snet.Name`` type names in `text` (classes: capitalised, directly under snet)."""
    return set(re.findall(r"\bsnet\.([A-Z]\w*)", text))


def test_the_types_printed_objects_name_are_importable_from_snet():
    net = snet.load(SOURCE, boxes=BOXES)
    run = net.run([{"a": 1}], engine="reference")
    list(run)
    session = net.session(engine="reference")
    session.close()

    async def an_async_session():
        async with net.asession(engine="reference") as s:
            return type(s)

    printed = [net, run, session, net.graph]
    named = set().union(*(_named_types(repr(thing)) for thing in printed))
    named |= {type(run.stats()).__name__, asyncio.run(an_async_session()).__name__}  # their reprs name the class
    assert {"Network", "Execution", "Session", "PropertyGraph", "RunStats", "AsyncSession"} <= named
    for name in named:
        assert name in snet.__all__, name
        assert getattr(snet, name).__name__ == name


def test_the_types_the_embedding_guide_names_are_importable_from_snet():
    named = _named_types((DOCS / "embedding.md").read_text(encoding="utf-8"))
    assert {"Execution", "RunStats", "AsyncSession", "SNetError"} <= named
    missing = sorted(name for name in named if name not in snet.__all__)
    assert not missing


def test_every_name_in_all_imports_and_star_import_gives_them():
    assert sorted(snet.__all__) == sorted({"__version__", *snet._HOMES})
    done = subprocess.run([sys.executable, "-c", "from snet import *; import snet; "
                           "print(all(name in globals() for name in snet.__all__))"],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr
    assert isinstance(snet.load(SOURCE, boxes=BOXES).run([], engine="reference"), snet.Execution)


def test_a_property_graph_prints_short_and_dumps_in_full():
    net = snet.load(SOURCE, boxes=BOXES)
    assert repr(net.graph) == f"<snet.PropertyGraph of net pair: {len(net.graph.nodes)} nodes>"
    dump = net.graph.dump()
    assert dump.startswith("PropertyGraph(root=NetNode(") and "net_name='pair'" in dump
    assert "BoxNode(" in dump and "name='double'" in dump
