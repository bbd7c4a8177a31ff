"""The warnings that catch slips (S1-S5, docs/frontend.md), ``--strict``, and no false alarms."""

from __future__ import annotations

import json

import pytest

from frontend_helpers import CASES_DIR, ROOT, snet_cli
from quickloop import examples
from snet.spg.build import compile_source

CASES = sorted(CASES_DIR.glob("*/net.snet"))
# Every example program of the repository, except the tutorial's deliberate syntax error.
EXAMPLES = sorted(p for p in [*ROOT.glob("boxes/*.snet"), *ROOT.glob("docs/**/*.snet"),
                              *ROOT.glob("tests/runtime/nets/*.snet"), *ROOT.glob("tests/compiler/examples/*.snet")]
                  if p.name != "broken.snet")


def warnings_of(text: str) -> list[str]:
    """The first line of every warning of `text` (file ``w.snet``)."""
    return [w.splitlines()[0] for w in compile_source(text, "w.snet").warnings]


TYPO = """box tokenize ((text) -> (tokens));
box count ((toks) -> (n));
net wc connect (tokenize .. count) | [];
"""


def test_a_misspelt_box_input_in_an_unsigned_net():
    assert warnings_of(TYPO) == [
        "w.snet:3:29: warning: box 'count' needs 'toks', which nothing before it in this serial chain produces; "
        "did you mean 'tokens'?",
    ]


def test_a_misspelt_label_in_a_filter_or_a_split_names_the_stage():
    text = ("box tokenize ((text) -> (tokens, <key>));\nbox g ((n) -> (c));\n"
            "net wc connect tokenize .. [{toks} -> {n=toks}] .. (g ! <kye>);\n")
    assert warnings_of(text) == [
        "w.snet:3:28: warning: the filter needs 'toks', which nothing before it in this serial chain produces; "
        "did you mean 'tokens'?",
        "w.snet:3:53: warning: the split needs '<kye>', which nothing before it in this serial chain produces; "
        "did you mean '<key>'?",
    ]


def test_a_box_that_no_record_reaching_it_can_match():
    text = ("box tokenize ((text) -> (tokens));\nbox count ((toks) -> (n));\n"
            "net wc ({text} -> {n}) connect tokenize .. count;\n")
    assert warnings_of(text) == [
        "w.snet:3:9: warning: net 'wc': box 'count' needs 'toks', which neither declared input {text} nor "
        "anything before it produces",
        "w.snet:3:44: warning: box 'count' needs 'toks', which no record reaching it carries (it receives "
        "{tokens}); did you mean 'tokens'?",
    ]


def test_a_filter_pattern_that_no_record_reaching_it_carries():
    text = "box f ((a) -> (count));\nnet q ({a} -> {n}) connect f .. [{cuont} -> {n=cuont}];\n"
    assert warnings_of(text) == [
        "w.snet:2:8: warning: net 'q': the filter at 2:33 needs 'cuont', which neither declared input {a} nor "
        "anything before it produces",
        "w.snet:2:33: warning: filter needs 'cuont', which no record reaching it carries (it receives {count}); "
        "did you mean 'count'?",
    ]


def test_labels_that_are_never_together():
    text = ("box f ((x) -> (a) | (b));\nbox g ((a, b) -> (c));\n"
            "net n ({x} -> {c}) connect f .. g;\n")
    assert warnings_of(text) == [
        "w.snet:3:33: warning: box 'g' needs {a, b} together, which no record reaching it carries "
        "(it receives {a} | {b})",
    ]


def test_a_parallel_branch_that_nothing_selects():
    text = "box f ((a) -> (c));\nbox g ((<b>) -> (c));\nnet p ({a} | {a, <bb>} -> {c}) connect f | g;\n"
    assert warnings_of(text) == [
        "w.snet:3:44: warning: parallel branch 2 ('g') accepts {<b>}, but no record that reaches the parallel "
        "selects it (it receives {a, <bb>} | {a}); did you mean '<bb>'?",
    ]


def test_a_branch_shadowed_by_an_equal_branch_to_its_left():
    text = "box f ((a) -> (c));\nbox g ((a) -> (c));\nnet p connect f | g;\n"
    assert warnings_of(text) == [
        "w.snet:3:19: warning: parallel branch 2 ('g') accepts {a}, but no record that reaches the parallel "
        "selects it (it receives {a})",
    ]


def test_an_output_variant_that_nothing_after_it_accepts():
    text = "box split ((x) -> (y) | (err));\nbox use ((y) -> (z));\nnet o ({x} -> {z}) connect split .. use;\n"
    assert warnings_of(text) == [
        "w.snet:3:28: warning: box 'split' output {err} is accepted by no later stage and reaches no net output",
    ]


def test_a_rejected_variant_is_fine_when_a_later_branch_takes_it():
    text = ("box split ((x) -> (y) | (err));\nbox use ((y) -> (z));\nbox log ((err) -> (z));\n"
            "net o ({x} -> {z}) connect split .. (use | log);\n")
    assert warnings_of(text) == []


def test_flow_inheritance_carries_labels_past_a_stage():
    # 'k' is not produced by f, but the declared input carries it and f passes it on.
    text = "box f ((a) -> (b));\nbox g ((b, k) -> (c));\nnet n ({a, k} -> {c}) connect f .. g;\n"
    assert warnings_of(text) == []


def test_loops_are_followed_to_a_fixed_point():
    text = ("box step ((<n>) -> (<n>) | (done));\nbox fin ((done) -> (r));\n"
            "net n ({<n>} -> {r}) connect (step * {done}) .. fin;\n"
            "net m ({<n>} -> {r}) connect (step \\ {<n>}) .. fin;\n")
    assert compile_source(text, "w.snet", net="n").warnings == ()


def test_an_unread_label_near_a_label_nothing_produces():
    # No stage refuses anything (the star's exit test reads the tag), only the names differ.
    text = "box f ((a) -> (a, <done>));\nnet n ({a} -> {a}) connect f * {<dnoe>} if <dnoe == 1>;\n"
    assert warnings_of(text) == [
        "w.snet:1:19: warning: box 'f' emits '<done>', which nothing reads, while '<dnoe>' is read but produced "
        "by nothing; did you mean '<dnoe>'?",
    ]


def test_the_old_w1_text_remains_when_no_stage_is_to_blame():
    text = "box f ((a) -> (b));\nnet n ({z} -> {b}) connect f;\n"
    assert warnings_of(text) == [
        "w.snet:2:8: warning: net 'n': declared input {z} is accepted by no input variant of its body ({a})",
    ]


def test_strict_turns_warnings_into_errors(tmp_path):
    (tmp_path / "wc.snet").write_text(TYPO)
    result = snet_cli("check", "--strict", "wc.snet", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if not line.startswith("  ")]
    assert lines == [
        "wc.snet:3:29: error: box 'count' needs 'toks', which nothing before it in this serial chain produces; "
        "did you mean 'tokens'?",
        "wc.snet: 1 warning treated as an error (--strict)",
    ]
    plain = snet_cli("check", "wc.snet", cwd=tmp_path)
    assert plain.returncode == 0 and plain.stdout == "{text, toks} | {} -> {n} | {}\n"


def test_strict_counts_binding_warnings_too(tmp_path):
    (tmp_path / "n.snet").write_text("box f ((a, b) -> (d));\nnet n connect f;\n")
    assert snet_cli("check", "--strict", "n.snet", cwd=tmp_path).returncode == 0  # no box module: nothing to bind
    (tmp_path / "n.py").write_text("def f(b, a):\n    return {'d': a - b}\n")
    for boxes in ([], ["--boxes", "n.py"]):  # n.py beside n.snet is bound by default, as snet run binds it
        result = snet_cli("check", "--strict", *boxes, "n.snet", cwd=tmp_path)
        assert result.returncode == 2 and "n.snet:1:5: error: " in result.stderr
        assert result.stderr.rstrip().endswith("n.snet: 1 warning treated as an error (--strict)")


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.parent.name)
def test_strict_check_raises_no_false_alarm_on_the_shared_cases(path, snet_in_process):
    spec = json.loads((path.parent / "case.json").read_text())
    refused = spec.get("exit") == 2  # a static error, or boxes missing from the net.py that check binds
    result = snet_in_process("check", "--strict", "net.snet", cwd=path.parent)
    if refused:
        assert result.returncode == 2
    else:
        assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_strict_check_raises_no_false_alarm_on_the_examples(path, snet_in_process):
    result = snet_in_process("check", "--strict", path.name, cwd=path.parent)
    assert (result.returncode, result.stderr) == (0, "")


def test_there_are_cases_and_examples():
    assert len(CASES) >= 40 and len(EXAMPLES) >= 2


# ---- robustness: the flow analysis never fails on a correct program

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from snet.errors import SNetCompileError  # noqa: E402
from snet.syntax.printer import format_expr  # noqa: E402
from test_frontend_printer import connect_exprs  # noqa: E402

BOX_NAMES = ["a", "b", "c", "f", "g", "x1", "T", "F", "_u", "netx", "iff", "long_name"]
SIGNATURES = ["(a) -> (b)", "(b, <t>) -> (a) | (c)", "() -> (a, <#k>)", " -> (<t>) | (b)", "(c) -> ()",
              "(a, b) -> (a, <t>)"]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(connect_exprs, st.lists(st.sampled_from(SIGNATURES), min_size=len(BOX_NAMES), max_size=len(BOX_NAMES)))
def test_slip_analysis_runs_on_any_program(expr, signatures):
    boxes = "".join(f"box {name} ({sig});\n" for name, sig in zip(BOX_NAMES, signatures))
    text = f"{boxes}net n ({{a}} | {{b, <t>}} -> {{c}}) connect {format_expr(expr)};\nnet m connect n;\n"
    try:
        graph = compile_source(text, "w.snet", net="m")
    except SNetCompileError:
        return  # duplicate labels and the like: errors, not the subject here
    assert all(": warning: " in w for w in graph.warnings)
