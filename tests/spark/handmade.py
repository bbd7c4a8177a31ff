"""Property graphs built by hand, for tests that must not depend on the front end.

Each helper returns a :class:`~snet.spg.nodes.PropertyGraph` equal to what
the compiler makes of the program in its docstring (node ids dense, derived
flags set), so the Spark machinery can be tested on its own.
"""

from __future__ import annotations

from snet.source import Source, Span
from snet.spg.nodes import (BoxDeclaration, BoxNode, NetNode, Pattern, PropertyGraph, SerialNode, SplitNode,
                            StarNode, SyncNode)


class _Ids:
    def __init__(self, text: str):
        self.nodes = []
        self.source = Source("hand.snet", text)

    def span(self, line=1, column=1):
        return Span(self.source, line, column)

    def add(self, cls, **kw):
        node = cls(id=len(self.nodes), **kw)
        self.nodes.append(node)
        return node

    def graph(self, root, boxes=()):
        nodes = sorted(self.nodes, key=lambda n: n.id)
        return PropertyGraph(root, tuple(nodes), "hand", "-", tuple(boxes), self.source)


def _reserve(ids: _Ids):
    """Reserve an id for a parent built after its children; returns the id."""
    ids.nodes.append(None)
    return len(ids.nodes) - 1


def _place(ids: _Ids, node):
    ids.nodes[node.id] = node
    return node


def sync_split(tag="<k>", hi_tag=None, deterministic=False):
    """``net hand connect [| {a}, {b} |] ! <k>;`` (or ``! <lo>:<hi>``, ``!!``)."""
    ids = _Ids("net hand connect [| {a}, {b} |] ! <k>;")
    net_id = _reserve(ids)
    split_id = _reserve(ids)
    a, b = frozenset({"a"}), frozenset({"b"})
    sync = ids.add(SyncNode, span=ids.span(1, 19), in_type=(a, b), out_type=(a | b, frozenset()), stateful=True,
                   patterns=(Pattern(a), Pattern(b)))
    tags = frozenset({tag} | ({hi_tag} if hi_tag else set()))
    split = _place(ids, SplitNode(id=split_id, span=ids.span(1, 33), in_type=(a | tags, b | tags),
                                  out_type=sync.out_type, stateful=True, deterministic=deterministic,
                                  operand=sync, tag=tag, hi_tag=hi_tag))
    net = _place(ids, NetNode(id=net_id, span=ids.span(1, 5), in_type=split.in_type, out_type=split.out_type,
                              stateful=True, name="hand", body=split))
    return ids.graph(net)


def box_split(box="work", deterministic=False, sync_first=False):
    """``box work ((v, <k>) -> (v, <k>)); connect work ! <k>`` (``!!``), or ``([| {v}, {w} |] .. work) ! <k>``."""
    ids = _Ids("net hand { box work((v, <k>) -> (v, <k>)); } connect work ! <k>;")
    net_id = _reserve(ids)
    split_id = _reserve(ids)
    vk = frozenset({"v", "<k>"})
    decl = BoxDeclaration(box, ("v", "<k>"), (("v", "<k>"),), False, ids.span(1, 16))
    work = ids.add(BoxNode, span=ids.span(1, 49), in_type=(vk,), out_type=(vk,), has_boxes=True, name=box,
                   arguments=("v", "<k>"), variants=(("v", "<k>"),))
    operand = work
    stateful = False
    if sync_first:
        serial_id = _reserve(ids)
        v, w = frozenset({"v"}), frozenset({"w"})
        sync = ids.add(SyncNode, span=ids.span(1, 60), in_type=(v, w), out_type=(v | w, frozenset()),
                       stateful=True, patterns=(Pattern(v), Pattern(w)))
        operand = _place(ids, SerialNode(id=serial_id, span=ids.span(1, 49), in_type=(vk,), out_type=(vk,),
                                         stateful=True, has_boxes=True, stages=(sync, work)))
        stateful = True
    split = _place(ids, SplitNode(id=split_id, span=ids.span(1, 54), in_type=(vk,), out_type=operand.out_type,
                                  stateful=stateful, has_boxes=True, deterministic=deterministic,
                                  operand=operand, tag="<k>"))
    net = _place(ids, NetNode(id=net_id, span=ids.span(1, 5), in_type=split.in_type, out_type=split.out_type,
                              stateful=stateful, has_boxes=True, name="hand", body=split))
    return ids.graph(net, boxes=[decl])
