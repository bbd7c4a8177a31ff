"""JSON Lines: reading, writing, and every malformed-line error."""

from __future__ import annotations

import datetime
import enum
import io
import json
import math
import pickle
from fractions import Fraction

import pytest
from recordio_helpers import read_error, read_text, write_text

from snet.errors import EXIT_RUNTIME, SNetRecordError, SNetRuntimeError
from snet.recordio import NotJsonField, format_record_jsonl, open_writer, read_records


# --------------------------------------------------------------------------
# Reading

def test_reads_one_record_per_line_in_snet_spelling():
    text = '{"img": [1, 2, 3], "<n>": 4, "<#k>": 1}\n{"x": {"nested": [null, true, "s"]}}\n'
    assert read_text(text, "jsonl") == [{"img": [1, 2, 3], "<n>": 4, "<#k>": 1},
                                        {"x": {"nested": [None, True, "s"]}}]


def test_blank_and_whitespace_lines_are_ignored_and_crlf_accepted():
    text = '\n{"a": 1}\r\n   \n\t\n{"a": 2}'
    assert read_text(text, "jsonl") == [{"a": 1}, {"a": 2}]


def test_empty_object_is_an_empty_record_and_empty_file_no_records():
    assert read_text("{}\n", "jsonl") == [{}]
    assert read_text("", "jsonl") == []


def test_huge_and_negative_integers_are_exact():
    big = 2 ** 200
    records = read_text(f'{{"<t>": {big}, "<#b>": -{big}, "x": {big * 3}}}\n', "jsonl")
    assert records == [{"<t>": big, "<#b>": -big, "x": big * 3}]


def test_utf8_bom_on_the_first_line_is_skipped():
    assert read_text(b'\xef\xbb\xbf{"a": "\xc3\xa9"}\n', "jsonl") == [{"a": "é"}]


def test_text_file_objects_are_read_as_well_as_binary_ones():
    f = io.StringIO('{"a": "ü"}\n{"<t>": 3}\n')
    assert list(read_records(f, "jsonl")) == [{"a": "ü"}, {"<t>": 3}]


def test_reads_from_a_path_and_closes_it(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n')
    records = read_records(str(path), "jsonl")
    assert list(records) == [{"a": 1}, {"a": 2}]


def test_object_with_pickle_key_among_others_is_an_ordinary_object():
    assert read_text('{"x": {"$pickle": "abc", "other": 1}}', "jsonl") == [{"x": {"$pickle": "abc", "other": 1}}]


def test_pickled_field_is_unpickled_only_when_allowed():
    line = format_record_jsonl({"x": (1, 2j)}, allow_pickle=True)
    assert read_text(line, "jsonl", allow_pickle=True) == [{"x": (1, 2j)}]


# --------------------------------------------------------------------------
# Malformed lines: file, line and problem

def test_invalid_json_names_file_line_message_and_column():
    got, err = read_error('{"a": 1}\n{"a": 2,\n{"a": 3}\n', "jsonl", name="input.jsonl")
    assert got == [{"a": 1}]
    assert (err.file, err.line) == ("input.jsonl", 2)
    assert str(err).startswith("input.jsonl:2: error: invalid JSON: Expecting property name enclosed in double quotes")
    assert "(column" in str(err)


def test_invalid_json_example_of_the_contract():
    _, err = read_error('{"a": 1}\n\n{"a": 1 "b": 2}\n', "jsonl", name="input.jsonl")
    assert str(err) == "input.jsonl:3: error: invalid JSON: Expecting ',' delimiter (column 9)"


def test_error_is_an_snet_record_error_with_exit_status_1():
    _, err = read_error("[1]\n", "jsonl")
    assert isinstance(err, SNetRecordError) and isinstance(err, SNetRuntimeError)
    assert err.exit_status == EXIT_RUNTIME
    assert err.render() == str(err)


@pytest.mark.parametrize("line, kind", [
    ("[1, 2]", "an array"), ('"text"', "a string"), ("42", "a number"), ("1.5", "a number"),
    ("true", "a boolean"), ("null", "null"),
])
def test_a_line_that_is_not_an_object_is_an_error(line, kind):
    got, err = read_error('{"ok": 1}\n' + line + "\n", "jsonl", name="f.jsonl")
    assert got == [{"ok": 1}]
    assert str(err) == f"f.jsonl:2: error: a record must be a JSON object, not {kind}"


@pytest.mark.parametrize("label", ["", "a b", "<t", "<>", "<#>", "1x", "x-y", "<#b", "<<t>>", "é"])
def test_invalid_label_is_an_error_naming_it(label):
    import json
    got, err = read_error('{"a": 1}\n{"a": 1}\n' + json.dumps({label: 1}) + "\n", "jsonl", name="in.jsonl")
    assert len(got) == 2
    assert err.line == 3
    assert str(err).startswith(f"in.jsonl:3: error: invalid label {json.dumps(label)}")


def test_invalid_label_is_caught_even_after_valid_labels_were_cached():
    _, err = read_error('{"a": 1, "<t>": 2}\n{"a": 1, "<t>": 2, "b c": 3}\n', "jsonl")
    assert err.line == 2 and '"b c"' in err.problem


@pytest.mark.parametrize("value, shown", [("2.5", "2.5"), ('"3"', '"3"'), ("null", "null"), ("[1]", "[1]"),
                                          ("1.0", "1.0"), ('{"$pickle": "x"}', '{"$pickle": "x"}')])
def test_tag_holding_a_non_integer_is_an_error(value, shown):
    _, err = read_error('{"<t>": ' + value + "}\n", "jsonl", name="in.jsonl")
    assert str(err) == f"in.jsonl:1: error: tag <t> must hold an integer, not {shown}"


@pytest.mark.parametrize("value", ["true", "false"])
def test_tag_and_binding_tag_holding_a_bool_is_an_error(value):
    _, err = read_error('{"<t>": 1}\n{"<t>": ' + value + "}\n", "jsonl", name="in.jsonl")
    assert str(err) == f"in.jsonl:2: error: tag <t> must hold an integer, not {value}"
    _, err = read_error('{"<#b>": ' + value + "}\n", "jsonl", name="in.jsonl")
    assert str(err) == f"in.jsonl:1: error: binding tag <#b> must hold an integer, not {value}"


def test_pickled_field_without_permission_tells_how_to_allow_it():
    line = format_record_jsonl({"x": {1, 2}}, allow_pickle=True)
    got, err = read_error('{"a": 1}\n' + line + "\n", "jsonl", name="in.jsonl")
    assert got == [{"a": 1}]
    assert err.line == 2
    assert str(err).startswith("in.jsonl:2: error: field 'x' holds a pickled Python value; pass --allow-pickle")
    assert "arbitrary code" in err.problem


def test_pickle_is_not_executed_without_permission(tmp_path):
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Exploit(str(marker)))
    import base64
    line = '{"x": {"$pickle": "' + base64.b64encode(payload).decode() + '"}}'
    read_error(line, "jsonl")
    assert not marker.exists()


class _Exploit:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.mark.parametrize("value, problem", [
    ('"not base64!"', "invalid base64"), ("3", "must be a base64 string"), ('"AAAA"', "cannot unpickle"),
])
def test_malformed_pickle_is_an_error_even_when_allowed(value, problem):
    _, err = read_error('{"x": {"$pickle": ' + value + "}}\n", "jsonl", name="in.jsonl", allow_pickle=True)
    assert err.line == 1
    assert str(err).startswith("in.jsonl:1: error: field 'x': ")
    assert problem in err.problem


def test_invalid_utf8_is_an_error_on_its_line():
    got, err = read_error(b'{"a": 1}\n{"a": "\xff"}\n', "jsonl", name="in.jsonl")
    assert got == [{"a": 1}]
    assert str(err) == "in.jsonl:2: error: invalid UTF-8 at column 8 (byte 0xff: invalid start byte)"


def test_invalid_utf8_is_positioned_by_its_column_in_characters():
    # The column counts characters, as JSON syntax errors do: "é" is two bytes and one column.
    got, err = read_error(b'{"a": 1}\n{"s": "caf\xc3\xa9", "t": "\xe2\x82"}\n', "jsonl", name="in.jsonl")
    assert got == [{"a": 1}]
    assert str(err) == "in.jsonl:2: error: invalid UTF-8 at column 21 (bytes 0xe2 0x82: invalid continuation byte)"


def test_default_names_are_path_stdin_and_file_object_name(tmp_path, monkeypatch):
    path = tmp_path / "bad.jsonl"
    path.write_text("oops\n")
    with pytest.raises(SNetRecordError) as info:
        list(read_records(str(path), "jsonl"))
    assert str(info.value).startswith(f"{path}:1: error: invalid JSON")
    import sys
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n\noops\n")))
    with pytest.raises(SNetRecordError) as info:
        list(read_records("-", "jsonl"))
    assert str(info.value).startswith("<stdin>:3: error: invalid JSON")


def test_error_is_raised_only_when_the_bad_record_is_reached():
    records = read_records(io.BytesIO(b'{"a": 1}\n{"a": 2}\nnot json\n'), "jsonl", name="x")
    assert next(records) == {"a": 1}
    assert next(records) == {"a": 2}
    with pytest.raises(SNetRecordError):
        next(records)


# --------------------------------------------------------------------------
# Writing

def test_writes_compact_json_one_record_per_line_unicode_unescaped():
    text = write_text([{"a": [1, 2], "<t>": 3, "<#b>": -1}, {"s": "é\"\n"}], "jsonl")
    assert text == '{"a":[1,2],"<t>":3,"<#b>":-1}\n{"s":"é\\"\\n"}\n'


@pytest.mark.parametrize("value, written", [
    ((1, 2), [1, 2]), ({"k": (1,)}, {"k": [1]}), ([1, (2, ("three",))], [1, [2, ["three"]]]), ((), []),
])
def test_tuples_are_written_as_lists_with_or_without_pickle(value, written):
    for allow_pickle in (False, True):
        text = write_text([{"x": value}], "jsonl", allow_pickle=allow_pickle)
        assert read_text(text, "jsonl") == [{"x": written}]


ODD = [
    ({1: "a"}, "a dict with the key 1, an int and not a string,"), (b"bytes", "a bytes"), ({1, 2}, "a set"),
    (Fraction(1, 3), "a fractions.Fraction"), (float("inf"), "the float inf,"),
    (-float("inf"), "the float -inf"), ([1.0, float("nan")], "the float nan inside a list,"),
    ({"$pickle": "looks like a pickle"}, 'a dict whose only key is "$pickle"'), (1 + 2j, "a complex"),
    ((1, {2}), "a set inside a tuple"), ({"k": [datetime.date(2024, 1, 2)]}, "a datetime.date inside a list"),
]


@pytest.mark.parametrize("value, what", ODD)
def test_values_json_cannot_hold_are_an_error_naming_record_field_type_and_box(value, what):
    """interfaces.md §3: without allow_pickle, a value JSON cannot hold is a run-time error, not a pickle."""
    out = io.StringIO()
    writer = open_writer(out, "jsonl", hint=lambda label: f" (made by box 'make_{label}')")
    writer.write({"x": 1})
    with pytest.raises(NotJsonField) as info:
        writer.write({"x": value})
    writer.close()
    assert isinstance(info.value, SNetRuntimeError) and info.value.exit_status == EXIT_RUNTIME
    message = str(info.value)
    assert message.startswith(f"error: cannot write output record 2: field 'x' holds {what}"), message
    assert "which JSON cannot hold (made by box 'make_x'); " in message and "--allow-pickle" in message
    assert (info.value.label, info.value.record_number) == ("x", 2)
    assert out.getvalue() == '{"x":1}\n'  # the record before it is written, nothing of this one


@pytest.mark.parametrize("value", [value for value, _ in ODD])
def test_values_json_cannot_hold_are_pickled_and_read_back_with_pickle_allowed(value):
    text = write_text([{"x": value}], "jsonl", allow_pickle=True)
    assert text.startswith('{"x":{"$pickle":"')
    (back,) = read_text(text, "jsonl", allow_pickle=True)
    assert type(back["x"]) is type(value) and repr(back["x"]) == repr(value)


def test_nan_round_trips_through_pickle():
    (back,) = read_text(write_text([{"x": float("nan")}], "jsonl", allow_pickle=True), "jsonl", allow_pickle=True)
    assert math.isnan(back["x"])


class Colour(enum.IntEnum):
    RED = 1


class Name(str):
    pass


def test_int_and_str_subclasses_keep_their_type():
    (back,) = read_text(write_text([{"n": Name("x")}], "jsonl", True), "jsonl", allow_pickle=True)
    assert type(back["n"]) is Name
    (back,) = read_text(write_text([{"c": Colour.RED}], "jsonl", True), "jsonl", allow_pickle=True)
    assert back["c"] is Colour.RED
    with pytest.raises(NotJsonField) as info:
        format_record_jsonl({"c": Colour.RED})
    assert (info.value.label, info.value.what) == ("c", f"a {Colour.__module__}.Colour")
    assert str(info.value).startswith(f"error: cannot write a record: field 'c' holds a {Colour.__module__}.Colour, ")


def test_writer_refuses_invalid_labels_and_non_int_tags():
    writer = open_writer(io.StringIO(), "jsonl")
    for record, problem in [({"a b": 1}, "label 'a b'"), ({"<t>": 1.5}, "tag <t>"), ({"<t>": True}, "tag <t>"),
                            ({5: 1}, "label 5"), ({"<#b>": "1"}, "tag <#b>")]:
        with pytest.raises(SNetRuntimeError, match=problem):
            writer.write(record)


def test_unpicklable_value_is_an_error_naming_the_field():
    with pytest.raises(SNetRuntimeError, match="field 'f'.*neither written as JSON nor pickled"):
        format_record_jsonl({"f": lambda: 1}, allow_pickle=True)
    with pytest.raises(NotJsonField, match="field 'f' holds a function"):
        format_record_jsonl({"f": lambda: 1}, allow_pickle=False)


def test_writer_queues_until_flush_and_close_is_idempotent_and_leaves_callers_file_open():
    out = io.StringIO()
    writer = open_writer(out, "jsonl")
    writer.write({"a": 1})
    assert out.getvalue() == ""
    writer.flush()
    assert out.getvalue() == '{"a":1}\n'
    writer.close()
    writer.close()
    assert not out.closed
    with pytest.raises(ValueError):
        writer.write({"a": 2})


def test_writer_to_a_path_owns_and_closes_the_file(tmp_path):
    path = tmp_path / "out.jsonl"
    with open_writer(str(path), "jsonl") as writer:
        for i in range(1000):
            writer.write({"i": i})
    assert path.read_text().splitlines()[-1] == '{"i":999}'
    assert len(path.read_text().splitlines()) == 1000


def test_writer_to_stdout_writes_utf8_and_leaves_stdout_usable(capfdbinary):
    import gc
    import sys
    print("before")
    writer = open_writer("-", "jsonl")
    writer.write({"s": "é"})
    writer.close()
    forgotten = open_writer("-", "xml")  # never closed: collecting it must not close stdout
    del forgotten
    gc.collect()
    print("after", flush=True)
    assert not sys.stdout.closed
    assert capfdbinary.readouterr().out == 'before\n{"s":"é"}\nafter\n'.encode("utf-8")


def test_writer_to_a_binary_file_object_writes_utf8_and_leaves_it_open():
    out = io.BytesIO()
    with open_writer(out, "jsonl") as writer:
        writer.write({"s": "é"})
        writer.write({"t": "é\ud800"})  # UTF-8 cannot hold it: this line is written with escapes
    assert not out.closed
    assert out.getvalue() == '{"s":"é"}\n{"t":"\\u00e9\\ud800"}\n'.encode("utf-8")
    assert list(read_records(io.BytesIO(out.getvalue()), "jsonl")) == [{"s": "é"}, {"t": "é\ud800"}]


def test_lone_surrogates_are_written_escaped_and_read_back(tmp_path):
    path = tmp_path / "s.jsonl"
    with open_writer(str(path), "jsonl") as writer:
        writer.write({"s": "a\ud800b"})
        writer.write({"t": "ok"})
    assert list(read_records(str(path), "jsonl")) == [{"s": "a\ud800b"}, {"t": "ok"}]


def test_writer_to_a_narrow_encoding_file_object_escapes_what_it_cannot_hold():
    raw = io.BytesIO()
    f = io.TextIOWrapper(raw, encoding="ascii")
    with open_writer(f, "jsonl") as writer:
        writer.write({"s": "é"})
        writer.write({"t": "plain"})
    f.flush()
    assert raw.getvalue() == b'{"s":"\\u00e9"}\n{"t":"plain"}\n'


def test_xml_read_as_json_lines_gets_a_hint():
    _, err = read_error('<?xml version="1.0"?>\n<record type="data"/>\n', "jsonl", name="in.txt")
    assert str(err) == "in.txt:1: error: invalid JSON: Expecting value (column 1) (is this S-Net XML? give --format xml)"


def test_numpy_values_are_pickled_in_xml_and_keep_their_type():
    np = pytest.importorskip("numpy")
    record = {"f": np.float64(2.5), "i": np.int64(3), "a": np.arange(4)}
    text = write_text([record], "xml")
    assert text.count("(pickle)") == 3
    (back,) = read_text(text, "xml", allow_pickle=True)
    assert type(back["f"]) is np.float64 and type(back["i"]) is np.int64
    assert back["a"].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("allow_pickle", [False, True])
def test_numpy_values_are_json_numbers_and_lists_in_json_lines(allow_pickle):
    np = pytest.importorskip("numpy")
    record = {"f": np.float64(2.5), "g": np.float32(0.5), "i": np.int64(3), "b": np.bool_(True),
              "a": np.arange(4), "m": np.array([[1.5, 2.0], [3.0, 4.0]]), "s": np.str_("word"),
              "t": (np.int8(1), [np.uint64(2)]), "o": np.array([1, (2, 3)], dtype=object)}
    text = write_text([record], "jsonl", allow_pickle=allow_pickle)
    assert "$pickle" not in text
    assert json.loads(text) == {"f": 2.5, "g": 0.5, "i": 3, "b": True, "a": [0, 1, 2, 3],
                                "m": [[1.5, 2.0], [3.0, 4.0]], "s": "word", "t": [1, [2]], "o": [1, [2, 3]]}
    assert type(json.loads(text)["i"]) is int


def test_numpy_values_json_cannot_hold_are_named_by_their_numpy_type():
    np = pytest.importorskip("numpy")
    seen = []
    for record in ({"c": np.complex128(1 + 2j)}, {"d": np.array(["2024-01-02"], dtype="datetime64[D]")},
                   {"n": np.array([1.0, np.nan])}):
        assert '{"$pickle":"' in format_record_jsonl(record, allow_pickle=True)
        with pytest.raises(NotJsonField) as info:
            format_record_jsonl(record, allow_pickle=False)
        seen.append(info.value)
    assert [(f.label, f.what) for f in seen] == [
        ("c", "a numpy.complex128 holding a complex"), ("d", "a numpy.ndarray holding a datetime.date inside a list"),
        ("n", "a numpy.ndarray holding the float nan inside a list")]
