"""S-Net XML: the reference distribution's features, the writer's output, every malformed-input error."""

from __future__ import annotations

import io
import math

import pytest
from recordio_helpers import read_error, read_text, write_text

from snet.errors import SNetRuntimeError
from snet.recordio import open_writer, read_records
from snet.recordio.xml import DeclarationFilter

REFERENCE_STYLE = """<?xml version="1.0" encoding="ISO-8859-1" ?>
<!-- a comment before the first record -->
<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">
  <field label="vals">(int[4])1,2,3,4</field>
  <field label="name">(char[5])h,e,l,l,o</field>
  <field label="scale">(double)2.5</field>
  <tag label="id">1</tag>
  <tag label="z"/>
  <tag label="y"></tag>
  <btag label="grp">3</btag>
</record>
<?xml version="1.0" ?>
<record type="data" mode="textual">
  <field label="f" interface="C4SNet">(float)0.5</field>
  <!-- a comment inside a record -->
  <field label="i" interface="C4SNet">(int)5</field>
  <btag label="e"/>
</record>
<record type="terminate" />
<record type="data"><field label="after">(int)1</field></record>
this is not even XML <<<
"""


def test_reference_distribution_file_reads_with_every_feature():
    assert read_text(REFERENCE_STYLE, "xml") == [
        {"vals": [1, 2, 3, 4], "name": "hello", "scale": 2.5, "<id>": 1, "<z>": 0, "<y>": 0, "<#grp>": 3},
        {"f": 0.5, "i": 5, "<#e>": 0},
    ]


def test_terminate_record_stops_reading_the_file():
    data = io.BytesIO(('<record type="data"><field label="a">(int)1</field></record>'
                       '<record type="terminate"/>' + "garbage" * 100000).encode())
    assert list(read_records(data, "xml")) == [{"a": 1}]
    assert data.tell() < 100000  # the rest was never read


def test_end_of_file_also_ends_the_input_and_empty_input_has_no_records():
    assert read_text('<record type="data"><tag label="t">-3</tag></record>\n', "xml") == [{"<t>": -3}]
    assert read_text("", "xml") == []
    assert read_text('<?xml version="1.0"?>\n<!-- nothing -->\n', "xml") == []


@pytest.mark.parametrize("text, value", [
    ("(int)5", 5), ("(int)-12", -12), ("( int )+7", 7), ("(long)123456789012345678901234567890", 123456789012345678901234567890),
    ("(unsigned int)4", 4), ("(double)2.5", 2.5), ("(float)2.5", 2.5), ("(double)-1.00000000000000000000e+00", -1.0),
    ("(double)1e300", 1e300), ("(double)3", 3.0), ("(long double).5", 0.5),
    ("(int[3])1,2,3", [1, 2, 3]), ("(int[3]) 1, 2 ,3 ", [1, 2, 3]), ("(double[2])0.5,-1.25", [0.5, -1.25]),
    ("(int[0])", []), ("(double[0])", []), ("(char[3])a,b,c", "abc"), ("(char[0])", ""), ("(char)x", "x"),
    ("(char[3])a,,,b", "a,b"), ("(char[3]) a, b, c", "abc"), ("(char[2]) , ", "  "),
    ("(char[5])h,e,l,l,o", "hello"), ("(unsigned char[2])o,k", "ok"),
    ("\n    (int)5\n  ", 5), ('(json){"a":[1,null,true]}', {"a": [1, None, True]}), ("(json)null", None),
])
def test_c4snet_values_are_read_into_python_values(text, value):
    (record,) = read_text(f'<record type="data"><field label="x">{text}</field></record>', "xml")
    assert record["x"] == value and type(record["x"]) is type(value)


def test_double_nan_and_inf_are_read():
    (record,) = read_text('<record type="data"><field label="n">(double)nan</field>'
                          '<field label="i">(double)-inf</field></record>', "xml")
    assert math.isnan(record["n"]) and record["i"] == -math.inf


def test_entities_and_character_references_are_decoded():
    (record,) = read_text('<record type="data"><field label="s">(char[5])&lt;,&amp;,&gt;,&#10;,&#233;</field>'
                          '<field label="c"><![CDATA[(char[3])<,&,>]]></field></record>', "xml")
    assert record == {"s": "<&>\né", "c": "<&>"}


def test_declared_latin1_encoding_is_honoured():
    data = '<?xml version="1.0" encoding="ISO-8859-1"?>\n<record type="data"><field label="s">(char[1])é</field></record>'
    assert read_text(data.encode("latin-1"), "xml") == [{"s": "é"}]


def test_declaration_inside_a_comment_or_cdata_is_left_alone():
    text = ('<record type="data"><!-- <?xml version="1.0"?> --><field label="s"><![CDATA[(char[5])<,?,x,m,l]]></field>'
            "</record>")
    assert read_text(text, "xml") == [{"s": "<?xml"}]


def test_prefixed_record_element_names_are_accepted():
    text = '<s:record xmlns:s="snet-home.org" type="data"><s:tag label="t">2</s:tag></s:record>'
    assert read_text(text, "xml") == [{"<t>": 2}]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_declaration_filter_is_independent_of_chunk_boundaries(chunk):
    text = REFERENCE_STYLE + '<?xml version="1.0"?><!-- c --><![CDATA[<?xml x?>]]><?pi data?>\n<?xml\nversion="1.0"?>'
    whole = DeclarationFilter().feed(text, final=True)
    f = DeclarationFilter()
    pieces = [f.feed(text[i:i + chunk]) for i in range(0, len(text), chunk)] + [f.feed("", final=True)]
    assert "".join(pieces) == whole
    assert "<?xml " not in whole.replace("<![CDATA[<?xml x?>]]>", "").replace("<!-- c -->", "")
    assert whole.count("\n") == text.count("\n")


# --------------------------------------------------------------------------
# Malformed input: file, line and problem

BAD_CASES = [
    # (text, line, problem start)
    ('<record type="data"><field label="a">(int)1</field>\n</record>\n<record type="data">\n<field label="b">(int)1</fiel>\n</record>',
     4, "invalid XML: mismatched tag"),
    ('<record type="data"></record>\n<record type="sync"/>', 2, "unknown record type 'sync' (expected data or terminate)"),
    ('<record type="data"></record>\n\n<record/>', 3, '<record> without a type attribute'),
    ('<record type="data"></record>\n<recrod type="data"/>', 2, "unknown element <recrod> (expected <record>)"),
    ('<record type="data">\n<value label="v">1</value></record>', 2,
     "unknown element <value> in a record (expected <field>, <tag> or <btag>)"),
    ('<record type="data">\n<field label="v"><b>1</b></field></record>', 2, "unexpected element <b> inside <field>"),
    ('<record type="data">\n<field>(int)1</field></record>', 2, "<field> without a label attribute"),
    ('<record type="data">\n<tag>1</tag></record>', 2, "<tag> without a label attribute"),
    ('<record type="data">\n<btag>1</btag></record>', 2, "<btag> without a label attribute"),
    ('<record type="data">\n<field label="a b">(int)1</field></record>', 2, "invalid label 'a b' on <field>"),
    ('<record type="data">\n<tag label="&lt;t&gt;">1</tag></record>', 2, "invalid label '<t>' on <tag>"),
    ('<record type="data"><tag label="t">1</tag>\n<tag label="t">2</tag></record>', 2, "tag 't' appears twice in one record"),
    ('<record type="data">\n<tag label="t">x</tag></record>', 2, "tag 't' must hold an integer, not 'x'"),
    ('<record type="data">\n<tag label="t">1.5</tag></record>', 2, "tag 't' must hold an integer, not '1.5'"),
    ('<record type="data">\n<btag label="b">true</btag></record>', 2, "btag 'b' must hold an integer, not 'true'"),
    ('<record type="data">\n<field label="x">5</field></record>', 2, "field 'x': not a C4SNet value"),
    ('<record type="data">\n<field label="x">(int)five</field></record>', 2, "field 'x': (int) value is not an integer: 'five'"),
    ('<record type="data">\n<field label="x">(double)x1</field></record>', 2, "field 'x': (double) value is not a number"),
    ('<record type="data">\n<field label="x">(int[3])1,2</field></record>', 2, "field 'x': (int[3]) array holds 2 items"),
    ('<record type="data">\n<field label="x">(int[2])1,z</field></record>', 2, "field 'x': (int[2]) item is not an integer: 'z'"),
    ('<record type="data">\n<field label="x">(char[2])abc</field></record>', 2,
     "field 'x': (char[2]) array is not 2 comma-separated characters"),
    ('<record type="data">\n<field label="x">(char)ab</field></record>', 2, "field 'x': (char) value must be one character"),
    ('<record type="data">\n<field label="x">(string)ab</field></record>', 2, "field 'x': unknown C4SNet type 'string'"),
    ('<record type="data">\n<field label="x">(int[])1</field></record>', 2, "field 'x': (int[]) needs an array size"),
    ('<record type="data">\n<field label="x">(json){bad</field></record>', 2, "field 'x': invalid JSON in (json) value"),
    ('<record type="data">\n<field label="x">(pickle)gASVBwAAAAAAAABLAUsChpQu</field></record>', 2,
     "field 'x': a pickled Python value; pass --allow-pickle"),
    ('<record type="data">\nstray text<tag label="t">1</tag></record>', 2,
     "unexpected text between the elements of a record: 'stray text'"),
    ('<record type="data"></record>\nstray', 2, "unexpected text outside a record: 'stray'"),
    ('<record type="data"></record>\n<record type="data">\n<tag label="t">1</tag>', 2,
     "the input ends inside this <record> (no </record>)"),
    ('<record type="data">&nbsp;</record>', 1, "invalid XML: undefined entity"),
    ('<record type="data"></record>\n<!-- never closed', 2, "invalid XML: unclosed token"),
    ('<record type="data" type="data"></record>', 1, "invalid XML: duplicate attribute"),
]


@pytest.mark.parametrize("text, line, problem", BAD_CASES)
def test_malformed_xml_is_an_error_naming_file_line_and_problem(text, line, problem):
    good = '<?xml version="1.0"?>\n<record type="data"><field label="ok">(int)1</field></record>\n'
    got, err = read_error(good + text, "xml", name="in.xml")
    complete_before = text.count("</record>\n")
    assert got[:1] == [{"ok": 1}] and len(got) == 1 + complete_before, "records before the bad one come first"
    assert err.file == "in.xml"
    assert err.line == line + 2
    assert str(err).startswith(f"in.xml:{line + 2}: error: {problem}"), str(err)


def test_xml_syntax_error_reports_the_column():
    _, err = read_error('<record type="data">\n  <tag label="t">1</tag> < </record>', "xml", name="in.xml")
    assert str(err) == "in.xml:2: error: invalid XML: not well-formed (invalid token) (column 27)"


def test_syntax_error_on_the_first_line_reports_the_column_of_the_file():
    _, err = read_error('<record type="data"><<', "xml", name="in.xml")
    assert str(err) == "in.xml:1: error: invalid XML: not well-formed (invalid token) (column 22)"


def test_unknown_encoding_is_an_error():
    _, err = read_error(b'<?xml version="1.0" encoding="no-such-codec"?><record type="data"/>', "xml", name="in.xml")
    assert str(err) == "in.xml:1: error: unknown encoding 'no-such-codec' in the XML declaration"


def test_undecodable_byte_is_an_error_on_its_line():
    _, err = read_error(b'<record type="data"/>\n\n<record type="data"><field label="s">(char[1])\xff</field></record>',
                        "xml", name="in.xml")
    assert err.line == 3 and "cannot decode the input as utf-8" in err.problem


def test_pickled_field_reads_with_permission():
    (record,) = read_text(write_text([{"t": (1, "a")}], "xml"), "xml", allow_pickle=True)
    assert record == {"t": (1, "a")}


# --------------------------------------------------------------------------
# Writing

def test_writer_output_is_c4snet_with_declaration_and_terminate_record():
    text = write_text([{"i": 5, "neg": -12, "f": 2.5, "s": "abc", "li": [1, -2, 3], "lf": [0.5, -1.25],
                        "<t>": -4, "<#b>": 2}, {"<only>": 7}], "xml")
    lines = text.splitlines()
    assert lines[0] == '<?xml version="1.0" ?>'  # exactly: interfaces.md §3
    assert lines[1] == ('<record xmlns="snet-home.org" type="data" mode="textual" interface="C4SNet">'
                        '<field label="i">(int)5</field><field label="neg">(int)-12</field>'
                        '<field label="f">(double)2.5</field><field label="s">(char[3])a,b,c</field>'
                        '<field label="li">(int[3])1,-2,3</field><field label="lf">(double[2])0.5,-1.25</field>'
                        '<tag label="t">-4</tag><btag label="b">2</btag></record>')
    assert lines[3] == '<record xmlns="snet-home.org" type="terminate"/>'
    assert len(lines) == 4


@pytest.mark.parametrize("value, text", [
    ("", "(char[0])"), ("a,b", "(char[3])a,,,b"), ("<&>", "(char[3])&lt;,&amp;,&gt;"), ("a\nb", "(char[3])a,&#10;,b"),
    ([], "(int[0])"), (float("inf"), "(double)inf"), (0.1, "(double)0.1"), (10 ** 30, "(int)" + str(10 ** 30)),
    (None, "(json)null"), (True, "(json)true"), (["a", "b"], '(json)["a","b"]'), ([1, 2.5], "(json)[1,2.5]"),
    ({"k": [1]}, '(json){"k":[1]}'), ("\x00", '(json)"\\u0000"'), ("a\ud800", '(json)"a\\ud800"'),
    ([[1], [2]], "(json)[[1],[2]]"), ([True], "(json)[true]"),
])
def test_writer_value_forms(value, text):
    out = write_text([{"x": value}], "xml")
    assert f">{text}</field>" in out


def test_writer_falls_back_to_pickle_for_other_python_values():
    out = write_text([{"x": (1, 2)}, {"x": {1, 2}}, {"x": [float("nan")]}], "xml")
    assert out.count('interface="snet-python">(pickle)') == 2
    assert "(double[1])nan" in out


def test_writer_refuses_invalid_labels_non_int_tags_and_unpicklable_values():
    writer = open_writer(io.StringIO(), "xml")
    for record, problem in [({"a b": 1}, "label 'a b'"), ({"<t>": 1.5}, "tag <t>"), ({"<#b>": False}, "tag <#b>"),
                            ({"f": lambda: 0}, "field 'f'")]:
        with pytest.raises(SNetRuntimeError, match=problem):
            writer.write(record)


def test_close_writes_terminate_once_and_closes_only_own_files(tmp_path):
    out = io.StringIO()
    writer = open_writer(out, "xml")
    writer.close()
    writer.close()
    assert out.getvalue() == '<?xml version="1.0" ?>\n<record xmlns="snet-home.org" type="terminate"/>\n'
    assert not out.closed
    path = tmp_path / "o.xml"
    with open_writer(str(path), "xml") as writer:
        writer.write({"s": "é"})
    text = path.read_text(encoding="utf-8")
    assert text.startswith('<?xml version="1.0" ?>\n<record')
    assert list(read_records(str(path), "xml")) == [{"s": "é"}]


def test_writer_to_a_narrow_encoding_file_uses_character_references():
    raw = io.BytesIO()
    f = io.TextIOWrapper(raw, encoding="ascii")
    with open_writer(f, "xml") as writer:
        writer.write({"s": "é"})
    f.flush()
    assert b"(char[1])&#233;" in raw.getvalue()
    assert list(read_records(io.BytesIO(raw.getvalue()), "xml")) == [{"s": "é"}]


@pytest.mark.parametrize("codec", ["latin-1", "cp1252", "utf-16"])
def test_writer_to_a_file_in_another_encoding_still_writes_a_utf8_document(codec):
    """The declaration names no encoding, so the document must read as UTF-8: ASCII and references."""
    raw = io.BytesIO()
    f = io.TextIOWrapper(raw, encoding=codec)
    with open_writer(f, "xml") as writer:
        writer.write({"s": "é€ü", "<t>": 1})
    f.flush()
    text = raw.getvalue().decode(codec)
    assert text.startswith('<?xml version="1.0" ?>\n')
    assert text.isascii()
    assert "(char[3])&#233;,&#8364;,&#252;" in text
    assert list(read_records(io.BytesIO(text.encode()), "xml")) == [{"s": "é€ü", "<t>": 1}]


def test_nothing_is_written_before_flush():
    out = io.StringIO()
    writer = open_writer(out, "xml")
    writer.write({"a": 1})
    assert out.getvalue() == ""
    writer.flush()
    assert "(int)1" in out.getvalue()


@pytest.mark.parametrize("codec", ["utf-16", "utf-8-sig"])
def test_byte_order_marks_select_the_encoding(codec):
    text = '<?xml version="1.0" encoding="UTF-16"?>\n<record type="data"><field label="s">(char[2])é,ü</field></record>'
    if codec == "utf-8-sig":
        text = text.replace("UTF-16", "UTF-8")
    assert read_text(text.encode(codec), "xml") == [{"s": "éü"}]


@pytest.mark.parametrize("text, problem", [
    ("(json[2])[1]", "(json) takes no array size"),
    ("(pickle)not-base64!", "invalid base64 in pickled value"),
    ("(pickle)AAAA", "cannot unpickle value"),
    ("(char[0])x", "(char[0]) array holds characters"),
])
def test_malformed_python_forms_are_errors_even_with_pickle_allowed(text, problem):
    _, err = read_error(f'<record type="data">\n<field label="x">{text}</field></record>', "xml",
                        name="in.xml", allow_pickle=True)
    assert str(err).startswith(f"in.xml:2: error: field 'x': {problem}"), str(err)


def test_text_file_objects_are_read_as_well_as_binary_ones():
    f = io.StringIO('<?xml version="1.0"?><record type="data"><field label="s">(char[1])é</field></record>')
    assert list(read_records(f, "xml")) == [{"s": "é"}]


def test_a_byte_order_mark_left_in_text_is_skipped_and_stylesheet_pis_are_kept():
    f = io.StringIO('\ufeff<?xml version="1.0"?><?xml-stylesheet href="s.css"?><record type="data"><tag label="t">4</tag></record>')
    assert list(read_records(f, "xml")) == [{"<t>": 4}]


def test_stray_text_is_reported_on_its_first_line_with_a_hint_for_json_lines():
    _, err = read_error('\n{"a": 1}\n{"a": 2}\n', "xml", name="p.jsonl")
    assert str(err) == "p.jsonl:2: error: unexpected text outside a record: '{\"a\": 1}...' (is this JSON Lines? give --format jsonl)"


def test_digits_of_other_scripts_are_not_numbers():
    _, err = read_error('<record type="data">\n<field label="x">(int)١٢</field></record>', "xml", name="in.xml")
    assert str(err) == "in.xml:2: error: field 'x': (int) value is not an integer: '١٢'"
    _, err = read_error('<record type="data">\n<tag label="t">١</tag></record>', "xml", name="in.xml")
    assert str(err) == "in.xml:2: error: tag 't' must hold an integer, not '١'"
