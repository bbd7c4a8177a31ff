"""Scopes and name resolution (language.md §4) and the label checks of §3.1.

The file is the outermost scope; every net written with braces opens a
nested one.  Boxes, nets, types and typesigs share one name space per
scope.  A name is looked up lexically, innermost scope first:

* the signature and connect expression of net ``N`` start in ``N``'s own
  scope if it has braces, else in the scope that holds ``N``;
* the right-hand side of a ``type`` or ``typesig`` starts in the scope that
  holds the definition, so ``type T = T | {x};`` finds itself (a cycle) even
  where an outer scope also defines ``T``.  In the rts dialect
  (``shadowing``), a right-hand side that names its own definition looks
  that name up from the enclosing scope instead: ``type t = t;`` in a net
  names the outer ``t`` (:meth:`Resolution.rhs_scope`).

:func:`resolve` checks the whole file, used or not, and returns every
error it finds; the caller sorts them by position.  Nothing here computes
types: later passes look names up through :class:`Resolution`, which only
answers for a program without resolution errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, TypeVar, Union

from snet.errors import Diagnostic
from snet.gcpause import paused
from snet.source import Span
from snet.syntax import ast

#: a definition that declares a name (metadata declares none)
Named = Union[ast.BoxDecl, ast.NetDef, ast.TypeDef, ast.TypesigDef]

D = TypeVar("D", ast.BoxDecl, ast.NetDef, ast.TypeDef, ast.TypesigDef)

KIND_NAMES = {ast.BoxDecl: "box", ast.NetDef: "net", ast.TypeDef: "type", ast.TypesigDef: "typesig"}


def kind_of(definition) -> str:
    return KIND_NAMES[type(definition)]


@dataclass(eq=False)
class Scope:
    """One name space: the file, or the braces of one net."""

    parent: "Scope | None"
    owner: ast.NetDef | None  # None for the file scope
    depth: int
    names: dict[str, Named] = field(default_factory=dict)
    metadata: list[ast.Metadata] = field(default_factory=list)

    def lookup(self, name: str) -> Named | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.names.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def resolved(self, name: str, kind: type[D]) -> D:
        """The ``kind`` definition that ``name`` names: for the passes after resolution, which checked it."""
        found = self.lookup(name)
        assert isinstance(found, kind), f"'{name}' names {found!r}, not a {kind.__name__} (resolution checks this)"
        return found

    def chain(self) -> list["Scope"]:
        """The scopes from the file scope down to this one."""
        out = []
        scope: Scope | None = self
        while scope is not None:
            out.append(scope)
            scope = scope.parent
        return out[::-1]


class Resolution:
    """Where every definition lives and where every net's names are looked up.

    Attributes:
        file_scope: the outermost scope.
        errors: every error found, unsorted.
    """

    def __init__(self, program: ast.Program, shadowing: bool = False) -> None:
        self.program = program
        self.shadowing = shadowing  # the rts dialect's `type t = t;` rule
        self._rhs: dict[int, Scope] = {}  # id(definition) -> its right-hand side's scope, where it differs
        self.errors: list[Diagnostic] = []
        self.file_scope = Scope(None, None, 0)
        self._home: dict[int, Scope] = {}  # id(definition) -> the scope that holds it
        self._inner: dict[int, Scope] = {}  # id(net) -> the scope of its names
        self._keep: list[object] = []  # keeps ids above stable while this object lives
        self._definitions: list[tuple[Named, Scope]] | None = None  # made by definitions()

    # ---- queries (valid only when there are no errors)

    def home(self, definition) -> Scope:
        """The scope that holds `definition`."""
        return self._home[id(definition)]

    def rhs_scope(self, definition) -> Scope:
        """Where the names on the right-hand side of a ``type`` or ``typesig`` definition are looked up.

        The holding scope; with ``shadowing``, for a definition that names
        itself, a view of it without that one name, so the name is found in
        an enclosing scope (or is unknown at the file scope).
        """
        home = self._home[id(definition)]
        if not self.shadowing:
            return home
        view = self._rhs.get(id(definition))
        if view is not None:
            return view
        if not any(ref.name == definition.name for ref in _type_references(definition)):
            return home
        names = {k: v for k, v in home.names.items() if k != definition.name}
        view = self._rhs[id(definition)] = Scope(home.parent, home.owner, home.depth, names, home.metadata)
        return view

    def net_scope(self, net: ast.NetDef) -> Scope:
        """The scope in which `net`'s signature and connect expression are resolved."""
        return self._inner[id(net)]

    def definitions(self) -> Iterator[tuple[Named, Scope]]:
        """Every definition in the file with its holding scope, in source order.

        The list is made on the first call (after the definitions are declared, which
        :func:`resolve` does first) and kept: each pass of the check stage walks it.
        """
        found = self._definitions
        if found is None:
            found = self._definitions = []
            # An explicit stack: nested generators would cost the nesting depth per definition.
            stack = [(iter(self.program.definitions), self.file_scope)]
            while stack:
                defs, scope = stack[-1]
                d = next(defs, None)
                if d is None:
                    stack.pop()
                    continue
                if isinstance(d, ast.Metadata):
                    continue
                found.append((d, scope))
                if isinstance(d, ast.NetDef) and d.definitions is not None:
                    stack.append((iter(d.definitions), self._inner[id(d)]))
        return iter(found)

    def nets(self) -> Iterator[tuple[ast.NetDef, int]]:
        """Every net in source order with its nesting depth (0 = top level)."""
        for d, scope in self.definitions():
            if isinstance(d, ast.NetDef):
                yield d, scope.depth

    def scopes(self) -> Iterator[Scope]:
        yield self.file_scope
        for d, _ in self.definitions():
            if isinstance(d, ast.NetDef) and d.definitions is not None:
                yield self._inner[id(d)]

    # ---- building

    def error(self, span: Span | None, message: str) -> None:
        self.errors.append(Diagnostic("error", span, message))


@paused
def resolve(program: ast.Program, shadowing: bool = False) -> Resolution:
    """Build the scopes and check every name and label of `program`.

    Args:
        shadowing: the rts dialect's rule for ``type t = t;`` (see the module docstring).

    Returns:
        The resolution; its ``errors`` list is empty for a correct program.
    """
    res = Resolution(program, shadowing)
    res._keep.append(program)
    _declare(res, program.definitions, res.file_scope)
    for definition, scope in res.definitions():
        _check_definition(res, definition, scope)
    _check_cycles(res)
    return res


def _declare(res: Resolution, definitions, scope: Scope) -> None:
    for d in definitions:
        if isinstance(d, ast.Metadata):
            scope.metadata.append(d)
            continue
        res._home[id(d)] = scope
        previous = scope.names.get(d.name)
        if previous is not None:
            where = previous.span.location if previous.span is not None else "?"
            res.error(d.span, f"duplicate definition of '{d.name}' (first defined at {where})")
        else:
            scope.names[d.name] = d
        if isinstance(d, ast.NetDef):
            if d.definitions is not None:
                inner = Scope(scope, d, scope.depth + 1)
                res._inner[id(d)] = inner
                _declare(res, d.definitions, inner)
            else:
                res._inner[id(d)] = scope


# ---- names and labels of one definition

def _check_definition(res: Resolution, d, scope: Scope) -> None:
    if isinstance(d, ast.BoxDecl):
        if d.inputs is not None:
            _check_labels(res, d.inputs, "box input")
        for variant in d.outputs:
            _check_labels(res, variant, "box output")
    elif isinstance(d, ast.NetDef):
        inner = res.net_scope(d)
        if d.signature is not None:
            _check_signature(res, d.signature, inner)
        if d.body is not None:
            _check_expr(res, d.body, inner)
    elif isinstance(d, ast.TypeDef):
        _check_type(res, d.type, res.rhs_scope(d))
    elif isinstance(d, ast.TypesigDef):
        _check_signature(res, d.signature, res.rhs_scope(d))


def _check_labels(res: Resolution, labels, what: str) -> None:
    seen: set[str] = set()
    for label in labels:
        if label.text in seen:
            res.error(label.span, f"duplicate label '{label.text}' in {what}")
        seen.add(label.text)


def _expect(res: Resolution, name: str, span, scope: Scope, kinds: tuple[str, ...], role: str):
    found = scope.lookup(name)
    if found is None:
        res.error(span, f"unknown name '{name}'")
        return None
    kind = kind_of(found)
    if kind not in kinds:
        res.error(span, f"'{name}' is a {kind}, not a {role}")
        return None
    return found


def _check_signature(res: Resolution, signature: ast.Signature, scope: Scope) -> None:
    for item in signature.items:
        if isinstance(item, ast.TypesigRef):
            _expect(res, item.name, item.span, scope, ("typesig",), "typesig")
        else:
            _check_type(res, item.input, scope)
            if item.output is not None:
                _check_type(res, item.output, scope)


def _check_type(res: Resolution, type_expr: ast.TypeExpr, scope: Scope) -> None:
    for atom in type_expr.atoms:
        if isinstance(atom, ast.TypeRef):
            _expect(res, atom.name, atom.span, scope, ("type",), "type")
        else:
            _check_labels(res, atom.labels, "record type")


def _check_patterns(res: Resolution, patterns) -> None:
    for p in patterns:
        _check_labels(res, p.pattern.labels, "pattern")


def _check_expr(res: Resolution, expr, scope: Scope) -> None:
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.NameRef):
            _expect(res, e.name, e.span, scope, ("box", "net"), "box or net")
        elif isinstance(e, ast.Filter):
            _check_labels(res, e.pattern.labels, "pattern")
            for clause in e.clauses:
                for record in clause.outputs:
                    _check_out_record(res, record)
        elif isinstance(e, ast.SyncCell):
            _check_patterns(res, e.patterns)
        elif isinstance(e, ast.Serial):
            stack.extend(reversed(e.stages))
        elif isinstance(e, ast.Parallel):
            stack.extend(reversed(e.branches))
        elif isinstance(e, (ast.Star, ast.Feedback)):
            _check_patterns(res, e.patterns)
            stack.append(e.operand)
        elif isinstance(e, (ast.Split, ast.Placement)):
            stack.append(e.operand)


def _check_out_record(res: Resolution, record: ast.OutRecord) -> None:
    seen: set[str] = set()
    for item in record.items:
        if item.label in seen:
            res.error(item.span, f"duplicate label '{item.label}' in output record")
        seen.add(item.label)


# ---- cycles

def net_references(expr) -> Iterator[ast.NameRef]:
    """Every box or net name in a connect expression, left to right."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.NameRef):
            yield e
        elif isinstance(e, ast.Serial):
            stack.extend(reversed(e.stages))
        elif isinstance(e, ast.Parallel):
            stack.extend(reversed(e.branches))
        elif isinstance(e, (ast.Star, ast.Feedback, ast.Split, ast.Placement)):
            stack.append(e.operand)


def _type_references(d) -> Iterator[ast.TypeRef | ast.TypesigRef]:
    if isinstance(d, ast.TypeDef):
        yield from (a for a in d.type.atoms if isinstance(a, ast.TypeRef))
    elif isinstance(d, ast.TypesigDef):
        for item in d.signature.items:
            if isinstance(item, ast.TypesigRef):
                yield item
            else:
                yield from (a for a in item.input.atoms if isinstance(a, ast.TypeRef))
                if item.output is not None:
                    yield from (a for a in item.output.atoms if isinstance(a, ast.TypeRef))


def _shadowing_hint(res: Resolution, cycle: list, kind: str) -> str:
    """For ``type t = t;`` with an outer ``t`` (standard dialect): the rts dialect reads it as naming that one."""
    if res.shadowing or len(cycle) != 1:
        return ""
    home = res.rhs_scope(cycle[0])
    outer = home.parent.lookup(cycle[0].name) if home.parent is not None else None
    if not isinstance(outer, type(cycle[0])):
        return ""
    return f"; in the rts dialect (--dialect rts), '{cycle[0].name}' on the right names the outer {kind}"


def _check_cycles(res: Resolution) -> None:
    """Nets that use themselves; types and typesigs defined through themselves."""
    Ref = Union[ast.NameRef, ast.TypeRef, ast.TypesigRef]
    edges: dict[int, list[tuple[Named, Ref]]] = {}  # id(def) -> [(target def, ref)]
    nodes: list[Named] = []
    for d, scope in res.definitions():
        out: list[tuple[Named, Ref]] = []
        if isinstance(d, ast.NetDef) and d.body is not None:
            inner = res.net_scope(d)
            for ref in net_references(d.body):
                target = inner.lookup(ref.name)
                if isinstance(target, ast.NetDef):
                    out.append((target, ref))
        elif isinstance(d, (ast.TypeDef, ast.TypesigDef)):
            rhs = res.rhs_scope(d)
            for type_ref in _type_references(d):
                target = rhs.lookup(type_ref.name)
                if isinstance(target, (ast.TypeDef, ast.TypesigDef)):
                    out.append((target, type_ref))
        else:
            continue
        nodes.append(d)
        edges[id(d)] = out

    WHITE, GREY, BLACK = 0, 1, 2
    colour = {id(d): WHITE for d in nodes}
    reported: set[frozenset[int]] = set()

    for root in nodes:
        if colour[id(root)] != WHITE:
            continue
        # Iterative DFS keeping the path, so deep nestings do not hit the recursion limit.
        path: list[Named] = [root]
        iters = [iter(edges[id(root)])]
        colour[id(root)] = GREY
        while iters:
            step = next(iters[-1], None)
            if step is None:
                colour[id(path[-1])] = BLACK
                path.pop()
                iters.pop()
                continue
            target, via = step
            c = colour.get(id(target), BLACK)
            if c == WHITE:
                colour[id(target)] = GREY
                path.append(target)
                iters.append(iter(edges[id(target)]))
            elif c == GREY:
                start = next(i for i, d in enumerate(path) if d is target)
                cycle = path[start:]
                key = frozenset(id(d) for d in cycle)
                if key in reported:
                    continue
                reported.add(key)
                names = " -> ".join([d.name for d in cycle] + [target.name])
                if isinstance(target, ast.NetDef):
                    res.error(via.span, f"net '{target.name}' uses itself: {names}")
                else:
                    kind = kind_of(target)
                    res.error(via.span, f"{kind} '{target.name}' is defined in terms of itself: {names}"
                                        f"{_shadowing_hint(res, cycle, kind)}")
