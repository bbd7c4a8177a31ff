"""Every shared conformance network compiles, except the intended static errors.

A case whose ``case.json`` expects exit status 2 because of a syntax error or
an undefined name must fail to compile, and the compile error must contain
the position the case expects on standard error.  Every other case (run-time
errors and missing boxes included: those are not the front end's) must
compile.
"""

from __future__ import annotations

import json

import pytest

from frontend_helpers import CASES_DIR
from snet.errors import SNetCompileError
from snet.spg.build import compile_file

STATIC_ERROR_CASES = {"err_syntax", "err_undefined_name"}


def _cases():
    return sorted(p.name for p in CASES_DIR.iterdir() if (p / "net.snet").is_file())


def test_the_conformance_cases_are_present():
    assert len(_cases()) >= 40


@pytest.mark.parametrize("case", _cases())
def test_conformance_network_compiles_unless_it_is_a_static_error(case, monkeypatch):
    folder = CASES_DIR / case
    spec = json.loads((folder / "case.json").read_text())
    monkeypatch.chdir(folder)  # messages then name "net.snet" as the runner sees it
    if case in STATIC_ERROR_CASES:
        assert spec.get("exit") == 2
        with pytest.raises(SNetCompileError) as info:
            compile_file("net.snet")
        text = "\n".join(d.render() for d in info.value.diagnostics)
        for fragment in spec.get("stderr", []):
            assert fragment in text
    else:
        graph = compile_file("net.snet")
        assert [n.id for n in graph.nodes] == list(range(len(graph.nodes)))
        assert graph.root.kind == "net"


@pytest.mark.parametrize("case", _cases())
def test_snet_check_command_on_every_case(case, snet_in_process):
    """``snet check net.snet`` as a user runs it: a case that expects exit 2 with a source
    position on standard error (a static error) fails with exit 2 and that text; a case
    that expects exit 2 without one (boxes missing from the ``net.py`` beside it, which
    ``snet check`` binds as ``snet run`` does) fails with exit 2 and that text too; every
    other case (run-time errors are not the front end's) exits 0."""
    folder = CASES_DIR / case
    spec = json.loads((folder / "case.json").read_text())
    wanted = spec.get("stderr", [])
    static = spec.get("exit") == 2 and any(s.startswith("net.snet:") for s in wanted)
    result = snet_in_process("check", "net.snet", cwd=folder)
    if spec.get("exit") == 2:
        assert result.returncode == 2, result.stderr
        for text in wanted:
            assert text in result.stderr, (text, result.stderr)
        if static:
            assert result.stderr.startswith("net.snet:"), result.stderr  # the first line says where
    else:
        assert result.returncode == 0, result.stderr
        assert "->" in result.stdout
