"""Damaged programs fail with a positioned compile or usage error, never with a crash."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from frontend_helpers import CASES_DIR
from quickloop import examples
from snet.errors import SNetCompileError, SNetError
from snet.spg.build import compile_source

SOURCES = [p.read_text() for p in sorted(CASES_DIR.glob("*/net.snet"))]
PIECES = list("{}[]()<>|!*@\\#?:;,=.-+/%&abcxyz019 \n") + [
    "<metadata>", "</metadata>", "/*", "*/", "->", "..", "net ", "box ", "connect ", "if ", "then ", "else "]

edits = st.lists(st.tuples(st.floats(0, 1), st.sampled_from(["insert", "delete", "copy"]),
                           st.sampled_from(PIECES), st.integers(1, 8), st.floats(0, 1)),
                 min_size=1, max_size=3)


def damage(text: str, changes) -> str:
    for where, how, piece, size, other in changes:
        p = int(where * len(text))
        if how == "insert":
            text = text[:p] + piece + text[p:]
        elif how == "delete":
            text = text[:p] + text[p + size:]
        else:
            q = int(other * len(text))
            text = text[:p] + text[q:q + size] + text[p:]
    return text


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(SOURCES), edits)
def test_damaged_programs_raise_only_snet_errors(source, changes):
    text = damage(source, changes)
    try:
        compile_source(text, "f.snet")
    except SNetCompileError as e:
        assert e.diagnostics and all(d.severity == "error" for d in e.diagnostics)
        for d in e.diagnostics:
            assert d.span is not None and d.render().startswith(f"f.snet:{d.span.line}:{d.span.column}: error: ")
    except SNetError:
        pass  # usage errors: no net, several nets
