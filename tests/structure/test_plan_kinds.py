"""The plan's node kinds and exit modes: one numbering on both sides of the Cython boundary.

``snet.plan.Kind`` / ``Exit`` are the Python declaration, ``snet_front/kinds.pxd``
the Cython one; the runtime exposes the compiled values, so a mismatch fails here
instead of silently running the wrong entity.
"""

from __future__ import annotations

from snet.plan import Exit, Kind


def test_node_kinds_agree_with_the_runtime():
    from snet_front.runtime import NODE_KINDS

    assert NODE_KINDS == {kind.name: kind.value for kind in Kind}


def test_exit_modes_agree_with_the_runtime():
    from snet_front.runtime import EXIT_MODES

    assert EXIT_MODES == {mode.name: mode.value for mode in Exit}


def test_every_kind_the_runtime_instantiates_has_a_factory():
    """Lowering a program with every construct and loading it into a runtime checks the factory table."""
    import snet
    from snet.backends.front import box_limits
    from snet.spg.lower import lower
    from snet_front.runtime import Runtime

    source = """
    box b ((a) -> (a));  box i ( -> (a));
    net n connect (([{a} -> {a}] .. b | i) .. ([| {a}, {c} |] * {c}) .. ([]..b) ! <k>
                   .. (b \\ {x}) .. (b * {a, <z>}) .. ([| {a}, {d} |] .. b ! <k>)) || [];
    """
    boxes = {"b": lambda a: {"a": a}, "i": lambda: None}
    net = snet.load(source, boxes=boxes)
    plan = lower(net.graph, boxes)
    present = {node.kind for node in plan.nodes}
    assert present >= set(Kind) - {Kind.EXECUTOR_SPLIT}
    Runtime(plan, [], 1, box_limits(plan, 1))  # raises if a kind had no factory
