"""Front-end throughput: source lines per second through each stage.

A generated program of several thousand lines (many boxes, nested nets,
filters with guards and tag arithmetic, every combinator, signatures,
metadata) is timed through

* parse (lexer + LALR parser + AST building),
* check (name resolution, label checks, cycles, types of every net, warnings),
* graph (expanding the run net into the property graph),
* all of it together (``compile_source``).

    python3 -m pytest bench/test_bench_frontend.py --benchmark-only -s
"""

from __future__ import annotations

import pytest

from snet.spg.build import analyse, build_graph, compile_source
from snet.syntax.parser import parse
from snet.typesys.scopes import resolve
from snet.typesys.types import TypeChecker
from snet.typesys.warnings import find_warnings

MODULES = 400


def module(i: int) -> str:
    signature = f" ({{x, <t>, <lo>, <hi>}} -> {{x}} | {{y}} | {{z}})" if i % 4 == 0 else ""
    return f"""net m{i}{signature} {{
  <metadata><box name="b{i}a"><observer value="{i}"/></box></metadata>
  box b{i}a ((x, <t>) -> (x, <t>) | (y));
  box b{i}b ((y) -> (x, <t>));
  box b{i}init ( -> (<seed>));
  net step{i} connect [{{x, <t>}} -> if <t % 3 == 0 && (t > 10)> then {{x, <t=t/3>}}
                                   else if <t min 7 >= 2> then {{x, <t=t*2+1>}}; {{z=x}}
                                   else {{x, <t=abs (t - 1)>, <#k=t max 0>}}];
  net pair{i} connect [| {{x}}, {{y}} if <#k == 1> |] * {{x, y}};
  net inner{i} {{
    type T{i} = {{x, <t>}} | {{y}};
    net deep{i} connect (b{i}a | b{i}b | b{i}init) ** {{<t>}} if <t >= 100 ? 1 : 0>;
  }} connect deep{i} .. step{i};
}} connect (inner{i} !! <t>) .. (pair{i} || []) .. (b{i}a \\ {{y}}) @ 1 .. [{{x}} -> {{x}}] ! <lo> : <hi>;
"""


def program(modules: int = MODULES) -> str:
    body = "".join(module(i) for i in range(modules))
    chain = "\n  .. ".join(f"m{i}" for i in range(modules))
    return f"// generated: {modules} modules\n{body}net big connect {chain};\n"


TEXT = program()
LINES = TEXT.count("\n")


def _show(benchmark, stage: str) -> float:
    mean = benchmark.stats.stats.mean
    rate = LINES / mean
    benchmark.extra_info.update({"lines": LINES, "lines_per_second": round(rate)})
    print(f"\n[{stage}] {LINES} lines in {mean * 1000:.1f} ms: {rate:,.0f} lines/s")
    return rate


def _check(program_ast):
    res = resolve(program_ast)
    checker = TypeChecker(res)
    signatures = [checker.signature_text(net) for net, _ in res.nets()]
    return res, signatures, find_warnings(res, checker)


@pytest.fixture(scope="module")
def parsed():
    return parse(TEXT, "big.snet")


def test_program_is_large_and_uses_every_construct():
    assert LINES > 5000
    for token in ("..", "||", " | ", "**", " * ", "!!", " ! ", "\\", "@ 1", "[|", "<metadata>", "->", "typ"):
        assert token in TEXT


def test_bench_parse(benchmark):
    result = parse(TEXT, "big.snet")
    assert len(result.definitions) == MODULES + 1
    benchmark.pedantic(parse, args=(TEXT, "big.snet"), rounds=5, iterations=1)
    _show(benchmark, "parse")


def test_bench_check(benchmark, parsed):
    res, signatures, warnings = _check(parsed)
    assert res.errors == [] and len(signatures) == MODULES * 5 + 1
    assert signatures[-1] == "{x, <hi>, <lo>, <t>} -> {x}"
    benchmark.pedantic(_check, args=(parsed,), rounds=5, iterations=1)
    _show(benchmark, "check")


def test_bench_graph(benchmark):
    analysis, run = analyse(TEXT, "big.snet")
    graph = build_graph(analysis, run)
    assert graph.net_name == "big" and len(graph.nodes) > 20 * MODULES
    benchmark.pedantic(build_graph, args=(analysis, run), rounds=5, iterations=1)
    _show(benchmark, "graph")


def test_bench_compile_total(benchmark):
    graph = compile_source(TEXT, "big.snet")
    assert len(graph.boxes) == 3 * MODULES
    benchmark.pedantic(compile_source, args=(TEXT, "big.snet"), rounds=3, iterations=1)
    _show(benchmark, "parse+check+graph")
