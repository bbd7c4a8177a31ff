"""Declared-only nets bound to nets of other ``.snet`` files (rts dialect).

The reference distribution compiles nets separately: a program may declare
``net X;`` or ``net X ({a} -> {b});`` and use ``X``, whose body is written
in another file.  In the rts dialect, before names are resolved, every
declared-only net ``X`` of the program (at any depth) is bound to the
top-level net ``X`` of the first ``X.snet`` found in the program's own
folder, then in the folders of the net path
(:attr:`snet.options.CompileOptions.net_path`, ``--net-path``).

Binding splices the other file into the program: the declaration becomes a
net whose local definitions are that file's other top-level definitions
and ``X``'s own, with ``X``'s connect expression, and the declaration's
signature if it has one (``X``'s otherwise).  The other file must compile
on its own first (so none of its names can be captured by the program's),
and its own declared-only nets are bound the same way; a file that needs
itself, directly or not, is an error.  A declared-only net with no file
stays declared only: using it in the net to run is the usual error, which
then also says where ``X.snet`` was looked for.

A name that a connect expression uses and the file defines nowhere is
taken as such a declaration (at the file scope) when ``NAME.snet`` is
found: the reference distribution's compiler tests use nets that live in
other files without declaring them.  Without the file it stays an unknown
name.
"""

from __future__ import annotations

import os
from pathlib import Path

from snet.errors import Diagnostic, SNetCompileError
from snet.source import Source
from snet.syntax import ast
from snet.syntax.parser import parse
from snet.syntax.reading import read_program
from snet.typesys.scopes import net_references, resolve


def search_folders(filename: str, net_path: tuple[str, ...]) -> list[str]:
    """The program's folder (when it is a file), then the net path."""
    folders = []
    if os.path.isfile(filename):
        folders.append(os.path.dirname(os.path.abspath(filename)))
    folders.extend(os.path.abspath(folder) for folder in net_path)
    unique: list[str] = []
    for folder in folders:
        if folder not in unique:
            unique.append(folder)
    return unique


def find_net_file(name: str, folders: list[str]) -> str | None:
    for folder in folders:
        candidate = os.path.join(folder, name + ".snet")
        if os.path.isfile(candidate):
            return candidate
    return None


class Linker:
    """Binds the declared-only nets of one program; :attr:`linked` lists the files used."""

    def __init__(self, net_path: tuple[str, ...]) -> None:
        self.net_path = net_path
        self.linked: list[str] = []
        self._done: dict[str, ast.Program] = {}  # path -> its linked program
        self._active: list[str] = []  # files being linked, outermost first

    def link(self, program: ast.Program, filename: str) -> ast.Program:
        folders = search_folders(filename, self.net_path)
        definitions = program.definitions + self._implicit(program, folders)
        return ast.Program(self._definitions(definitions, folders, filename), program.span)

    @staticmethod
    def _implicit(program: ast.Program, folders: list[str]) -> tuple:
        """``net NAME;`` for each name used in a connect expression, defined nowhere in the file,
        with a ``NAME.snet`` to bind it (the reference distribution's external nets)."""
        defined: set[str] = set()
        used: dict[str, ast.NameRef] = {}
        stack = list(program.definitions)
        while stack:
            d = stack.pop()
            if isinstance(d, ast.Metadata):
                continue
            defined.add(d.name)
            if isinstance(d, ast.NetDef):
                stack.extend(d.definitions or ())
                if d.body is not None:
                    for ref in net_references(d.body):
                        used.setdefault(ref.name, ref)
        return tuple(ast.NetDef(name, None, None, None, ref.span) for name, ref in sorted(used.items())
                     if name not in defined and find_net_file(name, folders) is not None)

    def _definitions(self, definitions, folders: list[str], filename: str) -> tuple:
        out = []
        for d in definitions:
            if isinstance(d, ast.NetDef):
                if d.body is None:
                    d = self._bind(d, folders, filename)
                elif d.definitions is not None:
                    d = ast.NetDef(d.name, d.signature, self._definitions(d.definitions, folders, filename),
                                   d.body, d.span)
            out.append(d)
        return tuple(out)

    def _bind(self, decl: ast.NetDef, folders: list[str], filename: str) -> ast.NetDef:
        path = find_net_file(decl.name, folders)
        if path is None or os.path.abspath(path) == os.path.abspath(filename):
            return decl
        key = os.path.realpath(path)
        if key in self._active:
            chain = " -> ".join(Path(p).name for p in self._active[self._active.index(key):] + [key])
            raise SNetCompileError([Diagnostic("error", decl.span, f"net '{decl.name}' is bound from {path}, "
                                                                   f"which needs itself: {chain}")])
        program = self._done.get(key)
        if program is None:
            program = self._load(path, key)
        top = [d for d in program.definitions if isinstance(d, ast.NetDef) and d.name == decl.name]
        if not top or top[0].body is None:
            raise SNetCompileError([Diagnostic("error", decl.span, f"net '{decl.name}' is declared only, and "
                                                                   f"{path} defines no top-level net "
                                                                   f"'{decl.name}' with a connect expression")])
        net = top[0]
        others = tuple(d for d in program.definitions if d is not net)
        return ast.NetDef(decl.name, decl.signature if decl.signature is not None else net.signature,
                          others + (net.definitions or ()), net.body, decl.span)

    def _load(self, path: str, key: str) -> ast.Program:
        try:
            text = read_program(path)
        except OSError as e:
            raise SNetCompileError([Diagnostic("error", None, f"cannot read {path}: {e}")]) from None
        self._active.append(key)
        try:
            program = parse(text, path, Source(path, text), dialect="rts")
            program = self.link(program, path)
        finally:
            self._active.pop()
        errors = resolve(program, shadowing=True).errors
        if errors:
            raise SNetCompileError(sorted(errors, key=lambda d: (d.span.line, d.span.column) if d.span else (0, 0)))
        self._done[key] = program
        self.linked.append(path)
        return program


def not_found_note(name: str, filename: str, net_path: tuple[str, ...]) -> str:
    """What the declared-only error adds in the rts dialect: where ``NAME.snet`` was looked for."""
    folders = search_folders(filename, net_path)
    where = ", ".join(folders) if folders else "no folder (give --net-path DIR)"
    return f"; no {name}.snet in {where}"
