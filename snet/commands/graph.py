"""``snet graph NET.snet [-o FILE] [--compact] [--left-to-right] [--collapse NET]...``: draw the property graph.

DOT text goes to standard output, or to ``-o FILE``.  A file name ending in
``.svg`` or ``.png`` is rendered by Graphviz's ``dot`` program; without it
the command fails with exit status 2 and says so (any other extension gets
the DOT text).  The drawing's legend is in :mod:`snet.spg.dot`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from snet.errors import SNetUsageError

RENDERED = {".svg": "svg", ".png": "png"}


def graph_command(args: argparse.Namespace) -> int:
    from snet.spg.build import compile_file
    from snet.spg.dot import to_dot

    if not os.path.isfile(args.net_file):
        raise SNetUsageError(f"network file not found: {args.net_file}")
    from snet.commands.check import compile_options

    graph = compile_file(args.net_file, net=getattr(args, "net", None), options=compile_options(args))
    for warning in graph.warnings:
        print(warning, file=sys.stderr)
    text = to_dot(graph, compact=getattr(args, "compact", False), left_to_right=getattr(args, "left_to_right", False),
                  collapse=getattr(args, "collapse", None) or ())
    output = getattr(args, "output", "-") or "-"
    if output == "-":
        sys.stdout.write(text)
        return 0
    fmt = RENDERED.get(os.path.splitext(output)[1].lower())
    if fmt is None:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
        return 0
    dot = shutil.which("dot")
    if dot is None:
        raise SNetUsageError(f"cannot write {output}: Graphviz's 'dot' program is not installed "
                             f"(install Graphviz, or write DOT with -o FILE.dot)")
    done = subprocess.run([dot, f"-T{fmt}", "-o", output], input=text, text=True, capture_output=True)
    if done.returncode != 0:
        raise SNetUsageError(f"Graphviz 'dot' failed to write {output}: {done.stderr.strip()}")
    return 0
