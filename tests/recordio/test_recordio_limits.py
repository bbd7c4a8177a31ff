"""What a record file holds is what a record file writes: nesting, and where a bad line is reported."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys

import pytest
from recordio_helpers import read_error, read_text, write_text

from snet.errors import SNetRuntimeError
from snet.recordio import format_record_jsonl, format_record_xml
from snet.recordio.values import MAX_NESTING, nests_too_deeply


def nested(depth: int, leaf=1) -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def jsonl_line(depth: int) -> str:
    return '{"x": ' + "[" * depth + "1" + "]" * depth + "}"


def test_nesting_depth_counts_lists_dicts_and_tuples():
    assert not nests_too_deeply(1, 0) and not nests_too_deeply([], 1) and nests_too_deeply([[]], 1)
    assert not nests_too_deeply({"a": [1.5, 2]}, 2) and nests_too_deeply({"a": [[1]]}, 2)
    assert nests_too_deeply([1, "s", ({"k": 1},)], 2) and not nests_too_deeply([1, "s", ({"k": 1},)], 3)
    assert nests_too_deeply(nested(100_000), MAX_NESTING)  # no recursion, whatever the depth


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 495, 900])
def test_jsonl_input_nested_past_the_bound_is_an_error_naming_line_field_and_bound(depth):
    got, err = read_error('{"a": 1}\n' + jsonl_line(depth) + "\n", "jsonl", name="in.jsonl")
    assert got == [{"a": 1}]
    assert str(err) == (f"in.jsonl:2: error: field 'x': value nested more than {MAX_NESTING} levels deep, "
                        f"the most a record file holds")


def test_jsonl_input_nested_past_what_the_decoder_takes_is_the_same_error_on_its_line():
    got, err = read_error('{"a": 1}\n' + jsonl_line(100_000) + "\n", "jsonl", name="in.jsonl")
    assert got == [{"a": 1}]
    assert str(err).startswith(f"in.jsonl:2: error: JSON value nested more than {MAX_NESTING} levels deep")


@pytest.mark.parametrize("fmt", ["jsonl", "xml"])
def test_every_depth_the_reader_accepts_is_written_and_read_back(fmt):
    deepest = {"x": nested(MAX_NESTING), "y": [{"k": nested(MAX_NESTING - 2)}], "z": list(range(1000))}
    (back,) = read_text(write_text([deepest], fmt), fmt)
    assert back == deepest
    (line,) = read_text(jsonl_line(MAX_NESTING) + "\n", "jsonl")
    assert read_text(write_text([line], fmt), fmt) == [line]


@pytest.mark.parametrize("fmt", [format_record_jsonl, format_record_xml])
@pytest.mark.parametrize("value", [nested(MAX_NESTING + 1), [nested(MAX_NESTING)], {"k": nested(MAX_NESTING)},
                                   nested(495)])
def test_a_value_nested_past_the_bound_is_not_written(fmt, value):
    with pytest.raises(SNetRuntimeError, match=f"cannot write field 'x': its value is nested more than "
                                               f"{MAX_NESTING} levels deep, the most a record file holds"):
        fmt({"x": value})


@pytest.mark.parametrize("fmt", ["jsonl", "xml"])
def test_a_pickled_value_nested_past_the_bound_is_neither_written_nor_read(fmt):
    deep = nested(MAX_NESTING + 1, datetime.date(2024, 1, 2))
    with pytest.raises(SNetRuntimeError, match="nested more than"):
        write_text([{"x": deep}], fmt, allow_pickle=True)
    # A pickle from elsewhere, read under --allow-pickle, is held to the same bound.
    import base64
    import pickle
    body = base64.b64encode(pickle.dumps(deep, protocol=4)).decode()
    text = ('{"x": {"$pickle": "' + body + '"}}\n') if fmt == "jsonl" else \
        f'<record type="data"><field label="x">(pickle){body}</field></record>\n'
    _, err = read_error(text, fmt, name="in", allow_pickle=True)
    assert f"field 'x': pickled value nested more than {MAX_NESTING} levels deep" in str(err)
    shallow = nested(3, datetime.date(2024, 1, 2))
    assert read_text(write_text([{"x": shallow}], fmt, allow_pickle=True), fmt, allow_pickle=True) == [{"x": shallow}]


def test_xml_json_values_are_held_to_the_same_bound():
    value = "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)
    _, err = read_error(f'<record type="data"><field label="x">(json){value}</field></record>\n', "xml", name="in")
    assert str(err) == (f"in:1: error: field 'x': (json) value nested more than {MAX_NESTING} levels deep, "
                        f"the most a record file holds")


@pytest.mark.parametrize("engine", ["front", "reference"])
def test_a_run_writes_every_record_it_reads_and_refuses_one_too_deep_on_input(tmp_path, engine):
    (tmp_path / "id.snet").write_text("net id connect [{x} -> {x}];\n")
    (tmp_path / "in.jsonl").write_text(jsonl_line(MAX_NESTING) + '\n{"x": 2}\n')
    run = subprocess.run([sys.executable, "-m", "snet", "run", "id.snet", "-i", "in.jsonl", "--engine", engine],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert sorted(map(json.dumps, map(json.loads, run.stdout.splitlines()))) == \
        sorted([json.dumps({"x": nested(MAX_NESTING)}), json.dumps({"x": 2})])
    (tmp_path / "deep.jsonl").write_text('{"x": 2}\n' + jsonl_line(495) + "\n")
    run = subprocess.run([sys.executable, "-m", "snet", "run", "id.snet", "-i", "deep.jsonl", "--engine", engine],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert run.stdout == '{"x":2}\n'
    assert run.stderr.strip() == (f"deep.jsonl:2: error: field 'x': value nested more than {MAX_NESTING} levels "
                                  f"deep, the most a record file holds")


@pytest.mark.parametrize("ending", ["\n", "\r\n", ""])
def test_a_json_error_at_the_end_of_a_record_is_reported_at_its_column_not_on_the_next_line(ending):
    _, err = read_error('{"a": 1}\n{"x": 1, "<t>": 1,' + ending, "jsonl", name="in.jsonl")
    assert str(err) == "in.jsonl:2: error: invalid JSON: Expecting property name enclosed in double quotes (column 19)"


@pytest.mark.parametrize("engine", ["front", "reference"])
def test_a_failing_record_with_a_tag_too_long_for_decimal_reaches_the_error_file(tmp_path, engine):
    # A box can make a tag of more digits than Python writes in decimal (a filter cannot: its products stop
    # at the tag bound); the error file still says which record failed, and the run goes on under skip.
    digits = "9" * sys.get_int_max_str_digits()
    (tmp_path / "bx.snet").write_text(
        "net bx { box g ((<a>) -> (<b>)); box f ((<b>) -> (<c>)); } connect g .. f;\n")
    (tmp_path / "bx.py").write_text(f"def g(a):\n    return {{'<b>': {digits} * {digits}}}\n\n"
                                    "def f(b):\n    raise RuntimeError('boom')\n")
    (tmp_path / "in.jsonl").write_text('{"<a>": 1, "x": [1, 2]}\n')
    run = subprocess.run([sys.executable, "-m", "snet", "run", "bx.snet", "-i", "in.jsonl", "--engine", engine,
                          "--on-error", "skip", "--errors", "dead.jsonl"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "handler raised" not in run.stderr
    (dead,) = map(json.loads, (tmp_path / "dead.jsonl").read_text().splitlines())
    assert dead["box"] == "f" and dead["exception"] == "RuntimeError"
    assert dead["record"] == {"<b>": {"$repr": f"an int of more than {len(digits)} digits"}, "x": [1, 2]}


def test_the_error_file_writes_a_value_json_cannot_hold_as_the_output_would(tmp_path):
    (tmp_path / "st.snet").write_text("net st { box mk ((a) -> (s)); box f ((s) -> (t)); } connect mk .. f;\n")
    (tmp_path / "st.py").write_text("def mk(a):\n    return {'s': {a}}\n\ndef f(s):\n    raise RuntimeError('boom')\n")
    (tmp_path / "in.jsonl").write_text('{"a": 1}\n')
    for flags, shown in [([], {"$repr": "{1}"}), (["--allow-pickle"], None)]:
        run = subprocess.run([sys.executable, "-m", "snet", "run", "st.snet", "-i", "in.jsonl", "--errors", "dead.jsonl",
                              "--engine", "reference", *flags], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        (dead,) = map(json.loads, (tmp_path / "dead.jsonl").read_text().splitlines())
        if shown is not None:
            assert dead["record"] == {"s": shown}
        else:  # fed again under the same flag, the record is the one that failed
            assert list(dead["record"]["s"]) == ["$pickle"]
            (back,) = read_text(json.dumps(dead["record"]) + "\n", "jsonl", allow_pickle=True)
            assert back == {"s": {1}}
