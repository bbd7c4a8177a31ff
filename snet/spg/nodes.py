"""The static property graph: the single input of every engine.

The front end builds it once per program; engines (the reference
interpreter, the FRONT runtime, the Spark split executor) read it and never
see an AST.  It is a *tree* of nodes, one node per construct occurrence:
each use of a named net is expanded into its own subtree, because every
occurrence is a separate instance with its own synchro-cells (language.md
§4).  Node ids are dense (``graph.nodes[i].id == i``) so engines can keep
per-node tables in lists.

What belongs here is everything an engine would otherwise recompute per
record: input types and routing variants of parallel branches, exit and
back patterns with their guards, split tags, synchro-cell patterns, filter
programs, determinism flags, and derived properties (``stateful``,
``has_boxes``, ``has_initialisers``).  Every combinator node is both the
dispatcher and the collector of its construct, so their pairing is explicit:
the collector of node *n* is *n* itself.

All nodes are frozen; the graph is shared read-only by all threads and
pickles (Spark ships it to executors).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping

from snet.source import Source, Span
from snet.tagexpr import Expr

Variant = frozenset  # frozenset[str] of labels in S-Net spelling
Type = tuple  # tuple[Variant, ...]; () means "no variants" (initialisers)


@dataclass(frozen=True, slots=True)
class Pattern:
    """A record pattern with an optional guard: exit, back and synchro-cell patterns."""

    labels: frozenset[str]
    guard: Expr | None = None


@dataclass(frozen=True, slots=True)
class FilterItem:
    """One label of a filter output record.

    * field copy ``b=a``: ``label="b", source="a"`` (``a`` alone: source ``"a"``);
    * tag/btag assignment ``<t=e>``: ``label="<t>", expr=e``;
    * bare tag/btag ``<t>``: ``label="<t>", source="<t>"``: copied, or 0 if absent.
    """

    label: str
    source: str | None = None
    expr: Expr | None = None


@dataclass(frozen=True, slots=True)
class FilterClause:
    """``if <guard> then outputs``; the last clause of a filter has guard None."""

    guard: Expr | None
    outputs: tuple[tuple[FilterItem, ...], ...]


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class Node:
    """Common fields of every construct.

    Invariant: ``in_type`` and ``out_type`` are the In and Out types of
    language.md §5.2 with duplicate variants removed.
    """

    id: int
    span: Span | None
    in_type: tuple[frozenset[str], ...]
    out_type: tuple[frozenset[str], ...]
    stateful: bool = False  # contains a synchro-cell
    has_boxes: bool = False  # contains a box (initialisers included)
    has_initialisers: bool = False
    deterministic: bool = False  # this combinator is ||, ** or !!

    kind = "node"

    @property
    def holds_state(self) -> bool:
        """A synchro-cell or an initialiser inside: the replicas of this node differ from one another (which of
        its nested replicas exist decides where initialisers still fire)."""
        return self.stateful or self.has_initialisers

    def children(self) -> tuple["Node", ...]:
        return ()


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class BoxNode(Node):
    """A box occurrence.  ``arguments`` is the input tuple in call order."""

    name: str
    arguments: tuple[str, ...]
    variants: tuple[tuple[str, ...], ...]
    initialiser: bool = False
    metadata: Mapping[str, str] = field(default_factory=dict)
    kind = "box"


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class IdentityNode(Node):
    """``[]``: passes every record unchanged, binding tags included."""

    kind = "identity"


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class FilterNode(Node):
    """``[pattern -> clauses]``."""

    pattern: frozenset[str]
    clauses: tuple[FilterClause, ...]
    kind = "filter"


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class SyncNode(Node):
    """``[| p1, ..., pn |]``."""

    patterns: tuple[Pattern, ...]
    kind = "sync"


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class SerialNode(Node):
    """``A .. B .. C``, flattened to n >= 2 stages."""

    stages: tuple[Node, ...]
    kind = "serial"

    def children(self) -> tuple[Node, ...]:
        return self.stages


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class ParallelNode(Node):
    """``A | B | ...`` or, with ``deterministic``, ``A || B || ...``.

    ``routes[i]`` are the input variants branch *i* is routed by (its In type,
    or its declared input if it is a signed net); ``()`` for a branch that
    only holds initialisers, which routing never selects.
    """

    branches: tuple[Node, ...]
    routes: tuple[tuple[frozenset[str], ...], ...]
    kind = "parallel"

    def children(self) -> tuple[Node, ...]:
        return self.branches


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class StarNode(Node):
    """``A * P`` / ``A ** P``: exit patterns tried in order before every replica."""

    operand: Node
    exits: tuple[Pattern, ...]
    kind = "star"

    def children(self) -> tuple[Node, ...]:
        return (self.operand,)


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class SplitNode(Node):
    """``A ! <t>``, ``A !! <t>``, ``A !@ <t>``, range ``A ! <lo>:<hi>``.

    ``tag`` is spelled (``"<t>"`` or ``"<#t>"``); ``hi_tag`` is set for a range
    split.  ``placed`` marks ``!@``/``!!@`` (a placement hint only).
    """

    operand: Node
    tag: str
    hi_tag: str | None = None
    placed: bool = False
    kind = "split"

    def children(self) -> tuple[Node, ...]:
        return (self.operand,)


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class FeedbackNode(Node):
    """``A \\ P``: outputs of A matching a back pattern go round again."""

    operand: Node
    back: tuple[Pattern, ...]
    kind = "feedback"

    def children(self) -> tuple[Node, ...]:
        return (self.operand,)


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class NetNode(Node):
    """An occurrence of a named net: transparent at run time.

    Kept so that messages, statistics and drawings can name the net.
    ``placement`` is the ``@n`` hint when the occurrence carried one.
    """

    name: str
    body: Node
    placement: int | None = None
    kind = "net"

    def children(self) -> tuple[Node, ...]:
        return (self.body,)


@dataclass(frozen=True, slots=True)
class BoxDeclaration:
    """A declared box (whether or not the run net uses it), for binding."""

    name: str
    arguments: tuple[str, ...]
    variants: tuple[tuple[str, ...], ...]
    initialiser: bool
    span: Span | None
    # an inline Python body (rts dialect): (code, line, column) in the file of `span` (snet.inlinecode)
    inline: tuple[str, int, int] | None = None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class PropertyGraph:
    """A compiled program, ready for any engine.

    Attributes:
        root: the top net's node (a :class:`NetNode`).
        nodes: every node, ``nodes[i].id == i``.
        net_name: the name of the net that runs.
        signature: the net's signature as ``snet check`` prints it.
        boxes: the boxes declared in the file, to bind before the run; the
            run net's boxes are a subset (``BoxNode.name``).
        source: the program text, for messages and for shipping to Spark.
        warnings: rendered warning messages found while compiling.
        linked: the ``.snet`` files whose nets were bound to declared-only
            nets of the program (rts dialect, :mod:`snet.spg.linking`).
    """

    root: Node
    nodes: tuple[Node, ...]
    net_name: str
    signature: str
    boxes: tuple[BoxDeclaration, ...]
    source: Source
    warnings: tuple[str, ...] = ()
    linked: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """``<snet.PropertyGraph of net pair: 5 nodes>``: short, for a prompt; :meth:`dump` has every field."""
        return f"<snet.PropertyGraph of net {self.net_name}: {len(self.nodes)} node{'s' if len(self.nodes) != 1 else ''}>"

    def dump(self) -> str:
        """Every field of the graph, nodes and source included, as one (long) constructor-style text."""
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__dataclass_fields__)
        return f"PropertyGraph({fields})"

    def walk(self) -> Iterator[Node]:
        """Every node, parents before children."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children()))

    def used_boxes(self) -> frozenset[str]:
        """The box names that occur in the run net."""
        return frozenset(n.name for n in self.nodes if isinstance(n, BoxNode))
