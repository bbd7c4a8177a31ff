"""The type of every construct (language.md §5.2), as the property graph needs it.

A **type** here is a tuple of variants, each a frozenset of labels in S-Net
spelling; the tuple keeps the order in which variants first appear and
holds no duplicates.  ``()`` is the type with no variants (an initialiser's
input).  A variant that is a superset of another is kept: it raises the
routing score.

**Prov** is a frozenset of labels, or :data:`EVERY` (None) when an open
signature output ``...`` makes it "every label".

The rules, exactly as the table of §5.2 (``P`` are patterns without guards):

========================  =====================================  ===========================
construct                 In                                     Out
========================  =====================================  ===========================
box ``f (I -> O1|..)``    ``I`` (``{}`` for ``()``)              ``O1 | ..``
initialiser box           ``()``                                 ``O1 | ..``
``[]``                    ``{}``                                 ``{}``
``[p -> ..]``             ``p``                                  each output record's labels
``[| p1..pn |]``          ``p1 | .. | pn``                       ``p1 ∪ .. ∪ pn | {}``
``A .. B``                v ∪ (w − Prov(A)); empty side: other   Out(B)
``A | B``, ``A || B``     In(A) ∪ In(B)                          Out(A) ∪ Out(B)
``A * P``, ``A ** P``     In(A) ∪ P                              P
``A ! <t>``               each v plus <t> (range: both tags)     Out(A)
``A \\ P``                 In(A)                                  Out(A) minus variants an
                                                                 unguarded pattern matches
``A @ n``                 In(A)                                  Out(A)
signed net                union of input sides                   union of output sides
unsigned net              In(body)                               Out(body)
========================  =====================================  ===========================

An open output ``...`` contributes the variant ``{}`` to Out (nothing is
guaranteed) and makes Prov every label.

Results are memoised per AST node (by identity) and per net definition, so
a net used many times is typed once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from snet.records import format_labels
from snet.source import Span
from snet.syntax import ast
from snet.typesys.scopes import Resolution, Scope

EVERY = None  # Prov of an open signature: every label

Variant = frozenset
Type = tuple


def unique(variants: Iterable[frozenset[str]]) -> tuple[frozenset[str], ...]:
    """Variants in first-appearance order, duplicates removed."""
    return tuple(dict.fromkeys(variants))


def format_type(t: Type) -> str:
    """``{a} | {b, <t>}``; a type with no variants is written ``()``."""
    if not t:
        return "()"
    return " | ".join(format_labels(v) for v in t)


@dataclass(frozen=True, slots=True)
class TypeInfo:
    """In, Out and Prov of one construct; ``open_out`` for a ``...`` output."""

    in_type: Type
    out_type: Type
    prov: frozenset | None
    open_out: bool = False


@dataclass(frozen=True, slots=True)
class DeclaredMap:
    """One type map of a signature, names expanded: ``outputs`` None when open."""

    inputs: Type
    outputs: Type | None
    span: Span | None = None


class TypeChecker:
    """Computes types over a resolved program without errors."""

    def __init__(self, resolution: Resolution) -> None:
        self.res = resolution
        self._expr: dict[int, TypeInfo] = {}
        self._net: dict[int, TypeInfo] = {}
        self._body: dict[int, TypeInfo] = {}
        self._sig: dict[int, tuple[DeclaredMap, ...]] = {}
        self._typedef: dict[int, Type] = {}
        self._box: dict[int, TypeInfo] = {}

    # ---- declared types

    def type_of(self, type_expr: ast.TypeExpr, scope: Scope) -> Type:
        out: list[frozenset] = []
        for atom in type_expr.atoms:
            if isinstance(atom, ast.RecordType):
                out.append(atom.label_set())
            else:
                out.extend(self.type_def(scope.resolved(atom.name, ast.TypeDef)))
        return unique(out)

    def type_def(self, definition: ast.TypeDef) -> Type:
        """The variants of a ``type`` definition, each definition expanded once.

        Types may name a type several times (``type B = A | A;``), so
        expanding names at every use could take exponential time.  The
        definitions a type depends on are expanded first, from an explicit
        stack, so a long chain of types does not recurse either.
        """
        done = self._typedef
        cached = done.get(id(definition))
        if cached is not None:
            return cached
        stack = [definition]
        while stack:
            d = stack[-1]
            if id(d) in done:
                stack.pop()
                continue
            scope = self.res.rhs_scope(d)
            pending = [t for t in (scope.resolved(a.name, ast.TypeDef) for a in d.type.atoms
                                   if isinstance(a, ast.TypeRef)) if id(t) not in done]
            if pending:
                stack.extend(pending)
                continue
            done[id(d)] = self.type_of(d.type, scope)
            stack.pop()
        return done[id(definition)]

    def signature_maps(self, signature: ast.Signature, scope: Scope) -> tuple[DeclaredMap, ...]:
        """The type maps of a signature with every type and typesig name expanded."""
        key = id(signature)
        cached = self._sig.get(key)
        if cached is not None:
            return cached
        maps: list[DeclaredMap] = []
        for item in signature.items:
            if isinstance(item, ast.TypesigRef):
                definition = scope.resolved(item.name, ast.TypesigDef)
                maps.extend(self.signature_maps(definition.signature, self.res.rhs_scope(definition)))
            else:
                outputs = None if item.output is None else self.type_of(item.output, scope)
                maps.append(DeclaredMap(self.type_of(item.input, scope), outputs, item.span))
        result = tuple(maps)
        self._sig[key] = result
        return result

    def declared(self, net: ast.NetDef) -> tuple[DeclaredMap, ...]:
        """The type maps of a net's signature (callers ask only for a net that has one)."""
        assert net.signature is not None, f"net '{net.name}' declares no signature"
        return self.signature_maps(net.signature, self.res.net_scope(net))

    # ---- nets

    def net_type(self, net: ast.NetDef) -> TypeInfo:
        """The type a net has where it is used: its declared one, or its body's."""
        key = id(net)
        cached = self._net.get(key)
        if cached is None:
            cached = self._declared_type(net) if net.signature is not None else self.body_type(net)
            self._net[key] = cached
        return cached

    def body_type(self, net: ast.NetDef) -> TypeInfo:
        """The inferred type of the net's connect expression."""
        key = id(net)
        cached = self._body.get(key)
        if cached is None:
            cached = self.infer(net.body, self.res.net_scope(net))
            self._body[key] = cached
        return cached

    def _declared_type(self, net: ast.NetDef) -> TypeInfo:
        maps = self.declared(net)
        ins = unique(v for m in maps for v in m.inputs)
        outs: list[frozenset] = []
        is_open = False
        for m in maps:
            if m.outputs is None:
                is_open = True
                outs.append(frozenset())
            else:
                outs.extend(m.outputs)
        prov = EVERY if is_open else frozenset().union(*(v for m in maps if m.outputs for v in m.outputs))
        return TypeInfo(ins, unique(outs), prov, is_open)

    def signature_text(self, net: ast.NetDef) -> str:
        """What ``snet check`` prints: the declared signature, or the inferred ``In -> Out``."""
        if net.signature is not None:
            return ", ".join(
                f"{format_type(m.inputs)} -> {'...' if m.outputs is None else format_type(m.outputs)}"
                for m in self.declared(net))
        t = self.body_type(net)
        return f"{format_type(t.in_type)} -> {'...' if t.open_out else format_type(t.out_type)}"

    def box_type(self, box: ast.BoxDecl) -> TypeInfo:
        """:func:`box_type`, memoised per declaration."""
        cached = self._box.get(id(box))
        if cached is None:
            cached = self._box[id(box)] = box_type(box)
        return cached

    # ---- expressions

    def infer(self, expr, scope: Scope) -> TypeInfo:
        """The type of a connect expression whose names are looked up in `scope`."""
        key = id(expr)
        cached = self._expr.get(key)
        if cached is None:
            cached = self._infer(expr, scope)
            self._expr[key] = cached
        return cached

    def _infer(self, e, scope: Scope) -> TypeInfo:
        if isinstance(e, ast.NameRef):
            target = scope.lookup(e.name)
            if isinstance(target, ast.BoxDecl):
                return self.box_type(target)
            return self.net_type(scope.resolved(e.name, ast.NetDef))
        if isinstance(e, ast.Identity):
            return TypeInfo((frozenset(),), (frozenset(),), frozenset())
        if isinstance(e, ast.Filter):
            outs = unique(frozenset(item.label for item in record.items)
                          for clause in e.clauses for record in clause.outputs)
            return TypeInfo((e.pattern.label_set(),), outs, frozenset().union(*outs))
        if isinstance(e, ast.SyncCell):
            patterns = [p.pattern.label_set() for p in e.patterns]
            union = frozenset().union(*patterns)
            return TypeInfo(unique(patterns), unique((union, frozenset())), union)
        if isinstance(e, ast.Serial):
            return serial_chain_type([self.infer(stage, scope) for stage in e.stages])
        if isinstance(e, ast.Parallel):
            infos = [self.infer(b, scope) for b in e.branches]
            return TypeInfo(unique(v for i in infos for v in i.in_type),
                            unique(v for i in infos for v in i.out_type),
                            _prov_union(i.prov for i in infos),
                            any(i.open_out for i in infos))
        if isinstance(e, ast.Star):
            inner = self.infer(e.operand, scope)
            exits = unique(p.pattern.label_set() for p in e.patterns)
            prov = EVERY if inner.prov is EVERY else inner.prov.union(*exits)
            return TypeInfo(unique(inner.in_type + exits), exits, prov)
        if isinstance(e, ast.Split):
            inner = self.infer(e.operand, scope)
            tags = {e.tag.text} | ({e.hi_tag.text} if e.hi_tag is not None else set())
            return TypeInfo(unique(v | tags for v in inner.in_type), inner.out_type, inner.prov, inner.open_out)
        if isinstance(e, ast.Feedback):
            inner = self.infer(e.operand, scope)
            back = [p.pattern.label_set() for p in e.patterns if p.guard is None]
            outs = tuple(v for v in inner.out_type if not any(p <= v for p in back))
            return TypeInfo(inner.in_type, outs, inner.prov, inner.open_out)
        if isinstance(e, ast.Placement):
            return self.infer(e.operand, scope)
        raise TypeError(f"not a connect expression: {e!r}")


def box_type(box: ast.BoxDecl) -> TypeInfo:
    outs = unique(frozenset(label.text for label in variant) for variant in box.outputs)
    ins = () if box.inputs is None else (frozenset(label.text for label in box.inputs),)
    return TypeInfo(ins, outs, frozenset().union(*outs))


def serial_type(a: TypeInfo, b: TypeInfo) -> TypeInfo:
    """The serial rule of §5.2 for ``A .. B``."""
    return serial_chain_type((a, b))


def serial_chain_type(stages) -> TypeInfo:
    """The serial rule of §5.2 folded left to right over ``S1 .. S2 .. Sn``.

    The result is the one of applying :func:`serial_type` stage by stage, but
    the growing Prov and input variants are extended in place instead of
    being copied at every stage, so a chain of n stages costs the size of its
    stages' types, not n times the size of the result.  Duplicate input
    variants are removed only where variants multiply (a stage with several
    input variants) and at the end: variants that become equal stay equal
    under the same extension, so the first-appearance order is the same.
    """
    first = stages[0]
    if len(stages) == 1:
        return first
    ins: list[set] = [set(v) for v in first.in_type]
    prov: set | None = EVERY if first.prov is EVERY else set(first.prov)
    for b in stages[1:]:
        if not ins:
            ins = [set(w) for w in b.in_type]
        elif b.in_type and prov is not EVERY:
            if len(b.in_type) == 1:
                extra = b.in_type[0] - prov
                if extra:
                    for v in ins:
                        v |= extra
            else:
                fresh = [w - prov for w in b.in_type]
                ins = [set(v) | w for v in unique(frozenset(v) for v in ins) for w in fresh]
        if prov is not EVERY:
            if b.prov is EVERY:
                prov = EVERY
            else:
                prov |= b.prov
    last = stages[-1]
    return TypeInfo(unique(frozenset(v) for v in ins), last.out_type,
                    EVERY if prov is EVERY else frozenset(prov), last.open_out)


def _prov_union(provs) -> frozenset | None:
    out: set = set()
    for p in provs:
        if p is EVERY:
            return EVERY
        out |= p
    return frozenset(out)
