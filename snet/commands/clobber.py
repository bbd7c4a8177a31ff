"""No file a run writes is a file it reads, is made of, or writes a second time.

``snet run`` writes the output (``-o``), the error records (``--errors``)
and the statistics (``--stats-json``).  Opening any of them for writing
truncates it, so each is compared, before anything is opened for writing,
with every file the run reads or is made of: the input (``-i``), the
network file, each file bound to a declared-only net (``--net-path``), each
box module (``--boxes``, or ``NET.py`` beside ``NET.snet``), and with each
other written file.  A clash is a usage error (exit 2) naming the two roles;
nothing has been touched.

Standard input and output count as the files their descriptors reach:
``snet run net.snet -o data.jsonl < data.jsonl`` would truncate its own
input, and ``--stats-json out.jsonl > out.jsonl`` would write the statistics
over the records.

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
    """A file a run touches: what it is for (``the input``), the flag that named it, the path, and whether it
    is written; the path ``-`` is standard input (read) or standard output (written)."""

    what: str
    flag: str | None
    path: str
    written: bool = False

    @property
    def stream(self) -> str | None:
        if self.path != "-":
            return None
        return "standard output" if self.written else "standard input"

    @property
    def spelt(self) -> str:
        """How a message names the written file it is about: ``--stats-json out.jsonl``, ``standard output``."""
        return self.stream or f"{self.flag} {self.path}"

    def named(self, other_path: str) -> str:
        """How a message names this role beside a file spelt `other_path`: ``the input (-i in.jsonl)``."""
        spelt = "" if self.path == other_path else self.path
        inside = self.stream or " ".join(part for part in (self.flag, spelt) if part)
        return f"{self.what} ({inside})" if inside else self.what


def written_roles(args: argparse.Namespace) -> list[Role]:
    """The files ``snet run`` writes, in the order a clash is reported."""
    named = [("the output", "-o", args.output or "-"),
             ("the error file", "--errors", getattr(args, "errors", None)),
             ("the statistics file", "--stats-json", getattr(args, "stats_json", None))]
    return [Role(what, flag, path, True) for what, flag, path in named if path is not None]


def read_roles(args: argparse.Namespace, network) -> list[Role]:
    """The files the run reads or is made of: input, network file, bound nets, box modules."""
    roles = [Role("the input", "-i", args.input or "-"), Role("the network file", None, args.net_file)]
    roles += [Role("a net file it binds", "--net-path" if getattr(args, "net_path", None) else None, path)
              for path in network.graph.linked]
    roles += [Role("a box module", "--boxes", path) for path in _box_paths(args.boxes)]
    if not args.boxes:  # NET.py beside NET.snet, and beside each bound net file
        for snet_file in (args.net_file, *network.graph.linked):
            roles.append(Role("a box module", None, os.path.splitext(snet_file)[0] + ".py"))
    roles += [Role("a box module", None, path) for path in _function_files(network)]
    return roles


def _box_paths(specs: list[str]) -> list[str]:
    """The ``.py`` files ``--boxes`` values name (a module name: the file the import found)."""
    paths = []
    for spec in specs:
        if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
            paths.append(spec)
        elif "." not in spec and os.path.isfile(spec + ".py"):
            paths.append(spec + ".py")
        else:
            found = getattr(sys.modules.get(spec), "__file__", None)
            if found:
                paths.append(found)
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
    others = written + read_roles(args, network)
    for i, role in enumerate(written):
        for other in others[:i] + others[len(written):]:
            if _same_file(role, other):
                raise SNetUsageError(f"{role.spelt} is also {other.named(role.path)}")


def _same_file(written: Role, other: Role) -> bool:
    """True when writing `written` would truncate or mix into `other` (a regular file, or one not made yet)."""
    mine, theirs = _identity(written), _identity(other)
    if theirs is None:
        # A read file that does not exist is an error of its own, later; two written files that do not
        # exist yet are the same when their paths resolve to one place.
        return (other.written and mine is None and "-" not in (written.path, other.path)
                and os.path.realpath(written.path) == os.path.realpath(other.path))
    if mine is None:
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino) and stat.S_ISREG(mine.st_mode)


def _identity(role: Role) -> os.stat_result | None:
    """The file a role's path reaches (standard input and output: what their descriptors are), or None."""
    try:
        if role.stream is not None:
            return os.fstat((sys.stdout if role.written else sys.stdin).fileno())
        return os.stat(role.path)
    except (OSError, ValueError, AttributeError):  # no such file; a stream with no descriptor (an embedding host's)
        return None
