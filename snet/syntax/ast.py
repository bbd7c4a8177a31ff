"""The abstract syntax tree of an S-Net program.

One frozen, slotted dataclass per construct of language.md §3.  Every node
carries the :class:`~snet.source.Span` of the text it came from; spans are
excluded from equality (``compare=False``) so that a program printed and
parsed again compares equal to the original (the printer's round-trip
property).  Tag expressions are the nodes of :mod:`snet.tagexpr`, shared with
the property graph.

Labels are spelled as the language writes them: ``"a"`` for a field,
``"<t>"`` for a tag, ``"<#b>"`` for a binding tag.  The parser checks
nothing beyond the grammar; names, duplicates and types are later passes
(:mod:`snet.typesys`).

Where a construct is a chain, the AST keeps what was written: ``A | B | C``
is one :class:`Parallel` with three branches, ``(A | B) | C`` a Parallel
whose first branch is a Parallel.  Parentheses leave no other trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from snet.source import Span
from snet.tagexpr import Expr


def _span() -> Span | None:
    return field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Label:
    """One label occurrence: ``text`` is ``"a"``, ``"<t>"`` or ``"<#b>"``."""

    text: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class RecordType:
    """``{a, <t>, <#b>}``: a record type, a pattern, or a variant."""

    labels: tuple[Label, ...]
    span: Span | None = _span()

    def label_set(self) -> frozenset[str]:
        return frozenset(label.text for label in self.labels)


# ---- metadata (§3.5)

@dataclass(frozen=True, slots=True)
class MetaElement:
    """``<key attr="v" ...>text or children</key>``; text is trimmed and decoded."""

    key: str
    attributes: tuple[tuple[str, str], ...] = ()
    text: str = ""
    children: tuple["MetaElement", ...] = ()
    span: Span | None = _span()

    def attribute(self, name: str) -> str | None:
        for key, value in self.attributes:
            if key == name:
                return value
        return None


@dataclass(frozen=True, slots=True)
class Metadata:
    """A ``<metadata> ... </metadata>`` block: the elements directly under it."""

    elements: tuple[MetaElement, ...]
    span: Span | None = _span()


# ---- types and signatures (§3.2)

@dataclass(frozen=True, slots=True)
class TypeRef:
    """A ``NAME`` that names a type."""

    name: str
    span: Span | None = _span()


TypeAtom = Union[RecordType, TypeRef]


@dataclass(frozen=True, slots=True)
class TypeExpr:
    """``{a} | T | {b}``: one or more variants or type names."""

    atoms: tuple[TypeAtom, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class TypeMap:
    """``In -> Out``; ``output`` None stands for the open output ``...``."""

    input: TypeExpr
    output: TypeExpr | None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class TypesigRef:
    """A ``NAME`` in a signature that names a typesig."""

    name: str
    span: Span | None = _span()


SigItem = Union[TypeMap, TypesigRef]


@dataclass(frozen=True, slots=True)
class Signature:
    items: tuple[SigItem, ...]
    span: Span | None = _span()


# ---- connect expressions (§3.3)

@dataclass(frozen=True, slots=True)
class NameRef:
    """A box or net name used in a connect expression."""

    name: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Identity:
    """``[]``."""

    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class OutItem:
    """One label of a filter output record.

    ``a``: label "a", source "a"; ``b=a``: label "b", source "a";
    ``<t>``: label "<t>", source "<t>"; ``<t=e>``: label "<t>", expr e
    (likewise ``<#b>``).
    """

    label: str
    source: str | None = None
    expr: Expr | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class OutRecord:
    items: tuple[OutItem, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class FilterClause:
    """``if <guard> then outputs``; the last clause has guard None."""

    guard: Expr | None
    outputs: tuple[OutRecord, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Filter:
    """``[pattern -> action]``."""

    pattern: RecordType
    clauses: tuple[FilterClause, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Guarded:
    """A pattern with an optional guard (exit, back and synchro-cell patterns)."""

    pattern: RecordType
    guard: Expr | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class SyncCell:
    patterns: tuple[Guarded, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Serial:
    """``A .. B .. C`` as written (a parenthesised chain stays a nested Serial)."""

    stages: tuple["ConnectExpr", ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Parallel:
    """``A | B | ...``, or ``A || B || ...`` when ``deterministic``."""

    branches: tuple["ConnectExpr", ...]
    deterministic: bool = False
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Star:
    """``A * P`` or ``A ** P``."""

    operand: "ConnectExpr"
    patterns: tuple[Guarded, ...]
    deterministic: bool = False
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Split:
    """``A ! <t>``, ``!!``, ``!@``, ``!!@``; ``hi_tag`` set for ``A ! <lo>:<hi>``."""

    operand: "ConnectExpr"
    tag: Label
    hi_tag: Label | None = None
    deterministic: bool = False
    placed: bool = False
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Feedback:
    """``A \\ P``."""

    operand: "ConnectExpr"
    patterns: tuple[Guarded, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Placement:
    """``A @ n``."""

    operand: "ConnectExpr"
    machine: int
    span: Span | None = _span()


ConnectExpr = Union[NameRef, Identity, Filter, SyncCell, Serial, Parallel, Star, Split, Feedback, Placement]


# ---- definitions (§3.1)

@dataclass(frozen=True, slots=True)
class InlineCode:
    """``{<<< language | code >>>}`` after a box's signature (rts dialect; :mod:`snet.inlinecode`).

    ``line`` and ``column`` are where ``code`` starts in the program text.
    """

    language: str
    code: str
    line: int = field(default=1, compare=False, repr=False)
    column: int = field(default=1, compare=False, repr=False)
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class BoxDecl:
    """``box f (I -> O1 | O2);``; ``inputs`` None for an initialiser ``( -> O)``."""

    name: str
    inputs: tuple[Label, ...] | None
    outputs: tuple[tuple[Label, ...], ...]
    span: Span | None = _span()  # the name
    inline: InlineCode | None = None  # inline box code (rts dialect)


@dataclass(frozen=True, slots=True)
class NetDef:
    """``net n (sig) { defs } connect expr;``.

    ``signature`` None: no signature.  ``definitions`` None: no braces
    (``()`` is ``{ }``).  ``body`` None: a declaration-only net.
    """

    name: str
    signature: Signature | None
    definitions: tuple["Definition", ...] | None
    body: ConnectExpr | None
    span: Span | None = _span()  # the name


@dataclass(frozen=True, slots=True)
class TypeDef:
    name: str
    type: TypeExpr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class TypesigDef:
    name: str
    signature: Signature
    span: Span | None = _span()


Definition = Union[Metadata, BoxDecl, NetDef, TypeDef, TypesigDef]


@dataclass(frozen=True, slots=True)
class Program:
    definitions: tuple[Definition, ...]
    span: Span | None = _span()
