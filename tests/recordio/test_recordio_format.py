"""detect_format: explicit format, extensions, standard streams."""

from __future__ import annotations

import pytest

from snet.errors import EXIT_STARTUP, SNetUsageError
from snet.recordio import detect_format, open_writer, read_records


@pytest.mark.parametrize("path, fmt", [
    ("in.jsonl", "jsonl"), ("in.ndjson", "jsonl"), ("in.xml", "xml"), ("dir.d/IN.XML", "xml"),
    ("a/b/c.JSONL", "jsonl"), (None, "jsonl"), ("-", "jsonl"),
    ("/dev/null", "jsonl"), ("/dev/stdout", "jsonl"), ("records", "jsonl"), ("dir.d/records", "jsonl"),
])
def test_format_follows_extension_and_standard_streams_default_to_jsonl(path, fmt):
    assert detect_format(path, None) == fmt


@pytest.mark.parametrize("path", ["in.txt", "in", "-", None, "x.jsonl"])
def test_explicit_format_wins_over_extension(path):
    assert detect_format(path, "xml") == "xml"
    assert detect_format(path, "jsonl") == "jsonl"


@pytest.mark.parametrize("path", ["records.csv", "records.json", "records.txt"])
def test_unknown_extension_is_a_usage_error_that_names_the_option(path):
    with pytest.raises(SNetUsageError) as info:
        detect_format(path, None)
    assert info.value.exit_status == EXIT_STARTUP
    assert path in str(info.value)
    assert "--format jsonl" in str(info.value) and "--format xml" in str(info.value)


def test_unknown_explicit_format_is_a_usage_error():
    with pytest.raises(SNetUsageError, match="--format"):
        detect_format("a.jsonl", "csv")


def test_unknown_format_is_refused_by_reader_and_writer(tmp_path):
    with pytest.raises(SNetUsageError):
        read_records(str(tmp_path / "a.jsonl"), "csv")
    with pytest.raises(SNetUsageError):
        open_writer(str(tmp_path / "a.jsonl"), "yaml")


def test_missing_input_file_is_reported_when_reading_starts_not_later(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(SNetUsageError, match="nope.jsonl") as info:
        read_records(str(missing), "jsonl")
    assert info.value.exit_status == EXIT_STARTUP
