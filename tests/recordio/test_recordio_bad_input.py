"""Malformed and hostile input: every good record first, then one positioned error.

Readers must deliver every good record that precedes a bad one, in order,
and only then raise ``FILE:LINE: error: PROBLEM`` -- whatever the problem
is and wherever in a chunk it falls -- and must never end in a traceback or
take time out of proportion to the input.  Writers given a value no format
can spell raise ``SNetRuntimeError`` naming it, not a bare Python error.
"""

from __future__ import annotations

import codecs
import io
import json

import pytest
from recordio_helpers import read_error, read_text, write_text

import snet.recordio.xml as xml_reader
from snet.errors import SNetRuntimeError
from snet.recordio import RecordFileError, format_record_jsonl, format_record_xml, read_records
from snet.recordio.xml import DeclarationFilter

XML_RECORD = '<record type="data"><field label="x">(int){i}</field><tag label="t">{i}</tag></record>\n'
LONG = "9" * 5000  # more digits than int() converts (4300 by default)
DEEP = "[" * 100_000


def xml_records(n: int, **fmt) -> str:
    return "".join(XML_RECORD.format(i=i) for i in range(n))


def expected(n: int) -> list[dict]:
    return [{"x": i, "<t>": i} for i in range(n)]


def jsonl_records(n: int) -> str:
    return "".join(json.dumps({"x": i, "<t>": i}) + "\n" for i in range(n))


# --------------------------------------------------------------------------
# XML: the records before the error are all delivered

# 5 records: far less than a chunk; 1001 and 3000: the bad record falls in a later chunk.
@pytest.mark.parametrize("good", [5, 1001, 3000])
@pytest.mark.parametrize("bad, problem", [
    (b'<record type="data"><field label="s">(char[1])\xff</field></record>\n',
     "cannot decode the input as utf-8: invalid start byte"),
    (f'<record type="data"><tag label="t">{LONG}</tag></record>\n'.encode(),
     "tag 't': an integer of more than 4300 digits"),
    (f'<record type="data"><btag label="b"> {LONG} </btag></record>\n'.encode(),
     "btag 'b': an integer of more than 4300 digits"),
    (f'<record type="data"><field label="x">(int){LONG}</field></record>\n'.encode(),
     "field 'x': an integer of more than 4300 digits"),
    (f'<record type="data"><field label="x">(long) {LONG}</field></record>\n'.encode(),
     "field 'x': an integer of more than 4300 digits"),
    (f'<record type="data"><field label="x">(int[2])1,{LONG}</field></record>\n'.encode(),
     "field 'x': an integer of more than 4300 digits"),
    (f'<record type="data"><field label="x">(int[{LONG}])1</field></record>\n'.encode(),
     "field 'x': an integer of more than 4300 digits"),
    (f'<record type="data"><field label="x">(json)[{LONG}]</field></record>\n'.encode(),
     "field 'x': (json) value holds an integer of more than 4300 digits"),
    (f'<record type="data"><field label="x">(json){DEEP}</field></record>\n'.encode(),
     "field 'x': (json) value nested more than 256 levels deep, the most a record file holds"),
], ids=["bad-byte", "long-tag", "long-btag", "long-int", "long-long", "long-array-item", "long-array-size",
        "long-json-int", "deep-json"])
def test_xml_delivers_every_good_record_before_the_error(good, bad, problem):
    got, err = read_error(xml_records(good).encode() + bad + xml_records(3).encode(), "xml", name="in.xml")
    assert got == expected(good)
    assert err.line == good + 1
    assert err.problem.startswith(problem), err.problem
    assert str(err).startswith(f"in.xml:{good + 1}: error: ")


@pytest.mark.parametrize("codec", ["utf-16", "utf-32", "shift_jis", "latin-1"])
def test_xml_decoding_error_in_any_encoding_comes_after_the_good_records(codec):
    declaration = "" if codec.startswith("utf-") else f'<?xml version="1.0" encoding="{codec}"?>\n'
    text = declaration + xml_records(3000)
    data = text.encode(codec)
    bad = {"utf-16": b"\x00\xd8A\x00", "utf-32": b"\x00\x00\x11\x00", "shift_jis": b"\x81\x20"}.get(codec)
    if bad is None:  # latin-1 decodes every byte: the error is in the XML instead
        data += b"<record type='data'><<"
    else:
        data += bad
    got, err = read_error(data, "xml", name="in.xml")
    assert got == expected(3000)
    assert err.line == text.count("\n") + 1


def test_xml_handler_failing_unexpectedly_still_delivers_the_records_before(monkeypatch):
    real = xml_reader.decode_field

    def failing(text, allow_pickle):
        if text == "(int)1500":
            raise RuntimeError("boom")
        return real(text, allow_pickle)

    monkeypatch.setattr(xml_reader, "decode_field", failing)
    got = []
    with pytest.raises(RuntimeError, match="boom"):
        for record in read_records(io.BytesIO(xml_records(3000).encode()), "xml"):
            got.append(record)
    assert got == expected(1500)


def test_xml_bytes_after_the_terminate_record_are_not_decoded():
    data = xml_records(3000).encode() + b'<record type="terminate"/>\xff\xfe<<'
    assert read_text(data, "xml") == expected(3000)


def test_xml_lone_surrogate_from_a_text_source_is_a_positioned_error():
    text = xml_records(3000) + '<record type="data"><field label="s">(char[1])\udcff</field></record>\n'
    got = []
    with pytest.raises(RecordFileError) as info:
        for record in read_records(io.StringIO(text), "xml", name="in.xml"):
            got.append(record)
    assert got == expected(3000)
    assert info.value.line == 3001 and "lone surrogate" in info.value.problem


# --------------------------------------------------------------------------
# XML: encodings

@pytest.mark.parametrize("encoding", ["rot13", "hex", "base64", "zlib", "utf-16", "utf-32", "utf-7", "cp037",
                                      "undefined", "punycode", "unicode_escape"])
def test_xml_encoding_that_cannot_be_the_files_is_a_positioned_error(encoding):
    data = f'<?xml version="1.0" encoding="{encoding}"?>\n{xml_records(2)}'.encode("ascii")
    got, err = read_error(data, "xml", name="in.xml")
    assert got == []
    assert str(err).startswith(f"in.xml:1: error: unsupported encoding '{encoding}' in the XML declaration")


@pytest.mark.parametrize("encoding", ["ISO-8859-1", "cp1252", "ascii", "UTF-8", "utf-8-sig", "koi8-r", "euc-jp"])
def test_xml_ascii_compatible_encodings_still_work(encoding):
    data = f'<?xml version="1.0" encoding="{encoding}"?>\n{xml_records(2)}'.encode("ascii")
    assert read_text(data, "xml") == expected(2)


@pytest.mark.parametrize("bom, codec", [(codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be")])
def test_xml_utf32_byte_order_mark_selects_utf32(bom, codec):
    text = '<?xml version="1.0" encoding="UTF-32"?>\n<record type="data"><field label="s">(char[2])é,ü</field></record>'
    assert read_text(bom + text.encode(codec), "xml") == [{"s": "éü"}]


# --------------------------------------------------------------------------
# XML: other hostile input

@pytest.mark.parametrize("balanced", [False, True])
def test_xml_deeply_nested_json_value_is_a_positioned_error(balanced):
    value = DEEP + ("]" * len(DEEP) if balanced else "")
    got, err = read_error(xml_records(1) + f'<record type="data">\n<field label="x">(json){value}</field></record>',
                          "xml", name="in.xml")
    assert got == expected(1)
    assert str(err).startswith("in.xml:3: error: field 'x': (json) value nested more than 256 levels deep")


def test_xml_deeply_nested_elements_are_a_positioned_error():
    got, err = read_error(xml_records(1) + '<record type="data"><field label="x">' + "<a>" * 100_000, "xml")
    assert got == expected(1)
    assert err.line == 2 and err.problem == "unexpected element <a> inside <field>"


def test_xml_nul_byte_is_a_positioned_error():
    got, err = read_error(xml_records(2) + '<record type="data"><field label="s">(char[1])\0</field></record>', "xml")
    assert got == expected(2)
    assert err.line == 3 and err.problem.startswith("invalid XML: not well-formed")


def test_xml_byte_order_mark_in_the_middle_is_named():
    got, err = read_error(xml_records(2).encode() + codecs.BOM_UTF8 + xml_records(1).encode(), "xml")
    assert got == expected(2)
    assert err.line == 3
    assert err.problem == ("unexpected text outside a record: '\\ufeff' "
                           "(a byte-order mark in the middle of the input: were files joined?)")


def test_xml_long_field_value_in_many_pieces_reads_back_exactly():
    value = "ab" * 600_000  # arrives in many chunks, each a piece of character data
    text = f'<record type="data"><field label="s">(json)"{value}"</field></record>\n' + xml_records(1)
    assert read_text(text, "xml") == [{"s": value}] + expected(1)


def test_xml_value_split_by_a_comment_reads_as_one():
    text = '<record type="data"><field label="s">(char[3])a,<!-- c -->b,<?pi x?>c</field></record>'
    assert read_text(text, "xml") == [{"s": "abc"}]


def test_declaration_filter_passes_a_long_construct_on_as_it_comes():
    f = DeclarationFilter()
    pieces = ["<record/><!-- "] + ["x" * 1000] * 100 + ["--><?xml version='1.0'?>"]
    out = [f.feed(piece) for piece in pieces] + [f.feed("", final=True)]
    # Nothing is held back but the two characters that may begin "-->".
    assert all(len(o) >= len(piece) - 2 for o, piece in zip(out, pieces))
    assert "".join(out) == "".join(pieces).replace("<?xml ", "<?xm_ ")


def test_declaration_filter_keeps_lines_and_columns():
    text = 'a <?xml version="1.0"\n encoding="UTF-8"?> b <?xml-stylesheet x?><?xml?>'
    out = DeclarationFilter().feed(text, final=True)
    assert len(out) == len(text) and out.count("\n") == 1
    assert "<?xml " not in out and "<?xml-stylesheet x?>" in out and "<?xm_?>" in out


class _CountingParser:
    """An expat parser that records how much text each ``Parse`` call is given."""

    def __init__(self, real, sizes):
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_sizes", sizes)

    def Parse(self, text, final=False):
        self._sizes.append(len(text))
        return self._real.Parse(text, final)

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __setattr__(self, name, value):
        setattr(self._real, name, value)


@pytest.mark.parametrize("construct", [
    "<!--{}-->", "<?pi {}?>", "<?xml {}?>", '<record type="data" note="{}"/>'])
def test_xml_long_token_is_fed_to_expat_in_growing_pieces(monkeypatch, construct):
    # Expat before 2.6 re-scans an unfinished token whenever it is fed: feeding a
    # long one chunk by chunk takes quadratic time.  The reader feeds it in
    # pieces that at least double what expat holds, so few calls carry it.
    monkeypatch.setattr(xml_reader, "CHUNK_SIZE", 1024)
    monkeypatch.setattr(xml_reader, "_LONG_TOKEN", 4096)
    real = xml_reader.expat.ParserCreate
    sizes: list[int] = []
    monkeypatch.setattr(xml_reader.expat, "ParserCreate", lambda *a: _CountingParser(real(*a), sizes))
    body = "y" * (1 << 20)
    text = xml_records(2) + construct.format(body) + xml_records(3)
    got = read_text(text, "xml")
    assert got[:2] == expected(2) and got[-3:] == expected(3)
    assert len(sizes) < 40 + 4096 // 1024, len(sizes)  # chunk by chunk would be over 1000 calls


# --------------------------------------------------------------------------
# JSON Lines

@pytest.mark.parametrize("bad, problem", [
    (b'{"s": "\xff"}', "invalid UTF-8 at column 8 (byte 0xff: invalid start byte)"),
    (b'{"x": ' + LONG.encode() + b"}", "invalid JSON: an integer of more than 4300 digits"),
    (b'{"<t>": ' + LONG.encode() + b"}", "invalid JSON: an integer of more than 4300 digits"),
    (b"[1, 2]", "a record must be a JSON object, not an array"),
    (b'"text"', "a record must be a JSON object, not a string"),
    (b'{"x": ' + DEEP.encode() + b"}", "JSON value nested more than 256 levels deep, the most a record file holds"),
    (b'{"x": ' + DEEP.encode() + DEEP.replace("[", "]").encode() + b"}", "JSON value nested more than 256 levels deep, the most a record file holds"),
    (b'{"x": 1}\0', "invalid JSON: Extra data (column 9)"),
    (codecs.BOM_UTF8 + b'{"x": 1}',
     "invalid JSON: Expecting value (column 1) (a byte-order mark in the middle of the input: were files joined?)"),
], ids=["bad-utf8", "long-int", "long-tag", "array", "string", "deep", "deep-balanced", "nul", "bom"])
@pytest.mark.parametrize("good", [3, 3000])
def test_jsonl_delivers_every_good_record_before_the_error(good, bad, problem):
    got, err = read_error(jsonl_records(good).encode() + bad + b"\n" + jsonl_records(2).encode(), "jsonl",
                          name="in.jsonl")
    assert got == expected(good)
    assert err.line == good + 1
    assert err.problem.startswith(problem), err.problem


def test_jsonl_deep_nesting_from_a_text_source_is_a_positioned_error():
    got = []
    with pytest.raises(RecordFileError) as info:
        for record in read_records(io.StringIO(jsonl_records(2) + '{"x": ' + DEEP + "}\n"), "jsonl", name="t"):
            got.append(record)
    assert got == expected(2)
    assert str(info.value).startswith("t:3: error: JSON value nested more than 256 levels deep")


# --------------------------------------------------------------------------
# Writers

def deeply_nested(depth: int = 100_000) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("fmt", [format_record_jsonl, format_record_xml])
def test_writing_a_deeply_nested_value_is_an_error_naming_the_problem(fmt):
    with pytest.raises(SNetRuntimeError, match="cannot write field 'a': its value is nested more than 256 levels deep"):
        fmt({"a": deeply_nested()})


@pytest.mark.parametrize("fmt", ["jsonl", "xml"])
def test_an_int_field_too_long_for_decimal_is_pickled(fmt):
    value = 10 ** 5000
    assert read_text(write_text([{"a": value}], fmt, allow_pickle=True), fmt, allow_pickle=True) == [{"a": value}]


def test_an_int_field_too_long_for_decimal_is_an_error_in_json_lines_without_pickle():
    with pytest.raises(SNetRuntimeError, match="field 'a' holds an integer of more than 4300 digits, the most this "
                                               "Python converts, which JSON cannot hold"):
        write_text([{"a": 10 ** 5000}], "jsonl")


@pytest.mark.parametrize("fmt", [format_record_jsonl, format_record_xml])
@pytest.mark.parametrize("label", ["<t>", "<#b>"])
def test_a_tag_too_long_for_decimal_is_an_error_naming_it(fmt, label):
    with pytest.raises(SNetRuntimeError, match=f"cannot write tag {label}: it holds an integer of more than"):
        fmt({"<u>": 1, label: -10 ** 5000})
