"""Types (§5.2), the property graph, net selection, metadata and warnings."""

from __future__ import annotations

import pytest

from frontend_helpers import HERE
from snet.errors import SNetCompileError, SNetUsageError
from snet.spg.build import analyse, compile_source
from snet.spg.nodes import (BoxNode, FeedbackNode, FilterItem, FilterNode, NetNode, ParallelNode, SerialNode,
                            SplitNode, StarNode, SyncNode)

DECLS = """box f ((a) -> (b));   box g ((b, c) -> (d));   net s ({a, z} -> {b}) connect f;
           box init ( -> (<x>) | (note));   box h ((a) -> (a) | (a, b));
"""


def V(*labels):
    return frozenset(labels)


def types_of(expr: str, decls: str = DECLS):
    graph = compile_source(f"{decls}\nnet t connect {expr};", "t.snet", net="t")
    return graph.root.in_type, graph.root.out_type


def in_of(expr: str, decls: str = DECLS):
    return types_of(expr, decls)[0]


# ---- the examples of §5.2


@pytest.mark.parametrize("expr,expected", [
    ("f .. g", (V("a", "c"),)),
    ("[| {a}, {b} |] .. g", (V("a", "c"), V("b", "c"))),
    ("f ! <k>", (V("a", "<k>"),)),
    ("f * {b}, {<n>} if <n == 0>", (V("a"), V("b"), V("<n>"))),
    ("s", (V("a", "z"),)),
    ("s .. g", (V("a", "z", "c"),)),
])
def test_input_types_of_the_language_examples(expr, expected):
    assert in_of(expr) == expected


def test_parallel_routes_by_branch_input_types():
    graph = compile_source(DECLS + "net t connect (f .. g) | f;", "t.snet", net="t")
    par = graph.root.body
    assert isinstance(par, ParallelNode)
    assert par.routes == ((V("a", "c"),), (V("a"),))


# ---- each rule of the table


def test_box_and_initialiser_types():
    assert types_of("h") == ((V("a"),), (V("a"), V("a", "b")))
    assert types_of("init") == ((), (V("<x>"), V("note")))
    assert types_of("tick", "box tick (() -> (<t>));") == ((V(),), (V("<t>"),))


def test_identity_filter_and_synchro_cell_types():
    assert types_of("[]") == ((V(),), (V(),))
    assert types_of("[{a, <t>} -> if <t == 0> then {b=a}; {} else {b=a}; {a, <u=t>}]") == (
        (V("a", "<t>"),), (V("b"), V(), V("a", "<u>")))
    assert types_of("[{a} -> ]") == ((V("a"),), ())
    assert types_of("[| {a}, {b, <t>} if <t == 1> |]") == ((V("a"), V("b", "<t>")), (V("a", "b", "<t>"), V()))


def test_serial_with_an_initialiser_side_takes_the_other_side():
    assert in_of("init .. f") == (V("a"),)
    assert in_of("f .. init") == (V("a"),)


def test_serial_rule_subtracts_what_the_first_stage_provides_only():
    # Prov(f) = {b}; g needs b and c: only c must come from outside.
    assert types_of("f .. g") == ((V("a", "c"),), (V("d"),))
    # A star's exit patterns are in Prov; split tags and feedback patterns are not.
    assert in_of("(f * {c}) .. g") == (V("a"), V("c"))
    assert in_of("(f ! <c>) .. g") == (V("a", "<c>", "c"),)
    assert in_of("(f \\ {c}) .. [{c} -> {}]") == (V("a", "c"),)


def test_parallel_star_split_feedback_and_placement_types():
    assert types_of("f | g") == ((V("a"), V("b", "c")), (V("b"), V("d")))
    assert types_of("f || f") == ((V("a"),), (V("b"),))
    assert types_of("h ** {b}, {<n>}") == ((V("a"), V("b"), V("<n>")), (V("b"), V("<n>")))
    assert types_of("h !! <#k>") == ((V("a", "<#k>"),), (V("a"), V("a", "b")))
    assert types_of("h ! <lo> : <hi>") == ((V("a", "<lo>", "<hi>"),), (V("a"), V("a", "b")))
    # Only unguarded back patterns remove variants.
    assert types_of("h \\ {b}") == ((V("a"),), (V("a"),))
    assert types_of("h \\ {b} if <#k == 1>") == ((V("a"),), (V("a"), V("a", "b")))
    assert types_of("h @ 2") == types_of("h")


def test_a_variant_that_is_a_superset_is_kept_and_duplicates_are_removed():
    assert in_of("[{a} -> {}] | [{a, b} -> {}] | [{a} -> {}]") == (V("a"), V("a", "b"))


def test_signed_nets_use_declared_types_open_outputs_and_typesigs():
    decls = """type P = {a, b};  typesig S = P | {<n>} -> {c};
               net sig (S, {x} -> ...) connect [{a} -> {c}];
               net plain connect [{a} -> {c}];"""
    assert types_of("sig", decls) == ((V("a", "b"), V("<n>"), V("x")), (V("c"), V()))
    assert types_of("plain", decls) == ((V("a"),), (V("c"),))
    # An open output makes Prov every label: nothing more is needed from outside.
    assert in_of("sig .. [{zz} -> {}]", decls) == (V("a", "b"), V("<n>"), V("x"))


# ---- the worked examples of the language reference (§11), kept in examples/


def _language_example(name: str) -> str:
    return (HERE / "examples" / f"{name}.snet").read_text()


def test_image_pipeline_types():
    analysis, run = analyse(_language_example("imaging"), "imaging.snet")
    sigs = {name: sig for name, _, sig in analysis.net_signatures()}
    assert sigs["imaging"] == "{img} -> {img}"
    assert sigs["fan"] == "{b, g, r} -> {r} | {g} | {b}"
    assert sigs["join"] == "{r} | {g} | {b} | {b, g, r} -> {b, g, r}"
    assert sigs["round"] == "{b, g, r} | {<done>} -> {<done>}"
    assert analysis.checker.body_type(run).in_type == (V("img"), V("img", "<done>"))
    assert analysis.warnings == ()


def test_fibonacci_types():
    analysis, run = analyse(_language_example("fibonacci"), "fibonacci.snet")
    sigs = {name: sig for name, _, sig in analysis.net_signatures()}
    assert sigs["fibonacci"] == "{<n>} -> {<x>}"
    assert sigs["root"] == "{<n>} -> {<d>, <m>, <n>}"
    assert sigs["unfold"] == "{<d>, <m>, <n>} | {<r>} -> {<r>}"
    assert sigs["pair"] == "{<a>, <d>} | {<b>, <d>} | {<a>, <b>, <d>} -> {<a>, <b>}"
    assert sigs["fold"] == "{<d>, <m>, <r>} -> {}"  # {<r>} goes back; {} (from []) may leave
    assert analysis.checker.body_type(run).in_type == (V("<n>"), V("<n>", "<r>"))


def test_fibonacci_fold_routes_pairs_away_from_the_identity():
    graph = compile_source(_language_example("fibonacci"), "fibonacci.snet")
    fold = next(n for n in graph.nodes if isinstance(n, NetNode) and n.name == "fold")
    par = next(n for n in graph.nodes if isinstance(n, ParallelNode) and n.id > fold.id)
    assert par.routes == ((V(),), (V("<a>", "<d>"), V("<b>", "<d>"), V("<a>", "<b>", "<d>")))


# ---- the property graph


def test_graph_is_a_preorder_tree_with_one_subtree_per_occurrence():
    graph = compile_source("""net top {
        net cell connect [| {a}, {b} |];
    } connect cell .. cell .. [];""", "top.snet")
    assert [n.id for n in graph.nodes] == list(range(len(graph.nodes)))
    assert list(graph.walk()) == list(graph.nodes)
    for node in graph.nodes:
        assert all(child.id > node.id for child in node.children())
    serial = graph.root.body
    assert isinstance(serial, SerialNode) and len(serial.stages) == 3
    first, second = serial.stages[0], serial.stages[1]
    assert first.name == second.name == "cell" and first.body is not second.body
    assert isinstance(first.body, SyncNode) and graph.root.stateful and not graph.root.has_boxes


def test_serial_chains_are_flattened_and_parallel_chains_kept_as_written():
    graph = compile_source("net t connect ([] .. ([] .. [])) .. [] | ([] | []) | [];", "t.snet")
    par = graph.root.body
    assert isinstance(par, ParallelNode) and len(par.branches) == 3
    assert isinstance(par.branches[0], SerialNode) and len(par.branches[0].stages) == 4
    assert isinstance(par.branches[1], ParallelNode) and len(par.branches[1].branches) == 2


def test_initialiser_branch_has_no_routes_and_signed_branch_routes_by_declaration():
    graph = compile_source(DECLS + "net t connect init | s | [];", "t.snet", net="t")
    par = graph.root.body
    assert par.routes == ((), (V("a", "z"),), (V(),))
    assert graph.root.has_initialisers and graph.root.has_boxes and not graph.root.stateful


def test_placement_on_a_net_name_and_on_other_operands():
    graph = compile_source("""net t {
        box f ((a) -> (a));
        net inner connect f;
    } connect inner @ 2 .. f @ 3 .. (f .. f) @ 0;""", "t.snet")
    inner, on_box, on_serial = graph.root.body.stages
    assert isinstance(inner, NetNode) and inner.name == "inner" and inner.placement == 2
    assert on_box.name == "@3" and on_box.placement == 3 and isinstance(on_box.body, BoxNode)
    assert on_serial.name == "@0" and isinstance(on_serial.body, SerialNode)


def test_combinator_nodes_carry_their_parameters():
    graph = compile_source("""net t {
        box f ((a, <k>) -> (a) | (a, <done>));
    } connect ((f ** {<done>}, {a} if <(k > 3)>) !!@ <k> : <j>) \\ {a} | [{a} -> {b=a, <t=1>, <#k>}] || [];""",
                           "t.snet")
    kinds = {type(n) for n in graph.nodes}
    assert {StarNode, SplitNode, FeedbackNode, FilterNode, ParallelNode, BoxNode} <= kinds
    star = next(n for n in graph.nodes if isinstance(n, StarNode))
    assert star.deterministic and [p.labels for p in star.exits] == [V("<done>"), V("a")]
    assert star.exits[0].guard is None and star.exits[1].guard is not None
    split = next(n for n in graph.nodes if isinstance(n, SplitNode))
    assert (split.tag, split.hi_tag, split.placed, split.deterministic) == ("<k>", "<j>", True, True)
    filt = next(n for n in graph.nodes if isinstance(n, FilterNode))
    assert filt.clauses[0].outputs[0][:1] == (FilterItem("b", "a"),)
    assert filt.clauses[0].outputs[0][2] == FilterItem("<#k>", "<#k>")
    box = next(n for n in graph.nodes if isinstance(n, BoxNode))
    assert box.arguments == ("a", "<k>") and box.variants == (("a",), ("a", "<done>"))
    outer = graph.root.body
    assert isinstance(outer, ParallelNode) and not outer.deterministic
    assert outer.branches[1].deterministic


def test_every_declared_box_is_listed_for_binding():
    graph = compile_source("""box outside ((a) -> (a));
        net t { box used ((a) -> (b)); box unused ( -> (c)); } connect used;""", "t.snet")
    assert [(b.name, b.arguments, b.variants, b.initialiser) for b in graph.boxes] == [
        ("outside", ("a",), (("a",),), False), ("used", ("a",), (("b",),), False),
        ("unused", (), (("c",),), True)]
    assert graph.used_boxes() == {"used"}


# ---- net selection and signatures


def test_net_selection_by_name_only_net_and_file_stem():
    two = "net a connect []; net b connect [];"
    assert compile_source(two, "dir/b.snet").net_name == "b"
    assert compile_source(two, "x.snet", net="a").net_name == "a"
    with pytest.raises(SNetUsageError, match=r"several top-level nets \(a, b\)"):
        compile_source(two, "x.snet")
    with pytest.raises(SNetUsageError, match=r"no top-level net 'c' \(top-level nets: a, b\)"):
        compile_source(two, "x.snet", net="c")
    with pytest.raises(SNetUsageError, match="defines no top-level net"):
        compile_source("box f ((a) -> (b));", "x.snet")


def test_signature_text_declared_inferred_open_and_initialiser_only():
    assert compile_source("net n ({a} | {b, <t>} -> {c}, {x} -> ...) connect [];").signature == \
        "{a} | {b, <t>} -> {c}, {x} -> ..."
    assert compile_source("net n connect [{b, a, <#k>, <t>} -> {z}];").signature == "{a, b, <t>, <#k>} -> {z}"
    assert compile_source("box i ( -> (x)); net n connect i;").signature == "() -> {x}"


def test_running_a_declaration_only_net_is_an_error_before_start():
    with pytest.raises(SNetCompileError, match="'ext' is declared only"):
        compile_source("net ext ({a} -> {b});")
    # Referencing one from a net that is not run is fine.
    graph = compile_source("net ext ({a} -> {b}); net user connect ext; net x connect [];", "x.snet")
    assert graph.net_name == "x"


def test_all_name_errors_are_reported_in_source_order():
    with pytest.raises(SNetCompileError) as info:
        compile_source("net n {\n box f ((a) -> (a));\n} connect zz .. f .. yy .. xx;", "e.snet")
    assert [d.message for d in info.value.diagnostics] == [
        "unknown name 'zz'", "unknown name 'yy'", "unknown name 'xx'"]


def test_inner_definitions_hide_outer_ones_and_scopes_are_lexical():
    graph = compile_source("""box f ((a) -> (outer));
        net n {
          box f ((a) -> (inner));
          net m connect f;
        } connect m .. g;
        box g ((inner) -> (x));""", "n.snet")
    box = next(n for n in graph.nodes if isinstance(n, BoxNode) and n.name == "f")
    assert box.variants == (("inner",),)


# ---- metadata (§6.15)


def test_metadata_named_entry_beats_kind_default_beats_default_and_inner_beats_outer():
    graph = compile_source("""<metadata>
          <default><a value="file-default"/><b value="file-default"/><c value="file-default"/></default>
          <box name="f"><c value="file-named"/></box>
        </metadata>
        box f ((x) -> (x));
        net n {
          <metadata>
            <default><a value="net-default"/></default>
            <boxdefault><b value="net-boxdefault"/><flag/><text>hello</text></boxdefault>
            <netdefault><d value="nets only"/></netdefault>
          </metadata>
        } connect f;""", "n.snet")
    box = next(n for n in graph.nodes if isinstance(n, BoxNode))
    assert dict(box.metadata) == {"a": "net-default", "b": "net-boxdefault", "c": "file-named",
                                  "flag": "", "text": "hello"}


# ---- warnings (§5.3)


def test_warnings_are_rendered_with_position_and_caret():
    graph = compile_source("net n connect [{a} -> {b=c}];", "w.snet")
    assert graph.warnings == (
        "w.snet:1:24: warning: filter output reads field 'c', which its pattern does not name\n"
        "  net n connect [{a} -> {b=c}];\n"
        "                         ^",)


@pytest.mark.parametrize("src,fragment", [
    ("box f ((a) -> (b)); net n ({z} -> {b}) connect f;", "declared input {z} is accepted by no input"),
    ("box f ((a) -> (b)); net n ({a} -> {b, q}) connect f;", "declared output label 'q' is produced by nothing"),
    ("net n connect [{a} -> {<t=u>}];", "filter output reads tag '<u>'"),
    ("net n connect [{a} -> {<#t=#u>}];", "filter output reads binding tag '<#u>'"),
    ("net n connect [| {a}, {b} if <t == 1> |];", "synchro-cell pattern guard reads tag '<t>'"),
    ("net n connect [] \\ {a} if <t>;", "back pattern guard reads tag '<t>'"),
    ("<metadata><net name=\"zz\"><x/></net></metadata> net n connect [];", "metadata names 'zz'"),
])
def test_each_warning_kind(src, fragment):
    graph = compile_source(src, "w.snet", net="n")
    assert len(graph.warnings) == 1 and fragment in graph.warnings[0]


@pytest.mark.parametrize("src", [
    "box f ((a) -> (b)); net n ({a, z} -> {b}) connect f;",       # a superset of In(body) is accepted
    "box f ((a) -> (b)); net n ({a} -> {a, b}) connect f;",       # a is in the declared input
    "net n ({a} -> ...) connect [{a} -> {}];",                     # open outputs are not checked
    "net n connect [{a} -> {a, <t>, <#k>}];",                      # bare tags default to 0
    "net n connect [] * {<t>} if <t == 1>;",
])
def test_no_warning_where_the_rules_say_none(src):
    assert compile_source(src, "w.snet", net="n").warnings == ()


# ---- the graph drives routing in the reference engine


def test_inferred_types_route_records_as_the_language_example_says():
    import snet

    src = "box f ((a) -> (b)); box g ((b, c) -> (d)); net n connect (f .. g) | f;"
    net = snet.load(src, boxes={"f": lambda a: {"b": a}, "g": lambda b, c: {"d": b + c}})
    out = list(net.run([{"a": 1, "c": 2}, {"a": 5}], engine="reference"))
    assert sorted(map(sorted, (r.items() for r in out))) == [[("b", 5)], [("d", 3)]]


def test_an_exponentially_large_expansion_is_a_clear_error(monkeypatch):
    import snet.spg.build as build

    monkeypatch.setattr(build, "MAX_NODES", 1000)
    levels = "".join(f"net n{i} connect n{i + 1} .. n{i + 1};\n" for i in range(12))
    with pytest.raises(SNetCompileError, match=r"net 'n0' expands to more than 1000 constructs"):
        compile_source(levels + "net n12 connect [];", "n0.snet")
