"""What a `.snet` file can hold that Python will not take as it is: positioned errors, never a traceback.

Two cases: an integer literal longer than the interpreter converts to or
from decimal (``sys.get_int_max_str_digits``), and bytes that are not
UTF-8.  Both are reported as ``FILE:LINE:COL: error: ...`` with the source
line and a caret, by ``snet check``, ``snet run``, ``snet graph`` and
``snet.load``, and in files bound by ``--net-path`` too.
"""

from __future__ import annotations

import sys

import pytest
from frontend_helpers import snet_cli

import snet
from snet.errors import SNetSyntaxError
from snet.spg.build import compile_source

LIMIT = sys.get_int_max_str_digits()


@pytest.mark.parametrize("literal", ["9" * (LIMIT + 1), "1" + "0" * 5000, "0x" + "f" * 4000, "0" + "7" * 5000],
                         ids=["decimal", "power-of-ten", "hex", "octal"])
def test_an_integer_literal_longer_than_python_converts_is_a_positioned_error(literal):
    with pytest.raises(SNetSyntaxError) as info:
        compile_source(f"net n connect\n  [{{<a>}} -> {{<b=a+{literal}>}}];\n", "big.snet")
    (diagnostic,) = info.value.diagnostics
    assert (diagnostic.span.line, diagnostic.span.column) == (2, 19)
    assert diagnostic.message == (f"integer literal too long: its value has more than {LIMIT} decimal digits, "
                                  f"the most this Python converts")


def test_the_longest_literal_python_converts_is_taken_and_computed_with():
    literal = "9" * LIMIT
    net = snet.load(f"net n connect [{{<a>}} -> {{<b=a+{literal}>}}];\n")
    (out,) = net.run([{"<a>": 1}], engine="reference")
    assert out == {"<b>": 10 ** LIMIT}


@pytest.mark.parametrize("command", [["check"], ["run", "--engine", "reference"], ["graph", "-o", "g.dot"]])
def test_every_command_reports_a_long_literal_with_its_line_and_caret(tmp_path, command):
    (tmp_path / "big.snet").write_text("net big connect [{<a>} -> {<b=" + "9" * 5000 + ">}];\n")
    result = snet_cli(command[0], "big.snet", *command[1:], cwd=tmp_path, stdin="")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == (f"big.snet:1:31: error: integer literal too long: its value has more than {LIMIT} decimal "
                        f"digits, the most this Python converts")
    assert lines[1].startswith("  net big connect [{<a>} -> {<b=999") and lines[1].endswith("...")
    assert lines[2] == " " * 32 + "^"


@pytest.mark.parametrize("command", [["check"], ["run", "--engine", "reference"], ["graph", "-o", "g.dot"]])
def test_bytes_that_are_not_utf8_are_reported_at_line_and_column_with_the_line(tmp_path, command):
    (tmp_path / "latin.snet").write_bytes(b"net latin connect\n  [{<a>} -> {<b=1>}]; // caf\xe9\n")
    result = snet_cli(command[0], "latin.snet", *command[1:], cwd=tmp_path, stdin="")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "latin.snet:2:29: error: invalid UTF-8 (byte 0xe9: invalid continuation byte); a .snet file must be UTF-8 text",
        "    [{<a>} -> {<b=1>}]; // caf\ufffd",
        " " * 30 + "^"]


def test_a_truncated_character_after_a_byte_order_mark_counts_columns_in_characters(tmp_path):
    (tmp_path / "cut.snet").write_bytes(b"\xef\xbb\xbf/* \xc3\xa9\xe2\x82 */ net cut connect [];\n")
    result = snet_cli("check", "cut.snet", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        "cut.snet:1:5: error: invalid UTF-8 (bytes 0xe2 0x82: invalid continuation byte); "
        "a .snet file must be UTF-8 text")


def test_load_raises_the_positioned_error(tmp_path):
    path = tmp_path / "bad.snet"
    path.write_bytes(b"net bad connect [];\n\xff\n")
    with pytest.raises(SNetSyntaxError) as info:
        snet.load(str(path))
    assert str(info.value).splitlines()[0] == (
        f"{path}:2:1: error: invalid UTF-8 (byte 0xff: invalid start byte); a .snet file must be UTF-8 text")


def test_a_net_bound_from_another_file_is_read_the_same_way(tmp_path):
    (tmp_path / "main.snet").write_text("net other;\nnet main connect other;\n")
    (tmp_path / "other.snet").write_bytes(b"net other connect [{<x>} -> {<y=\xff>}];\n")
    result = snet_cli("check", "main.snet", "--dialect", "rts", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0].endswith(
        "other.snet:1:33: error: invalid UTF-8 (byte 0xff: invalid start byte); a .snet file must be UTF-8 text")
