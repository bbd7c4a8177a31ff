"""XML records with mode="binary": C4SNet binary field values, read and written."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys

import pytest

from snet.recordio import open_writer, read_records
from snet.recordio.c4snet_binary import binary_field, decode_binary_field
from snet.recordio.streams import RecordFileError
from snet.recordio.values import ValueFormError

BINARY = '<record xmlns="snet-home.org" type="data" mode="binary" interface="C4SNet">'


def read_xml_text(text: str) -> list[dict]:
    return list(read_records(io.BytesIO(text.encode()), "xml"))


@pytest.mark.parametrize("text,value", [("GBQAAAA==", 5), ("GAgAAAA==", 2), ("G8AAAAA==", 240)])
def test_the_reference_distributions_examples(text, value):
    assert decode_binary_field(text) == value
    assert binary_field(value) == text
    # The layout: one base64 digit for the C type (6, int), then the int32's little-endian bytes.
    assert text[0] == "G" and base64.b64decode(text[1:]) == value.to_bytes(4, "little")


@pytest.mark.parametrize("value", [0, -1, 2**31 - 1, -2**31, 2**31, -2**63, 2**63 - 1, 2.5, -0.0, 1e300, "a", "\xe9"])
def test_values_round_trip(value):
    text = binary_field(value)
    assert text is not None
    back = decode_binary_field(text)
    assert back == value and type(back) is type(value)


@pytest.mark.parametrize("value", [2**63, True, None, [1, 2], "ab", "", "\u0100", {"a": 1}])
def test_values_without_a_binary_form(value):
    assert binary_field(value) is None


def test_other_c_types_read_as_the_textual_form_reads_them():
    def enc(number, data):
        return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[number] + \
            base64.b64encode(data).decode()
    assert decode_binary_field(enc(1, b"\xff")) == "\xff"
    assert decode_binary_field(enc(2, b"x")) == "x"
    assert decode_binary_field(enc(3, (65535).to_bytes(2, "little"))) == 65535
    assert decode_binary_field(enc(4, (-2).to_bytes(2, "little", signed=True))) == -2
    assert decode_binary_field(enc(5, (2**32 - 1).to_bytes(4, "little"))) == 2**32 - 1
    assert decode_binary_field(enc(7, (2**64 - 1).to_bytes(8, "little"))) == 2**64 - 1
    assert decode_binary_field(enc(9, bytes.fromhex("0000c03f"))) == 1.5


@pytest.mark.parametrize("text,message", [
    ("", "not a C4SNet binary value (expected a type digit, then base64 bytes): ''"),
    ("ABQAAAA==", "not a C4SNet binary value (expected a type digit, then base64 bytes): 'ABQAAAA=='"),
    ("L" + "A" * 24, "binary C4SNet value of type long double (its size depends on the machine) is not supported"),
    ("G!!!", "binary C4SNet int value is not valid base64: 'G!!!'"),
    ("GBQAAAAAAAAA=", "binary C4SNet int value holds 8 bytes, not 4 (arrays in binary form are not supported)"),
])
def test_malformed_binary_values(text, message):
    with pytest.raises(ValueFormError) as info:
        decode_binary_field(text)
    assert str(info.value).startswith(message)


def test_binary_records_read_into_the_values_of_the_textual_form():
    text = (f'<?xml version="1.0" ?>\n{BINARY}<field label="x">GBQAAAA==</field><tag label="t">3</tag>'
            f'<btag label="b">1</btag></record>\n'
            f'{BINARY}<field label="x">(int)7</field></record>\n'
            '<record xmlns="snet-home.org" type="data" mode="textual"><field label="x">(int)5</field></record>\n'
            '<record type="terminate"/>\n')
    assert read_xml_text(text) == [{"x": 5, "<t>": 3, "<#b>": 1}, {"x": 7}, {"x": 5}]


def test_a_bad_binary_field_names_its_line_and_label():
    text = f'{BINARY}\n<field label="x">GAgAA</field></record>\n'
    with pytest.raises(RecordFileError) as info:
        read_xml_text(text)
    assert str(info.value) == ("<input>:2: error: field 'x': binary C4SNet int value holds 3 bytes, not 4 "
                               "(arrays in binary form are not supported): 'GAgAA'")


def test_binary_writer_writes_binary_records_and_falls_back_per_record():
    out = io.StringIO()
    writer = open_writer(out, "xml", xml_mode="binary")
    writer.write({"x": 5, "<t>": 3, "<#b>": 1})
    writer.write({"x": [1, 2], "y": 2})
    writer.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == '<?xml version="1.0" ?>'
    assert lines[1] == (f'{BINARY}<field label="x">GBQAAAA==</field><tag label="t">3</tag>'
                        f'<btag label="b">1</btag></record>')
    assert 'mode="textual"' in lines[2] and "(int[2])1,2" in lines[2]
    assert read_xml_text(out.getvalue()) == [{"x": 5, "<t>": 3, "<#b>": 1}, {"x": [1, 2], "y": 2}]


def test_cli_reads_binary_input_and_writes_binary_output(tmp_path):
    (tmp_path / "fac.snet").write_text("net fac connect [{x} -> {x, <n>}];\n")
    (tmp_path / "bdata.xml").write_text(
        "".join(f'{BINARY}<field label="x">{t}</field></record>\n' for t in ("GBQAAAA==", "GAgAAAA==", "G8AAAAA==")))
    run = subprocess.run([sys.executable, "-m", "snet", "run", "fac.snet", "-i", "bdata.xml"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert [json.loads(line) for line in run.stdout.splitlines()] == [
        {"x": 5, "<n>": 0}, {"x": 2, "<n>": 0}, {"x": 240, "<n>": 0}]
    out = subprocess.run([sys.executable, "-m", "snet", "run", "fac.snet", "-i", "bdata.xml", "-o", "out.xml",
                          "--xml-mode", "binary"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    written = (tmp_path / "out.xml").read_text()
    assert written.count('mode="binary"') == 3 and '<field label="x">G8AAAAA==</field>' in written
    wrong = subprocess.run([sys.executable, "-m", "snet", "run", "fac.snet", "-i", "bdata.xml",
                            "--xml-mode", "binary"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == "error: --xml-mode binary applies to XML output only; the output format is jsonl"


# A record without a mode attribute: binary to the reference distribution's reader (its factorial
# example's bdata.xml), textual to files that spell their values (TYPE)VALUE.  Each field's text decides.
UNMARKED_FILE = ('<?xml version="1.0" encoding="ISO-8859-1" ?>\n'
                 '<record xmlns="snet-home.org" type="data" interface="C4SNet">\n'
                 '  <field label="x">GBQAAAA==</field>\n  <tag label="T">1</tag>\n</record>\n'
                 '<record type="data" interface="C4SNet"><field label="x">GAgAAAA==</field></record>\n'
                 '<record type="data"><field label="x" interface="C4SNet">G8AAAAA==</field>'
                 '<field label="c">CeA==</field><field label="d">KAAAAAAAAFEA=</field></record>\n'
                 '<record type="data"><field label="x">(int)7</field><field label="y">GAQAAAA==</field></record>\n'
                 '<record type="terminate"/>\n')


def test_records_without_a_mode_read_binary_values_as_the_reference_reader_does():
    assert read_xml_text(UNMARKED_FILE) == [
        {"x": 5, "<T>": 1}, {"x": 2}, {"x": 240, "c": "x", "d": 5.0}, {"x": 7, "y": 1}]


def test_an_explicit_textual_mode_still_reads_every_value_as_textual():
    text = '<record type="data" mode="textual"><field label="x">GBQAAAA==</field></record>\n'
    with pytest.raises(RecordFileError) as info:
        read_xml_text(text)
    assert "field 'x': not a C4SNet value (expected (TYPE)VALUE" in str(info.value)


@pytest.mark.parametrize("body,message", [
    ("5", "field 'x': not a C4SNet value (expected the textual form (TYPE)VALUE or (TYPE[N])V1,V2,..., "
          "or the binary form, a type digit then base64 bytes): '5'"),
    ("", "field 'x': not a C4SNet value (expected the textual form"),
    ("GAgAA", "field 'x': binary C4SNet int value holds 3 bytes, not 4"),
])
def test_a_field_in_neither_form_without_a_mode_says_what_both_forms_are(body, message):
    with pytest.raises(RecordFileError) as info:
        read_xml_text(f'<record type="data">\n<field label="x">{body}</field></record>\n')
    assert str(info.value).startswith(f"<input>:2: error: {message}")


def test_cli_runs_a_file_of_binary_records_without_mode(tmp_path):
    (tmp_path / "fac.snet").write_text("net fac connect [{x} -> {x, <n>}];\n")
    (tmp_path / "bdata.xml").write_text(UNMARKED_FILE, encoding="latin-1")
    run = subprocess.run([sys.executable, "-m", "snet", "run", "fac.snet", "-i", "bdata.xml"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    def canonical(records):  # a multiset of records, whatever the order of records and keys
        return sorted(json.dumps(record, sort_keys=True) for record in records)
    assert canonical(map(json.loads, run.stdout.splitlines())) == canonical([
        {"x": 5, "<T>": 1, "<n>": 0}, {"x": 2, "<n>": 0}, {"x": 240, "c": "x", "d": 5.0, "<n>": 0},
        {"x": 7, "y": 1, "<n>": 0}])
