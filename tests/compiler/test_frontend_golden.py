"""Every error and warning message kind, against golden files.

Each ``golden/NAME.snet`` is checked with ``snet check NAME.snet`` run in the
golden folder; standard error must equal ``NAME.err`` exactly, standard
output ``NAME.out`` (empty if absent), and the exit status is 2 when the
expected output holds an error, else 0.  Nothing is regenerated here.
"""

from __future__ import annotations

import pytest

from frontend_helpers import GOLDEN

CASES = sorted(p.stem for p in GOLDEN.glob("*.snet"))


def test_there_is_a_golden_case_for_every_message_family():
    families = {name.split("_")[0] for name in CASES}
    assert {"syntax", "lex", "metadata", "name", "cycle", "label", "decl", "several", "warnings", "usage"} <= families


@pytest.mark.parametrize("name", CASES)
def test_snet_check_output_matches_golden_file(name, snet_in_process):
    expected_err = (GOLDEN / f"{name}.err").read_text()
    out_file = GOLDEN / f"{name}.out"
    expected_out = out_file.read_text() if out_file.exists() else ""
    result = snet_in_process("check", f"{name}.snet", cwd=GOLDEN)
    assert result.stderr == expected_err
    assert result.stdout == expected_out
    assert result.returncode == (2 if "error: " in expected_err else 0)
