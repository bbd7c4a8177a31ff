"""Property graphs built by hand, so the FRONT engine can be tested without the front end.

Each helper returns a *spec*; :func:`graph` numbers the nodes parents-first
(as the front end does) and builds the frozen nodes.  Input types are a
simple approximation of language.md §5.2, enough for routing in tests.
"""

from __future__ import annotations

from snet.spg.nodes import (BoxDeclaration, BoxNode, FeedbackNode, FilterClause, FilterItem, FilterNode,
                            IdentityNode, NetNode, ParallelNode, Pattern, PropertyGraph, SerialNode, SplitNode,
                            StarNode, SyncNode)
from snet.source import Source
from snet.tagexpr import Binary, Const, Ref

__all__ = ["box", "init", "ident", "filt", "out", "sync", "serial", "par", "star", "split", "feedback", "net",
           "graph", "pat", "T", "C", "B"]


def T(label: str) -> Ref:
    return Ref(label)


def C(value: int) -> Const:
    return Const(value)


def B(op: str, left, right) -> Binary:
    return Binary(op, left, right)


def pat(*labels: str, guard=None) -> Pattern:
    return Pattern(frozenset(labels), guard)


def out(*items) -> tuple:
    """A filter output: strings copy a field/tag; (label, expr) assigns a tag; (label, 'src') renames a field."""
    result = []
    for item in items:
        if isinstance(item, str):
            result.append(FilterItem(item, source=item))
        else:
            label, value = item
            if isinstance(value, str):
                result.append(FilterItem(label, source=value))
            else:
                result.append(FilterItem(label, expr=value))
    return tuple(result)


def box(name, args, *variants):
    return ("box", name, tuple(args), tuple(tuple(v) for v in variants), False)


def init(name, *variants):
    return ("box", name, (), tuple(tuple(v) for v in variants), True)


def ident():
    return ("ident",)


def filt(pattern, *clauses):
    """``clauses``: (guard or None, [outputs...]); the last clause should have guard None."""
    return ("filter", frozenset(pattern), tuple(FilterClause(g, tuple(outs)) for g, outs in clauses))


def sync(*patterns):
    return ("sync", tuple(patterns))


def serial(*stages):
    return ("serial", stages)


def par(*branches, det=False):
    return ("par", branches, det)


def star(operand, *exits, det=False):
    return ("star", operand, tuple(exits), det)


def split(operand, tag, hi=None, det=False):
    return ("split", operand, tag, hi, det)


def feedback(operand, *back):
    return ("feedback", operand, tuple(back))


def net(name, body):
    return ("net", name, body)


def _in_type(node) -> tuple:
    if isinstance(node, BoxNode):
        return () if node.initialiser else (frozenset(node.arguments),)
    if isinstance(node, FilterNode):
        return (node.pattern,)
    if isinstance(node, IdentityNode):
        return (frozenset(),)
    if isinstance(node, SyncNode):
        return tuple(dict.fromkeys(p.labels for p in node.patterns))
    if isinstance(node, SerialNode):
        return _in_type(node.stages[0])
    if isinstance(node, NetNode):
        return _in_type(node.body)
    if isinstance(node, ParallelNode):
        return tuple(dict.fromkeys(v for r in node.routes for v in r))
    if isinstance(node, StarNode):
        return tuple(dict.fromkeys([p.labels for p in node.exits] + list(_in_type(node.operand))))
    if isinstance(node, SplitNode):
        return tuple(dict.fromkeys(v | {node.tag} for v in _in_type(node.operand)))
    if isinstance(node, FeedbackNode):
        return _in_type(node.operand)
    return (frozenset(),)


def graph(spec, name="top") -> PropertyGraph:
    """Build the property graph of ``spec`` (wrapped in a top-level net)."""
    nodes: list = []
    decls: dict[str, BoxDeclaration] = {}

    def build(s):
        nid = len(nodes)
        nodes.append(None)
        kind = s[0]
        common = dict(id=nid, span=None, in_type=(), out_type=())
        if kind == "box":
            _, bname, args, variants, is_init = s
            node = BoxNode(**common, name=bname, arguments=args, variants=variants, initialiser=is_init,
                           has_boxes=True, has_initialisers=is_init)
            decls.setdefault(bname, BoxDeclaration(bname, args, variants, is_init, None))
        elif kind == "ident":
            node = IdentityNode(**common)
        elif kind == "filter":
            node = FilterNode(**common, pattern=s[1], clauses=s[2])
        elif kind == "sync":
            node = SyncNode(**common, patterns=s[1], stateful=True)
        elif kind == "serial":
            stages = tuple(build(x) for x in s[1])
            node = SerialNode(**common, stages=stages)
        elif kind == "par":
            branches = tuple(build(x) for x in s[1])
            node = ParallelNode(**common, branches=branches, routes=tuple(_in_type(b) for b in branches),
                                deterministic=s[2])
        elif kind == "star":
            node = StarNode(**common, operand=build(s[1]), exits=s[2], deterministic=s[3])
        elif kind == "split":
            node = SplitNode(**common, operand=build(s[1]), tag=s[2], hi_tag=s[3], deterministic=s[4])
        elif kind == "feedback":
            node = FeedbackNode(**common, operand=build(s[1]), back=s[2])
        elif kind == "net":
            node = NetNode(**common, name=s[1], body=build(s[2]))
        else:
            raise ValueError(kind)
        nodes[nid] = node
        return node

    root = build(("net", name, spec))
    return PropertyGraph(root=root, nodes=tuple(nodes), net_name=name, signature="", boxes=tuple(decls.values()),
                         source=Source("<handmade>", ""))
