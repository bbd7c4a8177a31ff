"""Two filters in a row, composed into one where one filter can do the work of both (docs/runtime.md, "Fusion").

Every case runs fused (the composition) and unfused (each filter an entity
of its own) on FRONT, and on the reference engine: the outputs must be the
same records with their labels in the same order, and an error the same
message word for word.  Each case also says whether the two filters are
composed (``snet.core.compiled.compose_filters``): where the composition is
refused, the chain runs them one after the other.
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import snet
from snet.core.compiled import compose_filters
from snet.errors import SNetRuntimeError
from snet.plan import Kind
from snet.spg.lower import lower

RECORDS = [{"a": 1, "<t>": 5, "x": "kept", "<#b>": 9}, {"a": 2, "<t>": -3, "<u>": 4, "x": "also", "<#b>": 1},
           {"a": 3, "<t>": 0, "x": "last", "<#b>": 2}]

# (first filter, second filter, composed?)
PAIRS = [
    ("[{a} -> {a, <v=1>}]", "[{a, <v>} -> {a, <w=v+t>}]", True),  # b reads what a set and what a passed on
    ("[{a, <t>} -> {a, <t=t*2>}]", "[{a, <t>} -> {a, <t=t+1>}]", True),  # the same tag set twice
    ("[{a} -> {b=a, <v=t>}]", "[{b} -> {c=b, <v>}]", True),  # a field renamed twice, a bare tag a set
    ("[{a} -> {a, <v=7>}]", "[{a, <v>} -> {a}]", True),  # a constant consumed unread
    ("[{a} -> {a, <v=t/2>}]", "[{a, <v>} -> {a}]", False),  # a division consumed unread: its error must stay
    ("[{a, <t>} -> {a}]", "[{a} -> {a, <w=t>}]", False),  # b reads a tag a consumed
    ("[{a} -> {a, <t>}]", "[{a} -> {a, <w=t+1>}]", False),  # b reads a bare copy of a (or 0 if absent)
    ("[{a} -> {a}]", "[{a} -> {a, <w=#b>}]", False),  # b reads a binding tag a does not set
    ("[{a} -> {a}]", "[{a} -> {a, <w=b>}]", True),  # ... a tag <b> (absent: the error)
    ("[{a} -> {a, <#c=t>}]", "[{a} -> {a, <w=#c>}]", True),  # ... a binding tag a sets (then drops it)
    ("[{a} -> {a, <#c=t>}]", "[{a} -> {a, <#c=#c+1>}]", True),  # a binding tag set again
    ("[{a} -> {a, <#c=t>}]", "[{a} -> {a}]", False),  # a binding tag set, dropped unread (its error)
    ("[{a, <t>} -> {a, <t>}]", "[{a} -> {a, <v=t>}]", False),  # a bare copy read
    ("[{x} -> {y=x}]", "[{a} -> {a, <z=u>}]", True),  # b reads an inherited tag that one record lacks: the error
    ("[{a} -> {a, <v=t>}]", "[{a} -> {<q=v>}]", False),  # a's field consumed unread (r['a'] could fail)
    ("[{a} -> {<v=t>}]", "[{<v>} -> {<q=v+1>}]", True),  # b keeps nothing of a's own, reads what it consumes
    ("[{a} -> {a, <v=t>}]", "[{a, <v>, x} -> {a, x}]", False),  # a's tag consumed unread
    ("[{a} -> {a, <v=t>}]", "[{a, <v>, x} -> {a, x, <v>}]", True),  # b consumes an inherited field and re-sets it
    ("[{a} -> {a}; {a, <v=1>}]", "[{a} -> {a, <w=2>}]", False),  # two outputs: not one filter
    ("[{a} -> if <t > 0> then {a} else {a, <n=1>}]", "[{a} -> {a, <w=2>}]", False),  # a guard
    ("[{a} -> {a, <d=10/t>}]", "[{a, <d>} -> {a, <e=d+1>}]", True),  # a division by zero in a, read by b
]


def run(source, engine, **options):
    net = snet.load(source)
    try:
        with net.run([dict(r) for r in RECORDS], engine=engine, **options) as execution:
            return [list(r.items()) for r in execution]
    except SNetRuntimeError as e:
        return f"error: {e}"


@pytest.mark.parametrize("first, second, composed", PAIRS, ids=[f"{a} .. {b}" for a, b, _ in PAIRS])
def test_two_filters_give_what_they_give_one_by_one(first, second, composed):
    source = f"net n connect {first} .. {second};"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (some cases read what may be absent, on purpose)
        net = snet.load(source)
        filters = [n for n in lower(net.graph, {}).nodes if n.kind == Kind.FILTER]
        assert len(filters) == 2
        assert (compose_filters(filters[0].apply, filters[1].apply) is not None) == composed
        reference = run(source, "reference")
        for workers in (1, 2):
            assert run(source, "front", workers=workers) == reference, workers
            assert run(source, "front", workers=workers, fuse=False) == reference, workers


def test_a_chain_of_filters_is_one_stage_and_its_errors_are_each_filter_s_own():
    source = ("net n connect [{a} -> {a, <v=1>}] .. [{a, <v>} -> {a, <v=v+t>}] .. [{a} -> {a, <w=v*2>}]"
              " .. [{a, <w>} -> {a, <q=100/w>}];")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        records = [{"a": 1, "<t>": 1}, {"a": 2, "<t>": 4}]
        net = snet.load(source)
        fused = [list(r.items()) for r in net.run(records, workers=1)]
        assert fused == [list(r.items()) for r in net.run(records, engine="reference")]
        assert fused == [[("<t>", 1), ("<v>", 2), ("a", 1), ("<q>", 25)], [("<t>", 4), ("<v>", 5), ("a", 2), ("<q>", 10)]]
        one = None
        for f in [n.apply for n in lower(net.graph, {}).nodes if n.kind == Kind.FILTER]:
            one = f if one is None else compose_filters(one, f)
            assert one is not None  # all four: one stage
        # a record whose <w> is 0 divides by zero in the last filter: that filter's message, at its position
        bad = [{"a": 3, "<t>": -1}]
        with pytest.raises(SNetRuntimeError) as fused_error:
            list(net.run(bad, workers=1))
        with pytest.raises(SNetRuntimeError) as unfused_error:
            list(net.run(bad, workers=1, fuse=False))
        assert str(fused_error.value) == str(unfused_error.value)
        assert "division by zero" in str(fused_error.value)


# Random pairs: patterns and single outputs over a few fields, tags and a binding tag, with expressions
# that read what may be absent or divide by what may be zero; records that have some labels and lack others.
FIELDS, TAGS = ("a", "x"), ("<t>", "<u>", "<v>", "<#b>")


def _ref(tag):
    return "#" + tag[2:-1] if tag.startswith("<#") else tag[1:-1]


@st.composite
def filters(draw):
    labels = FIELDS + TAGS
    pattern = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=3, unique=True))
    items = []
    for label in draw(st.lists(st.sampled_from(labels), max_size=4, unique=True)):
        if label in FIELDS:
            source = draw(st.sampled_from(FIELDS))
            items.append(label if source == label else f"{label}={source}")
            continue
        kind = draw(st.sampled_from(["bare", "const", "ref", "sum", "div"]))
        ref = _ref(draw(st.sampled_from(TAGS)))
        expr = {"const": "3", "ref": ref, "sum": f"{ref}+1", "div": f"12/{ref}"}.get(kind)
        items.append(label if kind == "bare" else f"{label[:-1]}={expr}>")
    return f"[{{{', '.join(pattern)}}} -> {{{', '.join(items)}}}]"


records = st.lists(st.fixed_dictionaries({}, optional={
    "a": st.integers(0, 3), "x": st.integers(0, 3), "<t>": st.integers(-1, 2), "<u>": st.integers(-1, 2),
    "<v>": st.integers(-1, 2), "<#b>": st.integers(0, 2)}), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=filters(), second=filters(), inputs=records)
def test_random_pairs_of_filters_give_what_they_give_one_by_one(first, second, inputs):
    source = f"net n connect {first} .. {second};"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            net = snet.load(source)
        except snet.SNetError:
            return  # (a pair the checker refuses)
        results = []
        for options in ({"engine": "reference"}, {"workers": 1}, {"workers": 1, "fuse": False}):
            try:
                results.append([list(r.items()) for r in net.run([dict(r) for r in inputs], **options)])
            except SNetRuntimeError as e:
                results.append(f"error: {e}")
    assert results[1] == results[0] and results[2] == results[0], (source, inputs, results)
