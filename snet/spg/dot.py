"""Graphviz drawing of a property graph, for ``snet graph`` and the docs.

The drawing shows the run-time structure, not the syntax tree:

* a **box** is a rectangle (an initialiser has a double border), a
  **filter** a trapezium, ``[]`` a small circle, a **synchro-cell** a 3-D box;
* every **replication or routing combinator** is drawn as a pair: a
  *dispatcher* node (a triangle pointing into the construct) and its
  *collector* (an inverted triangle), with the operand or branches between
  them in a cluster:

  - ``|`` / ``||``: the dispatcher's edges carry each branch's routing
    variants; an initialiser-only branch gets a dashed "never routed" edge;
  - ``*`` / ``**``: the dispatcher is the exit test before each replica;
    its edge to the collector carries the exit patterns, a dashed edge from
    the replica back to the test stands for "next replica";
  - ``!`` (all forms): the operand cluster is "one replica per <t>";
  - ``\\``: the collector tests the back patterns; a dashed edge returns to
    the dispatcher (the input merge);

* deterministic forms (``||``, ``**``, ``!!``, ``!!@``) are drawn with bold
  borders and a ``det`` mark; ``@n`` and ``!@`` show the placement;
* a **named net** occurrence is a labelled cluster; serial composition is
  simply the edges from one stage to the next.

Node ids in the DOT text are ``n<id>``, ``d<id>`` and ``c<id>`` after the
property-graph node ids, so a drawing can be matched with messages.
"""

from __future__ import annotations

import difflib
from typing import Callable, Iterable, Mapping

from snet.errors import SNetUsageError
from snet.records import format_labels
from snet.spg.nodes import (BoxNode, FeedbackNode, FilterNode, IdentityNode, NetNode, Node, ParallelNode,
                            Pattern, PropertyGraph, SerialNode, SplitNode, StarNode, SyncNode)
from snet.typesys.types import format_type


def quote(text: str) -> str:
    """`text` as a DOT double-quoted string: backslashes, quotes and line breaks escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def attributes(attrs: dict[str, str]) -> list[str]:
    """``name="value"`` for each attribute, every value quoted.

    DOT reads an unquoted value only when it is a bare identifier or a
    number, so ``style=rounded,bold`` is a syntax error; quoting every value
    here, at the one place attributes are written, keeps any value valid.
    """
    return [f"{k}={quote(v)}" for k, v in attrs.items()]


def _patterns(patterns: tuple[Pattern, ...]) -> str:
    return ", ".join(format_labels(p.labels) + (" if <…>" if p.guard is not None else "") for p in patterns)


#: what a caller adds to each box of a drawing: a line under its label and attributes (``snet explain``)
BoxDecoration = Callable[[BoxNode], tuple[str, dict[str, str]]]


class _Dot:
    def __init__(self, collapse: frozenset[str] = frozenset(), decorate: BoxDecoration | None = None,
                 marks: Mapping[int, tuple[str, dict[str, str]]] | None = None) -> None:
        self.lines: list[str] = []
        self.indent = 1
        self.collapse = collapse  # named nets drawn as one node
        self.decorate = decorate
        self.marks = marks or {}  # node id -> a line under its label and attributes (fused chains)

    def stage(self, n: Node, label: str, **attrs: str) -> None:
        """The node of a box or filter ``n``, with its mark if it has one."""
        mark = self.marks.get(n.id)
        if mark is not None:
            label = f"{label}\n{mark[0]}"
            attrs = {**attrs, **mark[1]}
        self.node(f"n{n.id}", label, **attrs)

    def box(self, n: BoxNode, label: str) -> None:
        """The node of box `n`, with what ``decorate`` adds."""
        attrs = {"shape": "box"}
        if n.initialiser:
            attrs["peripheries"] = "2"
        if self.decorate is not None:
            extra, more = self.decorate(n)
            label = f"{label}\n{extra}" if extra else label
            attrs.update(more)
        self.stage(n, label, **attrs)

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def node(self, name: str, label: str, **attrs: str) -> None:
        self.emit(f"{name} [{', '.join(attributes({'label': label, **attrs}))}];")

    def edge(self, a: str, b: str, label: str | None = None, **attrs: str) -> None:
        parts = attributes(({"label": label} if label else {}) | attrs)
        self.emit(f"{a} -> {b}" + (f" [{', '.join(parts)}]" if parts else "") + ";")

    def open_cluster(self, name: str, label: str, **attrs: str) -> None:
        self.emit(f"subgraph cluster_{name} {{")
        self.indent += 1
        for attribute in attributes({"label": label, **attrs}):
            self.emit(f"{attribute};")

    def close_cluster(self) -> None:
        self.indent -= 1
        self.emit("}")

    # ---- nodes; each returns (entry, exit) DOT node names

    def draw(self, n: Node) -> tuple[str, str]:
        if isinstance(n, BoxNode):
            name = f"n{n.id}"
            args = ", ".join(n.arguments)
            outs = " | ".join("(" + ", ".join(v) + ")" for v in n.variants)
            head = f"box {n.name}" + (" (initialiser)" if n.initialiser else "")
            sig = f"({'' if n.initialiser else '(' + args + ')'} -> {outs})"
            self.box(n, f"{head}\n{sig}")
            return name, name
        if isinstance(n, IdentityNode):
            self.node(f"n{n.id}", "[]", shape="circle", width="0.3")
            return f"n{n.id}", f"n{n.id}"
        if isinstance(n, FilterNode):
            outs = " | ".join(format_labels(v) for v in n.out_type) or "nothing"
            self.stage(n, f"filter {format_labels(n.pattern)}\n-> {outs}", shape="trapezium")
            return f"n{n.id}", f"n{n.id}"
        if isinstance(n, SyncNode):
            self.node(f"n{n.id}", "[| " + _patterns(n.patterns) + " |]", shape="box3d")
            return f"n{n.id}", f"n{n.id}"
        if isinstance(n, SerialNode):
            ends = [self.draw(s) for s in n.stages]
            for (_, a), (b, _) in zip(ends, ends[1:]):
                self.edge(a, b)
            return ends[0][0], ends[-1][1]
        if isinstance(n, NetNode) and n.name in self.collapse:
            sig = f"{format_type(n.in_type)} -> {format_type(n.out_type)}"
            self.node(f"n{n.id}", f"net {n.name}\n{sig}", shape="box", style="rounded,bold")
            return f"n{n.id}", f"n{n.id}"
        if isinstance(n, NetNode):
            label = f"net {n.name}" if not n.name.startswith("@") else "placement"
            if n.placement is not None:
                label += f" @ {n.placement}"
            self.open_cluster(f"n{n.id}", label, style="rounded")
            body = self.draw(n.body)
            self.close_cluster()
            return body
        if isinstance(n, ParallelNode):
            return self._parallel(n)
        if isinstance(n, StarNode):
            return self._star(n)
        if isinstance(n, SplitNode):
            return self._split(n)
        if isinstance(n, FeedbackNode):
            return self._feedback(n)
        raise TypeError(f"unknown node {n!r}")

    def _pair(self, n: Node, symbol: str, what: str) -> tuple[str, str]:
        det = {"style": "bold", "penwidth": "2"} if n.deterministic else {}
        mark = " (det)" if n.deterministic else ""
        d, c = f"d{n.id}", f"c{n.id}"
        fused = self.marks.get(n.id)  # a split that is a stage of a fused chain: its dispatcher checks the tag
        label = f"{symbol}\n{what} dispatcher{mark}" + (f"\n{fused[0]}: the tag's check" if fused else "")
        self.node(d, label, shape="triangle", **{**det, **(fused[1] if fused else {})})
        self.node(c, f"{symbol}\n{what} collector{mark}", shape="invtriangle", **det)
        return d, c

    def _parallel(self, n: ParallelNode) -> tuple[str, str]:
        d, c = self._pair(n, "||" if n.deterministic else "|", "parallel")
        for branch, route in zip(n.branches, n.routes):
            self.open_cluster(f"b{branch.id}", "branch", style="dotted")
            entry, exit_ = self.draw(branch)
            self.close_cluster()
            if route:
                self.edge(d, entry, format_type(route))
            else:
                self.edge(d, entry, "never routed (initialisers)", style="dashed")
            self.edge(exit_, c)
        return d, c

    def _star(self, n: StarNode) -> tuple[str, str]:
        d, c = self._pair(n, "**" if n.deterministic else "*", "star")
        self.open_cluster(f"r{n.id}", "replica", style="dashed")
        entry, exit_ = self.draw(n.operand)
        self.close_cluster()
        self.edge(d, entry, "no exit")
        self.edge(exit_, d, "next replica", style="dashed")
        self.edge(d, c, "exit " + _patterns(n.exits))
        return d, c

    def _split(self, n: SplitNode) -> tuple[str, str]:
        op = ("!!" if n.deterministic else "!") + ("@" if n.placed else "")
        key = n.tag + (f":{n.hi_tag}" if n.hi_tag else "")
        d, c = self._pair(n, f"{op} {key}", "split")
        self.open_cluster(f"r{n.id}", f"one replica per {key}", style="dashed")
        entry, exit_ = self.draw(n.operand)
        self.close_cluster()
        self.edge(d, entry, key)
        self.edge(exit_, c)
        return d, c

    def _feedback(self, n: FeedbackNode) -> tuple[str, str]:
        d, c = self._pair(n, "\\", "feedback")
        entry, exit_ = self.draw(n.operand)
        self.edge(d, entry)
        self.edge(exit_, c)
        self.edge(c, d, "back " + _patterns(n.back), style="dashed", constraint="false")
        return d, c


class _CompactDot(_Dot):
    """The compact drawing: each combinator once, as a cluster around its operands, with no type labels.

    Boxes show their names only; a parallel composition fans out from and
    in to a small point; ``*``, ``!`` and ``\\`` are a labelled cluster
    around their operand, so a network of dozens of boxes stays readable.
    """

    def draw(self, n: Node) -> tuple[str, str]:
        if isinstance(n, BoxNode):
            self.box(n, n.name)
            return f"n{n.id}", f"n{n.id}"
        if isinstance(n, FilterNode):
            self.stage(n, f"filter {format_labels(n.pattern)}", shape="trapezium")
            return f"n{n.id}", f"n{n.id}"
        return super().draw(n)

    def _around(self, n: Node, label: str, operand: Node) -> tuple[str, str]:
        det = {"penwidth": "2"} if n.deterministic else {}
        self.open_cluster(f"r{n.id}", label, style="rounded", **det)
        ends = self.draw(operand)
        self.close_cluster()
        return ends

    def _parallel(self, n: ParallelNode) -> tuple[str, str]:
        d, c = f"d{n.id}", f"c{n.id}"
        symbol = "||" if n.deterministic else "|"
        self.open_cluster(f"p{n.id}", symbol, style="dotted")
        self.node(d, "", shape="point", width="0.08")
        self.node(c, "", shape="point", width="0.08")
        for branch in n.branches:
            entry, exit_ = self.draw(branch)
            self.edge(d, entry)
            self.edge(exit_, c)
        self.close_cluster()
        return d, c

    def _star(self, n: StarNode) -> tuple[str, str]:
        symbol = "**" if n.deterministic else "*"
        return self._around(n, f"{symbol} until {_patterns(n.exits)}", n.operand)

    def _split(self, n: SplitNode) -> tuple[str, str]:
        op = ("!!" if n.deterministic else "!") + ("@" if n.placed else "")
        key = n.tag + (f":{n.hi_tag}" if n.hi_tag else "")
        fused = self.marks.get(n.id)
        label = f"{op} {key}: one replica per value" + (f"\n{fused[0]}: the tag's check" if fused else "")
        return self._around(n, label, n.operand)

    def _feedback(self, n: FeedbackNode) -> tuple[str, str]:
        return self._around(n, f"\\ back {_patterns(n.back)}", n.operand)


#: fill colours of fused chains, one per chain in turn (light, so the labels stay readable)
CHAIN_COLOURS = ("#cfe8ff", "#d9f2d0", "#fde3c8", "#e8dcf5", "#fff4bf", "#d6f0ef")


def to_dot(graph: PropertyGraph, *, compact: bool = False, left_to_right: bool = False,
           collapse: Iterable[str] = (), decorate: BoxDecoration | None = None, note: str = "",
           chains: Iterable[tuple[int, ...]] = ()) -> str:
    """The DOT text of `graph`'s run net.

    Args:
        compact: each combinator once around its operands, boxes by name
            only, no type labels (see :class:`_CompactDot`).
        left_to_right: lay the stages out from left to right (default: top
            to bottom, which keeps a long pipeline readable on a screen).
        collapse: names of nets drawn as one node with their signature
            instead of their inside.
        decorate: for each box, a line added under its label and DOT
            attributes (a fill colour); ``snet explain`` draws a run's
            figures so.
        note: a line under the drawing's title.
        chains: fused chains (node ids in order, :mod:`snet.spg.fusion`):
            their stages are filled in one colour per chain and labelled
            with the chain and their place in it.

    Raises:
        SNetUsageError: a name in `collapse` that is no net of the drawing.
    """
    collapse = frozenset(collapse)
    unknown = sorted(collapse - _net_names(graph.root))
    if unknown:
        known = sorted(_net_names(graph.root))
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SNetUsageError(f"no net '{unknown[0]}' to collapse in net {graph.net_name} "
                             f"({hint}nets: {', '.join(known) or 'none'})")
    marks = {}
    for number, chain in enumerate(chains, 1):
        colour = CHAIN_COLOURS[(number - 1) % len(CHAIN_COLOURS)]
        for place, n in enumerate(chain, 1):
            marks[n] = (f"fused chain {number}, stage {place} of {len(chain)}",
                        {"style": "filled", "fillcolor": colour})
    dot = _CompactDot(collapse, decorate, marks) if compact else _Dot(collapse, decorate, marks)
    title = f"net {graph.net_name}: {graph.signature}" + (f"\n{note}" if note else "")
    for attribute in attributes({"rankdir": "LR" if left_to_right else "TB", "labelloc": "t", "label": title}):
        dot.emit(f"{attribute};")
    dot.emit(f"node [{', '.join(attributes({'fontname': 'Helvetica', 'fontsize': '10'}))}];")
    dot.emit(f"edge [{', '.join(attributes({'fontname': 'Helvetica', 'fontsize': '9'}))}];")
    dot.node("input", "input", shape="plaintext")
    dot.node("output", "output", shape="plaintext")
    entry, exit_ = dot.draw(graph.root)
    dot.edge("input", entry, None if compact else format_type(graph.root.in_type))
    dot.edge(exit_, "output", None if compact else format_type(graph.root.out_type))
    return "digraph snet {\n" + "\n".join(dot.lines) + "\n}\n"


def _net_names(node: Node) -> set[str]:
    """The names of the named nets drawn inside `node` (placements excluded)."""
    names = {node.name} if isinstance(node, NetNode) and not node.name.startswith("@") else set()
    for child in node.children():
        names |= _net_names(child)
    return names
