"""``snet graph NET.snet [-o FILE] [--compact] [--left-to-right] [--collapse NET]... [--fused]``: draw the network.

DOT text goes to standard output, or to ``-o FILE`` when FILE ends in
``.dot`` or ``.gv``.  Any other extension names a Graphviz output format
(``.svg``, ``.png``, ``.pdf``...), which Graphviz's ``dot`` program renders:
an extension that ``dot`` does not know, a name with no extension, or a
rendering without ``dot`` installed fails with exit status 2 and writes
nothing, so a file never holds DOT text under another format's name.  The
drawing's legend is in :mod:`snet.spg.dot`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

from snet.errors import SNetUsageError

DOT_TEXT = (".dot", ".gv")
NOT_FILES = frozenset({"x11", "xlib", "gtk", "dot", "gv"})  # windows, or the DOT text itself


def graph_command(args: argparse.Namespace) -> int:
    from snet.spg.build import compile_file
    from snet.spg.dot import to_dot

    if not os.path.isfile(args.net_file):
        raise SNetUsageError(f"network file not found: {args.net_file}")
    from snet.commands.check import compile_options

    graph = compile_file(args.net_file, net=getattr(args, "net", None), options=compile_options(args))
    from snet.warningsummary import summarise

    for warning in summarise(graph.warnings):
        print(warning, file=sys.stderr)
    text = to_dot(graph, compact=getattr(args, "compact", False), left_to_right=getattr(args, "left_to_right", False),
                  collapse=getattr(args, "collapse", None) or (),
                  chains=fused_chains_of(graph) if getattr(args, "fused", False) else ())
    return write_drawing(text, getattr(args, "output", "-") or "-", {"the network file": args.net_file})


def fused_chains_of(graph) -> tuple[tuple[int, ...], ...]:
    """The chains FRONT runs as one entity each (docs/runtime.md, "Fusion"), read from the program alone.

    Every box counts as a plain function here: an ``async def`` box, or one
    run in box processes, is a stage of its own in a run.
    """
    from snet.spg.fusion import fused_chains
    from snet.spg.lower import lower
    from snet.spg.nodes import BoxNode

    def stand_in(*values):  # pragma: no cover - never called: the plan is only read
        return None

    boxes = {n.name: stand_in for n in graph.nodes if isinstance(n, BoxNode)}
    return fused_chains(lower(graph, boxes).nodes)


def write_drawing(text: str, output: str, read: dict[str, str]) -> int:
    """Write the DOT `text` to `output` (``-``: standard output) as its extension asks; exit status 0.

    `read` names the files the command read (``{"the network file": path}``):
    an `output` that is one of them is refused before anything is written.
    """
    if output == "-":
        sys.stdout.write(text)
        return 0
    for what, path in read.items():
        if os.path.exists(output) and os.path.exists(path) and os.path.samefile(output, path):
            raise SNetUsageError(f"-o {output} is also {what}: writing the drawing would destroy it")
    extension = os.path.splitext(output)[1].lower()
    if extension in DOT_TEXT:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
        return 0
    render(text, output, extension)
    return 0


def render(text: str, output: str, extension: str) -> None:
    """Have Graphviz's ``dot`` draw `text` into `output` in the format its `extension` names.

    The drawing is made in memory and written only once ``dot`` succeeds, so
    a failure leaves no file behind.

    Raises:
        SNetUsageError: no extension, no ``dot`` program, a format ``dot``
            does not know, or ``dot`` failing.
    """
    if not extension:
        raise SNetUsageError(f"cannot tell the format of {output}: name it FILE.dot for DOT text, "
                             f"or FILE.svg, FILE.png, FILE.pdf... for a drawing")
    dot = shutil.which("dot")
    if dot is None:
        raise SNetUsageError(f"cannot write {output}: Graphviz's 'dot' program is not installed "
                             f"(install Graphviz, or write DOT with -o FILE.dot)")
    fmt = extension[1:]
    known = formats(dot)
    if fmt not in known:
        raise SNetUsageError(f"cannot write {output}: Graphviz's 'dot' does not know the format '{fmt}' "
                             f"(formats: dot, gv, {', '.join(sorted(known))})")
    done = subprocess.run([dot, f"-T{fmt}"], input=text.encode("utf-8"), capture_output=True)
    if done.returncode != 0:
        raise SNetUsageError(f"Graphviz 'dot' failed to write {output}: "
                             f"{done.stderr.decode('utf-8', 'replace').strip()}")
    with open(output, "wb") as f:
        f.write(done.stdout)


def formats(dot: str) -> frozenset[str]:
    """The output formats this ``dot`` program writes to a file, from its own list (``dot -T?``)."""
    listing = subprocess.run([dot, "-T?"], capture_output=True, text=True)
    found = re.search(r"Use one of:(.*)", listing.stderr + listing.stdout, re.S)
    names = found.group(1).split() if found else []
    return frozenset(name.split(":")[0] for name in names) - NOT_FILES
