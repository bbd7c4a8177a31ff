"""The box caller as built (compiled by Cython) and as plain Python source.

``snet/core/boxes.py`` is compiled at install time; the same file also runs
uncompiled.  Both must give the same outputs and the same errors, so every
case here runs on the compiled module and on the source loaded as Python.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect

import pytest

import snet
import snet.core.boxes as compiled_boxes
from snet.errors import SNetBoxError


def _source_module():
    path = inspect.getsourcefile(compiled_boxes) or compiled_boxes.__file__
    path = path[: path.rindex("boxes")] + "boxes.py"
    loader = importlib.machinery.SourceFileLoader("snet_core_boxes_source", path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


SOURCE = _source_module()


def test_the_installed_box_caller_is_compiled():
    assert compiled_boxes.__file__.endswith((".so", ".pyd")), compiled_boxes.__file__
    assert SOURCE.__file__.endswith(".py")


def _caller(module, text, name, function):
    graph = snet.load(text, boxes={name: function}).graph
    node = next(n for n in graph.nodes if n.kind == "box" and n.name == name)
    return module.BoxCaller(node, function)


BOTH = pytest.mark.parametrize("module", [compiled_boxes, SOURCE], ids=["compiled", "source"])


@BOTH
def test_arguments_inheritance_and_variants(module):
    def f(a, k):
        if a < 0:
            return None
        if a == 0:
            return [{"b": 0}, {"<t>": k, "a": 1}]
        return {"a": a + k, "<t>": 1}

    call = _caller(module, "box f ((a, <k>) -> (a, <t>) | (b)); net n connect f;", "f", f)
    assert call({"a": 2, "<k>": 3, "x": "keep", "<#b>": 9}) == [{"x": "keep", "a": 5, "<t>": 1}]
    assert call({"a": 0, "<k>": 4}) == [{"b": 0}, {"<t>": 4, "a": 1}]
    assert call({"<#b>": 1, "a": -1, "<k>": 0}) == []
    # the same shapes again, now remembered
    assert call({"a": 2, "<k>": 3, "x": "keep", "<#b>": 9}) == [{"x": "keep", "a": 5, "<t>": 1}]
    assert call({"a": 0, "<k>": 4, "y": 1}) == [{"y": 1, "b": 0}, {"y": 1, "<t>": 4, "a": 1}]


@BOTH
def test_zero_and_several_arguments(module):
    tick = _caller(module, "box tick (() -> (<t>)); net n connect tick;", "tick", lambda: {"<t>": 7})
    assert tick({"a": 1}) == [{"a": 1, "<t>": 7}]
    assert tick.fire() == [{"<t>": 7}]
    seen = []
    three = _caller(module, "box g ((<n>, s, <#k>) -> (r)); net n connect g;", "g",
                    lambda n, s, k: seen.append((n, s, k)) or {"r": 1})
    assert three({"s": "x", "<#k>": 7, "<n>": 3}) == [{"r": 1}]
    assert seen == [(3, "x", 7)]


@BOTH
def test_errors_name_the_box_and_keep_the_users_frames(module):
    def helper(a):
        return 1 // a

    def f(a):
        return {"a": helper(a)}

    call = _caller(module, "box f ((a) -> (a)); net n connect f;", "f", f)
    assert call({"a": 1}) == [{"a": 1}]
    with pytest.raises(SNetBoxError) as info:
        call({"a": 0, "z": 1})
    assert "box 'f' raised ZeroDivisionError" in str(info.value) and "{a, z}" in str(info.value)
    detail = info.value.detail
    assert "in helper" in detail and "in f" in detail and "boxes.py" not in detail

    wrong = _caller(module, "box f ((a) -> (a)); net n connect f;", "f", lambda a: {"a": a, "extra": 1})
    with pytest.raises(SNetBoxError, match="fits none of its output variants"):
        wrong({"a": 1})
    with pytest.raises(SNetBoxError, match="lacks a"):
        call({"b": 1})
    tagged = _caller(module, "box f ((a) -> (<t>)); net n connect f;", "f", lambda a: {"<t>": a})
    assert tagged({"a": 3}) == [{"<t>": 3}]
    with pytest.raises(SNetBoxError, match="not an int"):
        tagged({"a": True})


@BOTH
def test_the_hot_path_entry_gives_a_lone_output_as_itself(module):
    """``hop`` (the FRONT entity's entry): the outputs of ``__call__``, a lone one unwrapped."""
    def f(a):
        if a < 0:
            return None
        if a == 0:
            return [{"b": 0}, {"a": 1}]
        if a == 1:
            return [{"b": 1}]
        return {"a": a - 1}

    call = _caller(module, "box f ((a) -> (a) | (b)); net n connect f;", "f", f)
    first = {"a": 5, "x": 1, "<#g>": 2}
    assert call.hop(first) == {"x": 1, "a": 4}
    # the record's labels in its order, a consumed label that the result sets again in its old place
    assert list(call.hop(first)) == ["a", "x"]
    # the first shape is remembered; another shape, and the same labels in another order
    assert call.hop({"y": 2, "a": 5}) == {"y": 2, "a": 4}
    assert list(call.hop({"a": 5, "<#g>": 2, "x": 1})) == ["a", "x"]
    assert list(call.hop({"x": 1, "a": 5})) == ["x", "a"]
    assert call.hop({"a": 5, "x": 1, "<#g>": 2, "z": 0}) == {"x": 1, "z": 0, "a": 4}
    assert call.hop({"a": 1, "x": 1, "<#g>": 2}) == {"x": 1, "b": 1}
    assert call.hop({"a": 0, "x": 1, "<#g>": 2}) == [{"x": 1, "b": 0}, {"x": 1, "a": 1}]
    assert call.hop({"a": -1, "x": 1, "<#g>": 2}) == []
    assert call.hop({"a": 3}) == {"a": 2}  # nothing inherited: the result is the record
    with pytest.raises(SNetBoxError, match="lacks a"):
        call.hop({"x": 1})
    two = _caller(module, "box g ((a, <k>) -> (a)); net n connect g;", "g", lambda a, k: {"a": a * k})
    assert two.hop({"<k>": 3, "a": 2, "z": 0}) == {"z": 0, "a": 6}
    with pytest.raises(SNetBoxError, match="lacks <k>"):
        two.hop({"a": 1})
    # an output label that overrides an inherited one keeps the record's order
    over = _caller(module, "box g ((a) -> (x)); net n connect g;", "g", lambda a: {"x": a})
    assert list(over.hop({"x": 0, "a": 7, "y": 1}).items()) == [("x", 7), ("y", 1)]


@BOTH
def test_variants_are_checked_label_by_label_and_past_four_by_shape(module):
    few = _caller(module, "box f ((a) -> (a) | (a, b) | (<t>, c)); net n connect f;", "f",
                  lambda a: [{"a": 1}, {"b": 2, "a": 1}, {"c": 0, "<t>": 3}][a])
    assert [few.hop({"a": i}) for i in range(3)] == [{"a": 1}, {"b": 2, "a": 1}, {"c": 0, "<t>": 3}]
    for wrong in ({"b": 1}, {"a": 1, "c": 1}, {"a": 1, "b": 2, "c": 3}, {}):
        bad = _caller(module, "box f ((a) -> (a) | (a, b)); net n connect f;", "f", lambda a, w=wrong: w)
        with pytest.raises(SNetBoxError, match="fits none of its output variants"):
            bad.hop({"a": 0})
    tags = _caller(module, "box f ((a) -> (<t>, c)); net n connect f;", "f", lambda a: {"c": 1, "<t>": a})
    with pytest.raises(SNetBoxError, match="not an int"):
        tags.hop({"a": "x"})
    variants = " | ".join(f"(v{i})" for i in range(6))
    many = _caller(module, f"box f ((a) -> {variants}); net n connect f;", "f", lambda a: {f"v{a}": a})
    assert [many.hop({"a": i}) for i in (5, 0, 5)] == [{"v5": 5}, {"v0": 0}, {"v5": 5}]
    with pytest.raises(SNetBoxError, match="fits none of its output variants"):
        many.hop({"a": 6})


def _chain_of(module, boxes: dict) -> tuple:
    """The network ``b1 .. b2 .. ...`` of ``{name: (function, signature)}`` and its box callers, in order."""
    text = " ".join(f"box {name} ({signature});" for name, (_, signature) in boxes.items())
    text += " net n connect " + " .. ".join(boxes) + ";"
    functions = {name: function for name, (function, _) in boxes.items()}
    net = snet.load(text, boxes=functions)
    nodes = {n.name: n for n in net.graph.nodes if n.kind == "box"}
    return net, tuple(module.BoxCaller(nodes[name], functions[name]) for name in boxes)


@BOTH
def test_a_chain_of_callers_runs_depth_first_as_the_reference_engine(module):
    """``chain_outputs``: records through a serial chain of callers, outputs and call order the engine's."""
    calls = []

    def split(a):
        calls.append(("split", a))
        return None if a < 0 else [{"a": a}, {"a": a + 10}] if a % 2 else {"a": a}

    def double(a):
        calls.append(("double", a))
        if a == 13:
            raise ValueError("thirteen")
        return ({"b": 2 * a} for _ in range(1))

    def last(b):
        calls.append(("last", b))
        return {"c": b + 1}

    net, chain = _chain_of(module, {"split": (split, "(a) -> (a)"), "double": (double, "(a) -> (b)"),
                                    "last": (last, "(b) -> (c)")})
    records = [{"a": 0, "x": "kept"}, {"a": 1}, {"a": -1, "<#g>": 1}, {"a": 2, "<t>": 5}]
    got = module.chain_outputs(chain, [dict(r) for r in records])
    engine_calls, calls[:] = list(calls), []
    assert got == list(net.run(records, engine="reference"))
    assert got == [{"x": "kept", "c": 1}, {"c": 3}, {"c": 23}, {"<t>": 5, "c": 5}]
    assert calls == engine_calls  # each output goes through the rest of the chain before the next
    assert module.chain_outputs(chain, []) == []
    with pytest.raises(SNetBoxError, match=r"box 'double' raised ValueError: thirteen \(input record \{a\}\)"):
        module.chain_outputs(chain, [{"a": 0}, {"a": 3}])  # 3 -> 3, 13: 13 fails after 3 went through
    assert calls[-3:] == [("double", 3), ("last", 6), ("double", 13)]


def test_chain_records_gives_what_the_callers_give_through_compiled_walks():
    """``chain_records`` (a Spark task's chain): compiled walks per record shape, the callers for the rest."""
    from snet.core.boxes import chain_outputs
    from snet.core.chains import chain_records

    calls = []

    def inc(a):
        calls.append(("inc", a))
        return {"a": a + 1}

    def split(a):
        calls.append(("split", a))
        return None if a < 0 else [{"a": a}, {"a": a + 10}] if a % 3 == 0 else {"a": a}

    def tag(a):
        calls.append(("tag", a))
        if a == 44:
            raise ValueError("forty-four")
        return {"a": a, "<t>": a % 2}

    net, chain = _chain_of(compiled_boxes, {"inc": (inc, "(a) -> (a)"), "split": (split, "(a) -> (a)"),
                                            "tag": (tag, "(a) -> (a, <t>)")})
    records = [{"a": i, "id": i} for i in range(-3, 30)] + [{"id": 7, "a": 1}, {"a": 4, "<#g>": 2}]
    got = chain_records(chain, [dict(r) for r in records])
    walked, calls[:] = list(calls), []
    want = chain_outputs(chain, [dict(r) for r in records])
    assert got == want and [list(r) for r in got] == [list(r) for r in want]
    assert walked == calls  # the same calls, in the same order
    assert got == list(net.run(records, engine="reference"))
    from snet.core.chains import compile_walk, walk_maker

    if walk_maker() is not compile_walk:  # FRONT's walks in C, where its runtime imports: the same
        calls[:] = []
        in_c = chain_records(chain, [dict(r) for r in records], walk_maker())
        assert in_c == want and [list(r) for r in in_c] == [list(r) for r in want] and calls == walked

    assert compile_walk(chain, ("a", "id")) is not None  # the records of that shape took the compiled walk
    with pytest.raises(SNetBoxError, match=r"box 'tag' raised ValueError: forty-four \(input record \{a, id\}\)"):
        chain_records(chain, [{"a": 43, "id": 1}])


def test_the_walk_front_runs_in_c_gives_what_the_python_walk_gives():
    """FRONT runs a walk program in C (``snet_front.runtime.make_walk``); ``compile_walk`` writes it as
    Python.  Record for record, both give the same output record, or hand back the same stage, input
    record and result (an error: the same type and message, its traceback starting in the box)."""
    from snet.core.chains import compile_walk, walk_program
    from snet_front.runtime import make_walk

    class Mapping(dict):
        pass

    class Int(int):
        pass

    def first(a, b):  # two arguments; a result that drops b and adds c
        return {"a": a + b, "c": a}

    def odd(a):
        if a % 9 == 8:
            raise ValueError(f"bad {a}")
        return ([{"a": a}], None, Mapping(a=a), {"b": a}, {"a": a, "z": 1}, {"a": a, "<t>": Int(a)},
                {"a": a, "<t>": True}, {"a": a, "<t>": a})[a % 9]

    def last(a):
        return {"a": -a, "<t>": 1}

    _, chain = _chain_of(compiled_boxes, {"first": (first, "(a, b) -> (a, c)"), "odd": (odd, "(a) -> (a, <t>)"),
                                          "last": (last, "(a) -> (a, <t>)")})
    for shape in (("a", "b", "id"), ("b", "a", "id"), ("id", "a", "b", "<#g>")):
        program = walk_program(chain, shape)
        assert program is not None and len(program.stages) == 3
        in_c, in_python = make_walk(chain, shape), compile_walk(chain, shape)
        for i in range(40):
            record = {label: i for label in shape}
            got, want = in_c(dict(record)), in_python(dict(record))
            if type(want) is dict:
                assert got == want and list(got) == list(want)
                continue
            assert type(got) is tuple and got[0] == want[0] and got[1] == want[1] and got[3] == want[3]
            if want[3]:  # raised
                assert type(got[2]) is type(want[2]) and str(got[2]) == str(want[2])
                assert got[2].__traceback__.tb_frame.f_code is odd.__code__
            else:
                assert got[2] == want[2] and type(got[2]) is type(want[2])
    assert make_walk(chain, ("a", "id")) is None and compile_walk(chain, ("a", "id")) is None  # (b missing)

    # A last box that inherits nothing and makes several labels: the output is its result, in the result's order
    def pair(a, b):
        return ({"c": a, "a": b}, {"a": b, "c": a}, {"a": b}, {"c": a, "a": b, "z": 0})[a % 4]

    _, alone = _chain_of(compiled_boxes, {"pair": (pair, "(a, b) -> (c, a)")})
    assert walk_program(alone, ("a", "b")).as_result
    in_c, in_python = make_walk(alone, ("a", "b")), compile_walk(alone, ("a", "b"))
    for i in range(8):
        got, want = in_c({"a": i, "b": -i}), in_python({"a": i, "b": -i})
        callers = compiled_boxes.chain_outputs(alone, [{"a": i, "b": -i}]) if i % 4 < 2 else None
        if i % 4 < 2:
            assert got == want == callers[0] and list(got) == list(want) == list(callers[0])
        else:
            assert got[:2] == want[:2] and got[2] == want[2] and not got[3]


@pytest.mark.parametrize("maker", ["front", "python"])
@pytest.mark.parametrize("every", [2, 3, 16])
def test_a_counted_chain_walks_a_stretch_of_one_shape_in_one_call_and_gives_what_the_callers_give(maker, every):
    """``CountedChain.walk`` times its first records and then one in ``SAMPLE_EVERY``, and walks each stretch of
    records of one shape between them in one call (``CWalk.many`` in C, ``walk_many`` in Python): the stretch
    stops at a record of another shape and at a record the walk hands back.  Whatever the stretches, the
    outputs, the order of the calls and the count of every box's calls are the callers' own."""
    from snet.core.boxes import chain_outputs
    from snet.core.chains import CountedChain, compile_walk, walk_maker

    if maker == "front" and walk_maker() is compile_walk:
        pytest.skip("needs FRONT's compiled runtime (snet_front)")
    calls = []

    def inc(a):
        calls.append(("inc", a))
        return {"a": a + 1}

    def fan(a):
        calls.append(("fan", a))
        return None if a % 11 == 0 else [{"a": a}, {"a": -a}] if a % 7 == 0 else {"a": a}

    net, callers = _chain_of(compiled_boxes, {"inc": (inc, "(a) -> (a)"), "fan": (fan, "(a) -> (a)")})
    shapes = [lambda i: {"a": i}, lambda i: {"a": i, "id": i}, lambda i: {"id": i, "a": i}, lambda i: {"a": i, "b": 0},
              lambda i: {"a": i, "c": 1}, lambda i: {"a": i, "d": 2}]  # six shapes: two beyond SHAPES walks
    records = [shapes[(i // 5 + i * i) % 6 if i % 3 else 0](i) for i in range(400)]
    want = [chain_outputs(callers, [dict(r)]) for r in records]
    wanted_calls, calls[:] = list(calls), []
    class Counting(CountedChain):
        timed = 0  # records given to the box callers timed

        def _through(self, start, records, weight, box_calls):
            self.timed += weight > 0
            return super()._through(start, records, weight, box_calls)

    chain = Counting(callers, walk_maker() if maker == "front" else compile_walk)
    chain.TIMED_RECORDS, chain.SAMPLE_EVERY = 5, every
    got, box_calls = [], {}
    for start in range(0, 400, 97):  # in four groups: the count of records seen goes on across them
        chain.walk([dict(r) for r in records[start:start + 97]], got, box_calls)
    assert got == want and [[list(r) for r in outs] for outs in got] == [[list(r) for r in outs] for outs in want]
    assert calls == wanted_calls and chain.seen == 400
    assert box_calls["inc"][0] == 400 and box_calls["fan"][0] == sum(1 for call in calls if call[0] == "fan")
    assert chain.timed == 5 + sum(1 for n in range(6, 401) if n % every == 0)  # records 1-5, then every n-th
    assert sum(box_calls["inc"][2]) == pytest.approx(400, abs=every)  # each timed call stands for those since

    failing = [{"a": 1}, {"a": 2}, {"a": "x"}, {"a": 4}]  # "x" + 1 raises in inc
    with pytest.raises(SNetBoxError, match="box 'inc' raised TypeError"):
        chain.walk(failing, [], {})
    assert chain.place == 2
