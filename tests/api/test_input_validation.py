"""Records handed to ``Network.run`` and ``Session.feed`` get the checks record files get.

A malformed record raises ``SNetRecordError`` naming its position in the
input (counting from 1) and the problem, in the words the readers use; the
outputs of the records before it come first.
"""

from __future__ import annotations

import io
import json
from types import MappingProxyType

import pytest

import snet
from snet.errors import SNetRecordError
from snet.recordio import RecordFileError, read_records
from snet.recordio.inputs import InputRecordError

ENGINES = ["reference", "front"]

BAD = [
    ({"a": 3, "<t>": 1.5}, "tag <t> must hold an integer, not 1.5"),
    ({"a": 3, "<t>": True}, "tag <t> must hold an integer, not True"),
    ({"a": 3, "<t>": "s"}, "tag <t> must hold an integer, not 's'"),
    ({"a": 3, "<t>": None}, "tag <t> must hold an integer, not None"),
    ({"a": 3, "<#b>": 2.0}, "binding tag <#b> must hold an integer, not 2.0"),
    ({"a": 3, "<#b>": False}, "binding tag <#b> must hold an integer, not False"),
    ({"a b": 3}, "invalid label 'a b': a label is NAME (field), <NAME> (tag) or <#NAME> (binding tag)"),
    ({"<t": 3}, "invalid label '<t': a label is NAME"),
    ({1: 3}, "invalid label 1: a label is NAME"),
    ([("a", 3)], "a record must be a mapping from labels to values, not [('a', 3)]"),
    (None, "a record must be a mapping from labels to values, not None"),
    ("a", "a record must be a mapping from labels to values, not 'a'"),
]
IDS = ["float-tag", "bool-tag", "str-tag", "none-tag", "float-btag", "bool-btag", "label-space", "label-open",
       "label-int", "pairs", "none", "str"]


def run_options(engine: str) -> dict:
    return {"engine": engine, "workers": 2} if engine == "front" else {"engine": engine}


@pytest.fixture(scope="module")
def identity():
    return snet.load("net n connect [];")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("bad, problem", BAD, ids=IDS)
def test_bad_record_raises_after_the_outputs_of_the_records_before_it(identity, engine, bad, problem):
    good = [{"a": 1, "<t>": 1}, {"a": 2, "<#b>": 5}]
    got = []
    with pytest.raises(SNetRecordError) as info:
        for out in identity.run(good + [bad, {"a": 4}], **run_options(engine)):
            got.append(out)
    assert sorted(got, key=lambda r: r["a"]) == good
    assert isinstance(info.value, InputRecordError)
    assert info.value.index == 3
    assert info.value.message.startswith(f"input record 3: {problem}"), info.value.message
    assert str(info.value).startswith(f"error: input record 3: {problem}")


@pytest.mark.parametrize("engine", ENGINES)
def test_float_and_bool_tags_never_come_out(identity, engine):
    for bad in ({"<t>": 1.0}, {"<t>": True}):
        with pytest.raises(SNetRecordError):
            list(identity.run([bad], **run_options(engine)))


@pytest.mark.parametrize("engine", ENGINES)
def test_bad_record_after_many_of_the_same_shape_is_caught(identity, engine):
    records = [{"a": i, "<t>": i} for i in range(500)] + [{"a": 500, "<t>": 500.0}]
    got = []
    with pytest.raises(SNetRecordError, match=r"^error: input record 501: tag <t> must hold an integer, not 500\.0$"):
        for out in identity.run(records, **run_options(engine)):
            got.append(out)
    assert len(got) == 500


@pytest.mark.parametrize("engine", ENGINES)
def test_well_formed_records_of_every_kind_pass_unchanged(identity, engine):
    records = [{"a": 1.5, "b": True, "c": None, "<t>": -3, "<#b>": 10 ** 30}, MappingProxyType({"x": "y"}), {}]
    assert list(identity.run(records, **run_options(engine))) == [dict(r) for r in records]


def test_a_run_over_something_not_iterable_fails_at_the_call(identity):
    with pytest.raises(TypeError):
        identity.run(5)


def test_session_feed_refuses_a_bad_record_at_once_and_goes_on(identity):
    with identity.session() as session:
        session.feed({"a": 1})
        with pytest.raises(SNetRecordError, match=r"^error: input record 2: tag <t> must hold an integer, not 1\.5$"):
            session.feed({"a": 2, "<t>": 1.5})
        with pytest.raises(SNetRecordError, match=r"input record 2: a record must be a mapping"):
            session.feed(["a"])
        session.feed({"a": 3})
        outputs = session.close()
    assert outputs == [{"a": 1}, {"a": 3}]
    assert session.fed == 2


@pytest.mark.parametrize("record, api_problem, file_problem", [
    ({"<t>": 1.5}, "tag <t> must hold an integer, not 1.5", "tag <t> must hold an integer, not 1.5"),
    ({"<#b>": True}, "binding tag <#b> must hold an integer, not True",
     "binding tag <#b> must hold an integer, not true"),
    ({"<t>": "2"}, "tag <t> must hold an integer, not '2'", 'tag <t> must hold an integer, not "2"'),
    ({"a b": 1}, "invalid label 'a b': a label is NAME (field), <NAME> (tag) or <#NAME> (binding tag), "
                 "NAME a letter or _ then letters, digits, _",
     'invalid label "a b": a label is NAME (field), <NAME> (tag) or <#NAME> (binding tag), '
     "NAME a letter or _ then letters, digits, _"),
], ids=["float-tag", "bool-btag", "str-tag", "label"])
def test_the_json_lines_reader_refuses_the_same_records_in_the_same_words(identity, record, api_problem,
                                                                           file_problem):
    # Each spells the value as its input does (Python or JSON); the words are the same.
    with pytest.raises(SNetRecordError) as info:
        list(identity.run([record], engine="reference"))
    assert info.value.problem == api_problem
    with pytest.raises(RecordFileError) as info:
        list(read_records(io.BytesIO(json.dumps(record).encode()), "jsonl", name="in.jsonl"))
    assert info.value.problem == file_problem
