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

from frontend_helpers import SHARED
from snet.errors import SNetCompileError
from snet.spg.build import compile_file

CASES_DIR = SHARED / "conformance" / "cases"
STATIC_ERROR_CASES = {"err_syntax", "err_undefined_name"}


def _cases():
    if not CASES_DIR.is_dir():
        return []
    return sorted(p.name for p in CASES_DIR.iterdir() if (p / "net.snet").is_file())


def test_the_shared_conformance_cases_are_present():
    assert CASES_DIR.is_dir(), f"the shared folder is expected beside the repository: {CASES_DIR}"
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
