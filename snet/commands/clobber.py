"""No file a run writes is a file it reads, is made of, or writes a second time.

``snet run`` writes the output (``-o``), the error records (``--errors``)
and the statistics (``--stats-json``).  Opening any of them for writing
truncates it, so each is compared, before anything is opened for writing,
with every file the run reads or is made of: the input (``-i``), the
network file, each file bound to a declared-only net (``--net-path``), each
box module (``--boxes``, or ``NET.py`` beside ``NET.snet``), and with each
other written file.  A clash is a usage error (exit 2) naming the two roles;
nothing has been touched.

Two paths are the same file when they reach the same inode (symbolic
links, hard links, ``./`` and ``..`` spellings, ``/dev/stdout`` redirected
into a file), or, for a written file that does not exist yet, the same
resolved path.  Devices and pipes (``/dev/null``, a terminal) may be
named twice: writing one does not destroy what another role reads.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from typing import NamedTuple

from snet.errors import SNetUsageError


class Role(NamedTuple):
    """A file a run touches: what it is for (``the input``), the flag that named it, and the path."""

    what: str
    flag: str | None
    path: str

    def named(self, other_path: str) -> str:
        """How a message names this role beside a file spelt `other_path`: ``the input (-i in.jsonl)``."""
        spelt = "" if self.path == other_path else self.path
        inside = " ".join(part for part in (self.flag, spelt) if part)
        return f"{self.what} ({inside})" if inside else self.what


def written_roles(args: argparse.Namespace) -> list[Role]:
    """The files ``snet run`` writes, in the order a clash is reported."""
    roles = [Role("the output", "-o", args.output), Role("the error file", "--errors", getattr(args, "errors", None)),
             Role("the statistics file", "--stats-json", getattr(args, "stats_json", None))]
    return [r for r in roles if r.path not in (None, "-")]


def read_roles(args: argparse.Namespace, network) -> list[Role]:
    """The files the run reads or is made of: input, network file, bound nets, box modules."""
    roles = [Role("the input", "-i", args.input), Role("the network file", None, args.net_file)]
    roles += [Role("a net file it binds", "--net-path" if getattr(args, "net_path", None) else None, path)
              for path in network.graph.linked]
    roles += [Role("a box module", "--boxes", path) for path in _box_paths(args.boxes)]
    if not args.boxes:  # NET.py beside NET.snet, and beside each bound net file
        for snet_file in (args.net_file, *network.graph.linked):
            roles.append(Role("a box module", None, os.path.splitext(snet_file)[0] + ".py"))
    roles += [Role("a box module", None, path) for path in _function_files(network)]
    return [r for r in roles if r.path not in (None, "-")]


def _box_paths(specs: list[str]) -> list[str]:
    """The ``.py`` files ``--boxes`` values name (a module name: the file the import found)."""
    paths = []
    for spec in specs:
        if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
            paths.append(spec)
        elif "." not in spec and os.path.isfile(spec + ".py"):
            paths.append(spec + ".py")
        else:
            module = sys.modules.get(spec)
            if getattr(module, "__file__", None):
                paths.append(module.__file__)
    return paths


def _function_files(network) -> list[str]:
    """The files the bound box functions were defined in (a box module may import them from another)."""
    files = set()
    for function in network.boxes.values():
        module = sys.modules.get(getattr(function, "__module__", None) or "")
        path = getattr(module, "__file__", None)
        if path:
            files.add(path)
    return sorted(files)


def refuse_clobbering(args: argparse.Namespace, network) -> None:
    """Raise a usage error when a written file is a read one or another written one (module docstring)."""
    written = written_roles(args)
    others = [(other, False) for other in written] + [(other, True) for other in read_roles(args, network)]
    for i, role in enumerate(written):
        for other, is_read in others[:i] + others[len(written):]:
            if _same_file(role.path, other.path, is_read):
                raise SNetUsageError(f"{role.flag} {role.path} is also {other.named(role.path)}")


def _same_file(written: str, other: str, other_is_read: bool) -> bool:
    """True when writing `written` would truncate `other` (a regular file, or one not made yet)."""
    try:
        mine = os.stat(written)
    except OSError:
        mine = None
    try:
        theirs = os.stat(other)
    except OSError:
        theirs = None
    if theirs is None:
        # A read file that does not exist is an error of its own, later; two written files that do not
        # exist yet are the same when their paths resolve to one place.
        return not other_is_read and mine is None and os.path.realpath(written) == os.path.realpath(other)
    if mine is None:
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino) and stat.S_ISREG(mine.st_mode)
