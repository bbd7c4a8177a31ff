"""Record files: reading and writing records as JSON Lines or S-Net XML.

The surface ``snet run`` and the embedding API use (interfaces.md §3;
docs/records.md describes the formats as implemented):

* ``detect_format(path, explicit)`` -- ``"jsonl"`` or ``"xml"``;
* ``read_records(source, fmt, name=, allow_pickle=)`` -- a lazy iterator of
  records (dicts in S-Net spelling); never holds more than one chunk of the
  file, so files larger than memory and endless streams work;
* ``open_writer(dest, fmt, allow_pickle=)`` -- a ``RecordWriter`` (``write``, ``flush``,
  ``close``; also a context manager);
* ``format_record_jsonl(record, allow_pickle=)`` -- one record as a JSON Lines line.

A malformed input record raises ``RecordFileError`` (an ``SNetRecordError``,
exit status 1) when the reader reaches it, after every record before it has
been yielded; its message reads ``FILE:LINE: error: PROBLEM``.

Layout: ``jsonl`` and ``xml`` hold one format each; ``c4snet`` the C4SNet
textual values of XML fields; ``values`` the JSON-exactness and pickle rules
both formats share; ``streams`` the opening of paths, ``-`` and file objects.
"""

from __future__ import annotations

import os
from typing import Any, Final, Iterator, Protocol

from snet.errors import SNetUsageError
from snet.recordio.jsonl import JsonlWriter, NotJsonField, format_record_jsonl, read_jsonl
from snet.recordio.streams import RecordFileError, open_destination, open_source, source_name
from snet.recordio.xml import XmlBinaryWriter, XmlWriter, format_record_xml, read_xml

__all__ = [
    "FORMATS", "NotJsonField", "RecordFileError", "RecordWriter", "detect_format", "format_record_jsonl",
    "format_record_xml", "open_writer", "read_records",
]

FORMATS: Final = ("jsonl", "xml")
_EXTENSIONS: Final = {".jsonl": "jsonl", ".ndjson": "jsonl", ".xml": "xml"}


class RecordWriter(Protocol):
    """What ``open_writer`` returns.

    ``write`` formats the record and queues it (no flush per record);
    ``flush`` hands everything queued to the file and flushes it; ``close``
    flushes, writes the XML terminate record, and closes the file if the
    writer opened it.  ``close`` may be called more than once.
    """

    def write(self, record: dict) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def detect_format(path: str | None, explicit: str | None) -> str:
    """The record format for a file: `explicit` if given, else from the extension.

    Args:
        path: the file, or None / ``"-"`` for standard input or output.
        explicit: ``"jsonl"``, ``"xml"`` or None (the ``--format`` option).

    Returns:
        ``"jsonl"`` or ``"xml"``; standard input and output, and names with
        no extension at all (``/dev/null``, a named pipe), default to ``"jsonl"``.

    Raises:
        SNetUsageError: an unknown `explicit` format, or an extension that
            is neither of the formats' (``.txt``, ``.json``: exit 2).
    """
    if explicit is not None:
        if explicit not in FORMATS:
            raise SNetUsageError(f"unknown record format '{explicit}': use --format jsonl or --format xml")
        return explicit
    if path is None or path == "-":
        return "jsonl"
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if not ext:
        return "jsonl"
    fmt = _EXTENSIONS.get(ext)
    if fmt is None:
        raise SNetUsageError(
            f"cannot tell the record format of '{path}' from its extension "
            f"(.jsonl/.ndjson: JSON Lines, .xml: S-Net XML); give --format jsonl or --format xml")
    return fmt


def read_records(source: Any, fmt: str, *, name: str | None = None,
                 allow_pickle: bool = False) -> Iterator[dict]:
    """Records read lazily from a record file.

    A path is opened at once (so that a missing file is reported before the
    network starts); it is closed when the iterator is exhausted, closed, or
    collected.

    Args:
        source: a path, ``"-"`` for standard input, or a text or binary file object.
        fmt: ``"jsonl"`` or ``"xml"``.
        name: the file name messages use (default: the path, ``<stdin>``, or
            the file object's ``name``).
        allow_pickle: unpickle ``$pickle``/``(pickle)`` field values.  Only
            for trusted files: unpickling can run arbitrary code.

    Returns:
        An iterator of records, dicts keyed by labels in S-Net spelling.

    Raises:
        SNetUsageError: an unknown format or a path that cannot be opened.
        RecordFileError: while iterating, at a malformed record.
    """
    if fmt not in FORMATS:
        raise SNetUsageError(f"unknown record format '{fmt}': use jsonl or xml")
    shown = source_name(source, name)
    f, owned = open_source(source)
    reader = read_jsonl if fmt == "jsonl" else read_xml
    return _owning(reader(f, shown, allow_pickle=allow_pickle), f if owned else None)


def _owning(records: Iterator[dict], f: Any) -> Iterator[dict]:
    try:
        yield from records
    finally:
        if f is not None:
            f.close()


def open_writer(dest: Any, fmt: str, *, allow_pickle: bool = False, hint: Any = None,
                xml_mode: str = "textual") -> RecordWriter:
    """A writer of records to `dest` in format `fmt`.

    Args:
        dest: a path (created or truncated, UTF-8), ``"-"`` for standard
            output, or a file object (closed by the caller, not the writer).
        fmt: ``"jsonl"`` or ``"xml"``.
        allow_pickle: JSON Lines: a field value JSON cannot hold (after
            tuples and NumPy values became lists and numbers) is written as
            ``{"$pickle": ...}``; without this it is a ``NotJsonField``
            error raised by ``write`` (S-Net XML always pickles such values).
        hint: ``hint(label) -> str`` completes that error's message (the box
            that made the field, say).
        xml_mode: ``"textual"`` or ``"binary"``: how XML writes field values
            (``binary``: the C4SNet binary form where a value has one).

    Raises:
        SNetUsageError: an unknown format or a path that cannot be opened.
    """
    if fmt not in FORMATS:
        raise SNetUsageError(f"unknown record format '{fmt}': use jsonl or xml")
    if xml_mode not in ("textual", "binary"):
        raise SNetUsageError(f"unknown XML mode '{xml_mode}': use textual or binary")
    f, owned = open_destination(dest)
    if fmt == "jsonl":
        return JsonlWriter(f, owned, allow_pickle, hint)
    return XmlBinaryWriter(f, owned) if xml_mode == "binary" else XmlWriter(f, owned)
