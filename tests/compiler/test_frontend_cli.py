"""``snet check`` and ``snet graph`` as a user runs them."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from frontend_helpers import CASES_DIR, snet_cli

NESTED = """net outer ({a} -> {c}) {
  box f ((a) -> (b));
  net mid {
    net leaf connect [{b} -> {c=b}];
  } connect leaf;
} connect f .. mid;
"""


@pytest.fixture
def nested(tmp_path):
    (tmp_path / "outer.snet").write_text(NESTED)
    return tmp_path


def test_check_prints_the_signature_of_the_run_net(nested):
    result = snet_cli("check", "outer.snet", cwd=nested)
    assert (result.returncode, result.stdout, result.stderr) == (0, "{a} -> {c}\n", "")


def test_check_verbose_prints_every_net_in_source_order(nested):
    result = snet_cli("check", "-v", "outer.snet", cwd=nested)
    assert result.returncode == 0
    assert result.stdout == "outer: {a} -> {c}\nmid: {b} -> {c}\nleaf: {b} -> {c}\n"


def test_check_of_a_shared_example_uses_declared_types():
    result = snet_cli("check", str(CASES_DIR / "typesig_routing" / "net.snet"))
    assert result.returncode == 0
    assert result.stdout == "{left, right, <w>} | {left, right} -> {sum}\n"


def test_check_prints_warnings_on_stderr_and_succeeds(tmp_path):
    (tmp_path / "w.snet").write_text("net w connect [{a} -> {b=c}];\n")
    result = snet_cli("check", "w.snet", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == "{a} -> {b}\n"
    assert result.stderr.startswith("w.snet:1:24: warning: filter output reads field 'c'")


def test_check_reports_every_error_with_exit_status_2(tmp_path):
    (tmp_path / "e.snet").write_text("net e connect nope .. [] .. other;\n")
    result = snet_cli("check", "e.snet", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if ": error:" in line]
    assert lines == ["e.snet:1:15: error: unknown name 'nope'", "e.snet:1:29: error: unknown name 'other'"]


def test_check_missing_file_and_net_selection_errors(tmp_path):
    assert snet_cli("check", "absent.snet", cwd=tmp_path).returncode == 2
    (tmp_path / "two.snet").write_text("net a connect []; net b connect [];\n")
    result = snet_cli("check", "two.snet", cwd=tmp_path)
    assert result.returncode == 2 and "several top-level nets (a, b)" in result.stderr
    assert snet_cli("check", "two.snet", "--net", "b", cwd=tmp_path).stdout == "{} -> {}\n"


def test_check_with_boxes_binds_them(tmp_path):
    (tmp_path / "b.snet").write_text("net b { box f ((a) -> (a)); box g ((a) -> (a)); } connect f .. g;\n")
    (tmp_path / "mod.py").write_text("def f(a):\n    return {'a': a}\n")
    result = snet_cli("check", "b.snet", "--boxes", "mod.py", cwd=tmp_path)
    assert result.returncode == 2 and "'g'" in result.stderr
    (tmp_path / "mod.py").write_text("def f(a):\n    return {'a': a}\n\ndef g(a):\n    return {'a': a}\n")
    assert snet_cli("check", "b.snet", "--boxes", "mod.py", cwd=tmp_path).returncode == 0


ALL = """net all {
  box f ((a) -> (a) | (a, <done>));
  box init ( -> (a));
} connect ((f | init || []) .. f ** {<done>} .. (f !! <k>) .. (f ! <lo>:<hi>)) \\ {a, <again>} .. [| {a}, {b} |] @ 2;
"""


def test_graph_draws_dispatcher_and_collector_pairs_for_every_combinator(tmp_path):
    (tmp_path / "all.snet").write_text(ALL)
    result = snet_cli("graph", "all.snet", cwd=tmp_path)
    assert result.returncode == 0
    dot = result.stdout
    assert dot.startswith("digraph snet {")
    for what in ("parallel", "star", "split", "feedback"):
        dispatchers = re.findall(rf"d\d+ \[label=\"[^\"]*{what} dispatcher", dot)
        collectors = re.findall(rf"c\d+ \[label=\"[^\"]*{what} collector", dot)
        assert dispatchers and len(dispatchers) == len(collectors), what
    assert "star dispatcher (det)" in dot and "split dispatcher (det)" in dot
    assert "parallel dispatcher (det)" in dot
    assert "never routed (initialisers)" in dot
    assert "one replica per <lo>:<hi>" in dot
    assert "placement @ 2" in dot
    assert 'shape="box3d"' in dot  # the synchro-cell


def test_graph_writes_dot_files(tmp_path):
    (tmp_path / "all.snet").write_text(ALL)
    result = snet_cli("graph", "all.snet", "-o", "all.dot", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == ""
    assert (tmp_path / "all.dot").read_text().startswith("digraph snet {")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
@pytest.mark.parametrize("ext,magic", [("svg", b"<?xml"), ("png", b"\x89PNG")])
def test_graph_renders_svg_and_png_with_graphviz(tmp_path, ext, magic):
    (tmp_path / "all.snet").write_text(ALL)
    result = snet_cli("graph", "all.snet", "-o", f"all.{ext}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / f"all.{ext}").read_bytes().startswith(magic)


def test_graph_without_graphviz_fails_clearly(tmp_path, monkeypatch):
    (tmp_path / "all.snet").write_text(ALL)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = snet_cli("graph", "all.snet", "-o", "all.svg", cwd=tmp_path)
    assert result.returncode == 2
    assert "Graphviz's 'dot' program is not installed" in result.stderr
    assert not os.path.exists(tmp_path / "all.svg")


def test_graph_of_a_program_with_errors_exits_2(tmp_path):
    (tmp_path / "bad.snet").write_text("net bad connect [] ..;\n")
    result = snet_cli("graph", "bad.snet", cwd=tmp_path)
    assert result.returncode == 2 and "bad.snet:1:22: error: unexpected ';'" in result.stderr


def test_check_verbose_lists_every_net_of_a_file_with_several_top_level_nets(tmp_path):
    (tmp_path / "two.snet").write_text("net a connect [];\nnet b connect [{x} -> {y=x}];\n")
    result = snet_cli("check", "-v", "two.snet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["a: {} -> {}", "b: {x} -> {y}"]
    plain = snet_cli("check", "two.snet", cwd=tmp_path)  # which one runs is still a choice to make
    assert plain.returncode == 2 and "choose one with --net NAME" in plain.stderr


def test_check_shows_the_right_source_line_after_a_form_feed_and_with_crlf(tmp_path):
    (tmp_path / "ff.snet").write_bytes(b"// page\x0c break\nnet m connect f .. | g;\n")
    result = snet_cli("check", "ff.snet", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[:3] == [
        "ff.snet:2:20: error: unexpected '|' (expected name, '(', '[', '[|')",
        "  net m connect f .. | g;",
        "                     ^"]
    (tmp_path / "crlf.snet").write_bytes(b"net m connect [] ..\r\n | [];\r\n")
    result = snet_cli("check", "crlf.snet", cwd=tmp_path)
    assert result.stderr.splitlines()[1] == "   | [];"


def test_check_accepts_a_byte_order_mark_and_comments_inside_metadata(tmp_path):
    (tmp_path / "bom.snet").write_bytes(b"\xef\xbb\xbfnet n connect [];\n")
    result = snet_cli("check", "bom.snet", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "{} -> {}\n"), result.stderr
    (tmp_path / "meta.snet").write_text(
        "<metadata><a><!-- nothing yet --></a><b> <!-- x --> </b><c>one <!-- and -->two</c></metadata>\n"
        "net meta connect [];\n")
    result = snet_cli("check", "meta.snet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    from snet.syntax.parser import parse
    from snet.source import Source
    text = (tmp_path / "meta.snet").read_text()
    metadata = parse(text, "meta.snet", Source("meta.snet", text)).definitions[0]
    assert [(e.key, e.text) for e in metadata.elements] == [("a", ""), ("b", ""), ("c", "one two")]


def png_size(path) -> tuple[int, int]:
    import struct
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG")
    return struct.unpack(">II", data[16:24])


README_EXAMPLE = Path(__file__).resolve().parents[2] / "boxes" / "imaging.snet"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
@pytest.mark.parametrize("options", [[], ["--compact"]])
def test_the_readme_example_draws_no_wider_than_two_and_a_half_times_its_height(tmp_path, options):
    result = snet_cli("graph", str(README_EXAMPLE), "-o", "x.png", *options, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    width, height = png_size(tmp_path / "x.png")
    assert width <= 2.5 * height, (width, height)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_left_to_right_is_there_on_request_and_compact_is_smaller(tmp_path):
    for name, options in [("full", []), ("wide", ["--left-to-right"]), ("small", ["--compact"])]:
        assert snet_cli("graph", str(README_EXAMPLE), "-o", f"{name}.png", *options, cwd=tmp_path).returncode == 0
    full, wide, small = (png_size(tmp_path / f"{n}.png") for n in ("full", "wide", "small"))
    assert wide[0] > wide[1] and full[1] > full[0]  # stages run across, or down
    assert small[0] * small[1] < full[0] * full[1] / 2


def test_compact_draws_each_combinator_once_around_its_operands(tmp_path):
    (tmp_path / "all.snet").write_text(ALL)
    result = snet_cli("graph", "all.snet", "--compact", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    dot = result.stdout
    assert 'rankdir="TB";' in dot
    assert "dispatcher" not in dot and "collector" not in dot  # one cluster per combinator, no pairs
    assert 'label="** until {<done>}"' in dot
    assert 'label="!! <k>: one replica per value"' in dot and 'label="! <lo>:<hi>: one replica per value"' in dot
    assert 'label="\\\\ back {a, <again>}"' in dot
    assert re.search(r'n\d+ \[label="f", shape="box"\]', dot)  # boxes by name only
    assert re.search(r"\w+ -> \w+;", dot) and not re.search(r"\w+ -> \w+ \[label=", dot)  # edges bare
    assert "placement @ 2" in dot and 'shape="box3d"' in dot


def test_collapse_draws_a_named_net_as_one_node(tmp_path):
    result = snet_cli("graph", str(README_EXAMPLE), "--collapse", "join", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    dot = result.stdout
    assert re.search(r'n\d+ \[label="net join\\n[^"]* -> [^"]*", shape="box", style="rounded,bold"\];', dot), dot
    assert "[| {r}, {g}, {b} |]" not in dot and "box3d" not in dot  # its inside is not drawn
    assert "box check" in dot  # the rest is
    both = snet_cli("graph", str(README_EXAMPLE), "--collapse", "join", "--collapse", "fan", "--compact",
                    cwd=tmp_path)
    assert both.returncode == 0 and 'label="net fan\\n' in both.stdout and "filter" not in both.stdout


def test_collapse_of_an_unknown_net_suggests_one(tmp_path):
    result = snet_cli("graph", str(README_EXAMPLE), "--collapse", "jion", cwd=tmp_path)
    assert result.returncode == 2
    assert "no net 'jion' to collapse in net imaging (did you mean 'join'? nets: fan, imaging, join, round)" \
        in result.stderr
