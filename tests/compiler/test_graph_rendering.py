"""``snet graph`` drawings that Graphviz's ``dot`` accepts, in every format it writes.

The DOT text is checked by ``dot`` itself, not by comparing text: every
combination of the drawing options, over a network with every combinator
and over the README's example, must be read by ``dot`` without an error.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from frontend_helpers import snet_cli
from test_frontend_cli import ALL, README_EXAMPLE

DOT = shutil.which("dot")
needs_dot = pytest.mark.skipif(DOT is None, reason="Graphviz's 'dot' program is not installed")


def _nets(graph) -> list[str]:
    from snet.spg.dot import _net_names
    return sorted(_net_names(graph.root))


def _combinations(graph):
    """Every (compact, left_to_right, collapse) choice: no net, each net alone, and all nets collapsed."""
    nets = _nets(graph)
    collapses = [()] + [(name,) for name in nets] + [tuple(nets)]
    return itertools.product([False, True], [False, True], collapses)


@needs_dot
@pytest.mark.parametrize("which", ["all", "readme"])
def test_dot_reads_the_drawing_for_every_option_combination(tmp_path, which):
    from snet.spg.build import compile_file
    from snet.spg.dot import to_dot

    if which == "all":
        (tmp_path / "all.snet").write_text(ALL)
        path = tmp_path / "all.snet"
    else:
        path = README_EXAMPLE
    graph = compile_file(str(path))
    checked = 0
    for compact, left_to_right, collapse in _combinations(graph):
        text = to_dot(graph, compact=compact, left_to_right=left_to_right, collapse=collapse)
        done = subprocess.run([DOT, "-Tsvg"], input=text, capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (0, ""), (compact, left_to_right, collapse, text)
        assert done.stdout.startswith("<?xml")
        checked += 1
    assert checked >= 12


@needs_dot
@pytest.mark.parametrize("ext,magic", [("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml"), ("gif", b"GIF8")])
def test_a_collapsed_net_renders_in_the_format_the_extension_names(tmp_path, ext, magic):
    result = snet_cli("graph", str(README_EXAMPLE), "--collapse", "join", "-o", f"x.{ext}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / f"x.{ext}").read_bytes().startswith(magic)


@pytest.mark.parametrize("name", ["x.dot", "x.gv"])
def test_dot_and_gv_files_get_the_dot_text(tmp_path, name):
    result = snet_cli("graph", str(README_EXAMPLE), "-o", name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / name).read_text().startswith("digraph snet {")


@needs_dot
@pytest.mark.parametrize("name,message", [
    ("x.nosuch", "Graphviz's 'dot' does not know the format 'nosuch' (formats: dot, gv, "),
    ("drawing", "cannot tell the format of drawing: name it FILE.dot for DOT text"),
])
def test_a_name_that_names_no_format_is_refused_and_nothing_is_written(tmp_path, name, message):
    result = snet_cli("graph", str(README_EXAMPLE), "-o", name, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert not os.path.exists(tmp_path / name)


def test_a_drawing_without_graphviz_is_refused_and_no_dot_text_is_written(tmp_path, monkeypatch):
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = snet_cli("graph", str(README_EXAMPLE), "-o", "x.pdf", cwd=tmp_path)
    assert result.returncode == 2
    assert "Graphviz's 'dot' program is not installed" in result.stderr
    assert not Path(tmp_path / "x.pdf").exists()


def test_a_drawing_over_the_network_file_is_refused_and_the_program_kept(tmp_path):
    program = tmp_path / "net.gv"  # a program under a name that reads as DOT text
    program.write_text(README_EXAMPLE.read_text())
    (tmp_path / "link.gv").symlink_to(program)
    for output in ("net.gv", "./net.gv", "link.gv"):
        result = snet_cli("graph", "net.gv", "-o", output, cwd=tmp_path)
        assert result.returncode == 2
        assert f"error: -o {output} is also the network file" in result.stderr
        assert program.read_text() == README_EXAMPLE.read_text()
