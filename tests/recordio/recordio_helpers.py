"""Helpers for the record-file tests."""

from __future__ import annotations

import io

import pytest

from snet.recordio import RecordFileError, open_writer, read_records


def read_text(text: str | bytes, fmt: str, name: str = "input", **options) -> list[dict]:
    """Every record of `text` read as a file named `name`."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return list(read_records(io.BytesIO(data), fmt, name=name, **options))


def write_text(records, fmt: str, allow_pickle: bool = False) -> str:
    out = io.StringIO()
    writer = open_writer(out, fmt, allow_pickle=allow_pickle)
    for record in records:
        writer.write(record)
    writer.close()
    return out.getvalue()


def read_error(text: str | bytes, fmt: str, name: str = "input", **options) -> tuple[list[dict], RecordFileError]:
    """(records yielded before the error, the error) for a malformed `text`."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    got = []
    with pytest.raises(RecordFileError) as info:
        for record in read_records(io.BytesIO(data), fmt, name=name, **options):
            got.append(record)
    return got, info.value
