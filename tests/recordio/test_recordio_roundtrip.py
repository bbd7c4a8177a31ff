"""Property tests: what a writer writes, its reader reads back exactly."""

from __future__ import annotations

import io
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quickloop import examples
from recordio_helpers import read_text, write_text

from snet.recordio import open_writer, read_records

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
TAG_VALUES = st.integers() | st.integers(min_value=-(2 ** 400), max_value=2 ** 400)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
# Every code point, including XML's specials, commas, line breaks, control
# characters and lone surrogates.
ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=12) | st.text(",<>&\"' \t\r\n\x00\x01é€😀", max_size=12)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | TAG_VALUES | FLOATS | ANY_TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(ANY_TEXT, children, max_size=4),
    max_leaves=12)
ODD_VALUES = (st.tuples(st.integers(), ANY_TEXT) | st.binary(max_size=8) | st.frozensets(st.integers(), max_size=3)
              | st.sampled_from([math.nan, math.inf, -math.inf, -0.0]) | st.lists(st.just(math.nan), max_size=2)
              | st.just({"$pickle": "a dict that looks like a pickle"}))
C4SNET_VALUES = (TAG_VALUES | st.floats() | ANY_TEXT | st.lists(TAG_VALUES, max_size=5) | st.lists(st.floats(), max_size=5))


def records_of(values):
    fields = st.dictionaries(NAMES, values, max_size=4)
    tags = st.dictionaries(NAMES.map(lambda n: f"<{n}>"), TAG_VALUES, max_size=3)
    btags = st.dictionaries(NAMES.map(lambda n: f"<#{n}>"), TAG_VALUES, max_size=2)
    return st.tuples(fields, tags, btags).map(lambda parts: {**parts[0], **parts[1], **parts[2]})


def same(a, b) -> bool:
    """Equal with the same types all the way down, NaN equal to NaN, -0.0 unlike 0.0."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(map(same, a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def through_file(records, fmt, **options):
    """Write to a strict UTF-8 file (as `snet run -o` does) and read back."""
    raw = io.BytesIO()
    f = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
    writer = open_writer(f, fmt, allow_pickle=options.get("allow_pickle", False))
    for record in records:
        writer.write(record)
    writer.close()
    f.flush()
    return list(read_records(io.BytesIO(raw.getvalue()), fmt, **options))


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records_of(JSON_VALUES), max_size=5))
def test_jsonl_round_trips_json_values_without_pickle(records):
    text = write_text(records, "jsonl")
    assert "$pickle" not in text or any("$pickle" in repr(r) for r in records)
    back = through_file(records, "jsonl")
    assert len(back) == len(records) and all(map(same, records, back))


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records_of(JSON_VALUES | ODD_VALUES), max_size=4))
def test_jsonl_round_trips_any_picklable_value_with_pickle_allowed(records):
    back = through_file(records, "jsonl", allow_pickle=True)
    assert len(back) == len(records) and all(map(same, map(tuples_as_lists, records), back))


def tuples_as_lists(value):
    """What JSON Lines writes for `value`: tuples are lists (JSON has no tuple), all else as it was."""
    if type(value) in (tuple, list):
        return [tuples_as_lists(v) for v in value]
    if type(value) is dict:
        return {k: tuples_as_lists(v) for k, v in value.items()}
    return value


@pytest.mark.slow
@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records_of(C4SNET_VALUES), max_size=5))
def test_xml_round_trips_c4snet_values_without_pickle(records):
    back = through_file(records, "xml")
    assert len(back) == len(records) and all(map(same, records, back))


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records_of(C4SNET_VALUES | JSON_VALUES | ODD_VALUES), max_size=4))
def test_xml_round_trips_any_picklable_value_with_pickle_allowed(records):
    back = through_file(records, "xml", allow_pickle=True)
    assert len(back) == len(records) and all(map(same, records, back))


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records_of(C4SNET_VALUES), max_size=5))
def test_xml_values_of_c4snet_types_use_the_c4snet_form(records):
    text = write_text(records, "xml")
    assert "(pickle)" not in text
    for record in records:
        for value in record.values():
            if isinstance(value, str) and value.isprintable() and not any(0xD800 <= ord(c) <= 0xDFFF for c in value):
                assert f"(char[{len(value)}])" in text


class ChunkedReader(io.RawIOBase):
    """A byte stream handing out data in the given chunk sizes (then 1 byte at a time)."""

    def __init__(self, data: bytes, sizes: list[int]):
        self._data = data
        self._pos = 0
        self._sizes = iter(sizes)

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        size = min(n, next(self._sizes, 1))
        out = self._data[self._pos:self._pos + size]
        self._pos += len(out)
        return out

    read = read1


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records_of(C4SNET_VALUES | JSON_VALUES), max_size=4),
       st.lists(st.integers(min_value=1, max_value=40), max_size=200),
       st.sampled_from(["", "<!-- c <?xml version='1.0'?> -->\n", "<?xml version=\"1.0\"?>", "<?pi x?>\r\n"]))
def test_xml_reading_does_not_depend_on_how_the_input_is_chunked(records, sizes, between):
    text = write_text(records, "xml").replace("\n<record", "\n" + between + "<?xml version=\"1.0\" ?>\n<record")
    whole = read_text(text, "xml")
    assert all(map(same, records, whole)) and len(whole) == len(records)
    chunked = list(read_records(ChunkedReader(text.encode("utf-8"), sizes), "xml"))
    assert len(chunked) == len(records) and all(map(same, records, chunked))


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records_of(JSON_VALUES), max_size=4))
def test_judges_of_both_formats_agree(records):
    """A record written as XML and as JSON Lines reads back the same from both."""
    from_xml = through_file(records, "xml")
    from_jsonl = through_file(records, "jsonl")
    assert all(map(same, from_xml, from_jsonl))
