"""Networks, sessions and executions say what they are when printed, and a network draws itself in a notebook."""

from __future__ import annotations

import shutil

import pytest

import snet

SOURCE = """
net pair {
  box double ((a) -> (a));
  box keep ((a) -> (a));
} connect double .. keep;
"""


def double(a):
    return {"a": 2 * a}


def keep(a):
    return {"a": a}


@pytest.fixture
def net():
    return snet.load(SOURCE, boxes={"double": double, "keep": keep})


def test_a_network_shows_its_name_signature_and_boxes(net):
    assert repr(net) == "<snet.Network pair {a} -> {a}; boxes: double, keep>"


@pytest.mark.parametrize("engine", ["reference", "front"])
def test_an_execution_shows_its_engine_and_figures(net, engine):
    execution = net.run([{"a": 1}, {"a": 2}], engine=engine, workers=2)
    assert list(execution) in ([{"a": 2}, {"a": 4}], [{"a": 4}, {"a": 2}])
    text = repr(execution)
    # under box concurrency auto (the default), the workers active of those the run may use
    active = execution.stats().auto.workers if engine == "front" else 0
    workers = f", {active} of 2 workers active" if engine == "front" else ""
    assert text.startswith(f"<snet.Execution {engine} engine{workers}: 2 in, 2 out, ")
    fixed = net.run([{"a": 1}], engine="front", workers=2, box_concurrency=2)
    assert list(fixed) == [{"a": 2}] and repr(fixed).startswith("<snet.Execution front engine, 2 workers: 1 in, 1 out")
    from snet.stats import format_duration
    assert text.endswith(f", {format_duration(execution.stats().seconds)}>"), text  # as --stats writes a time


def test_a_session_shows_its_state_and_what_was_fed(net):
    session = net.session(engine="reference")
    session.feed({"a": 5})
    assert repr(session).startswith("<snet.Session of net pair (open): 1 fed, <snet.Execution reference engine: ")
    assert session.close() == [{"a": 10}]
    assert repr(session).startswith("<snet.Session of net pair (finished): 1 fed, ")
    assert "1 in, 1 out" in repr(session)


def test_a_network_in_a_notebook_shows_signature_boxes_and_drawing(net):
    page = net._repr_html_()
    assert "<b>net pair</b> <code>{a} -&gt; {a}</code>" in page
    assert "<td><code>double</code></td><td>double in " in page and __file__ in page
    if shutil.which("dot") is None:
        assert "install Graphviz" in page
    else:
        svg = page[page.index("<svg"):]
        assert svg.rstrip().endswith("</svg>")
        assert ">double</text>" in svg and ">keep</text>" in svg  # the compact drawing: boxes by name


def test_to_dot_is_the_drawing_snet_graph_makes(net):
    assert net.to_dot().startswith("digraph snet {\n  rankdir=\"TB\";")
    assert 'rankdir="LR";' in net.to_dot(left_to_right=True)
    assert "dispatcher" not in net.to_dot(compact=True)
