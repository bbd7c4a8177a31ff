"""Front-end throughput: source lines per second through each stage.

A generated program of several thousand lines (many boxes, nested nets,
filters with guards and tag arithmetic, every combinator, signatures,
metadata) is timed through

* parse (lexer + LALR parser + AST building),
* check (name resolution, label checks, cycles, types of every net, warnings),
* graph (expanding the run net into the property graph),
* all of it together (``compile_source``).

A second group times ``snet check`` (in process, output captured) on wide
parallels of 1,000, 4,000 and 10,000 branches, in three shapes: filters with
distinct tags all on one line; the same with a warning on every tenth
branch; boxes with distinct labels declared and composed one per line, every
tenth branch a filter with a warning.  It reports the
time per branch, which stays flat when the front end is linear, and the
peak memory of one more run under ``tracemalloc`` (not timed), per branch.

    python3 -m pytest bench/test_bench_frontend.py --benchmark-only -s
    python3 -m pytest bench/test_bench_frontend.py --benchmark-only -s -k wide
"""

from __future__ import annotations

import contextlib
import io
import tracemalloc

import pytest

from snet import cli

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


# ---- snet check on wide parallels

SIZES = (1_000, 4_000, 10_000)


def filters_one_line(n: int) -> str:
    """``net big connect [{<a>} -> {<a>}] | [{<b0>} -> {<b0>}] | ...;`` on one line."""
    branches = ["[{<a>} -> {<a>}]"] + [f"[{{<b{i}>}} -> {{<b{i}>}}]" for i in range(n - 1)]
    return "net big connect " + " | ".join(branches) + ";\n"


def boxes_per_line(n: int) -> str:
    """n boxes with distinct labels, one per line; every tenth branch a filter with a warning."""
    decls = "".join(f"box f{i} ((x{i}, <t{i}>) -> (y{i}) | (z{i}, <t{i}>));\n" for i in range(n))
    branches = [f"[{{x{i}}} -> {{y{i}=w{i}}}]" if i % 10 == 9 else f"f{i}" for i in range(n)]
    return decls + "net big connect\n    " + "\n  | ".join(branches) + ";\n"


def warnings_one_line(n: int) -> str:
    """Filters on one line, every tenth reading a field its pattern does not name (a warning)."""
    branches = [f"[{{a{i}}} -> {{b{i}=c{i}}}]" if i % 10 == 9 else f"[{{<b{i}>}} -> {{<b{i}>}}]" for i in range(n)]
    return "net big connect " + " | ".join(branches) + ";\n"


WIDE = {"filters_one_line": filters_one_line, "warnings_one_line": warnings_one_line,
        "boxes_per_line": boxes_per_line}


def snet_check(path: str) -> str:
    """``snet check PATH`` in this process; returns standard error."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["check", path])
    assert status == 0, err.getvalue()[:2000]
    return err.getvalue()


@pytest.mark.parametrize("branches", SIZES)
@pytest.mark.parametrize("shape", sorted(WIDE))
def test_bench_check_wide_parallel(benchmark, tmp_path, shape, branches):
    path = tmp_path / "big.snet"
    path.write_text(WIDE[shape](branches))
    err = snet_check(str(path))  # warm-up, and the output's size
    tracemalloc.start()
    try:
        snet_check(str(path))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rounds = 3 if branches < 10_000 else 2
    benchmark.pedantic(snet_check, args=(str(path),), rounds=rounds, iterations=1)
    mean = benchmark.stats.stats.mean
    figures = {"branches": branches, "seconds": round(mean, 3), "us_per_branch": round(mean / branches * 1e6),
               "peak_mb": round(peak / 1e6, 1), "peak_bytes_per_branch": round(peak / branches),
               "stderr_bytes": len(err)}
    benchmark.extra_info.update(figures)
    print(f"\n[check {shape}] {branches} branches in {mean:.2f} s: {mean / branches * 1e6:.0f} us/branch, "
          f"peak {peak / 1e6:.1f} MB ({peak / branches:,.0f} bytes/branch), {len(err):,} bytes of warnings")
