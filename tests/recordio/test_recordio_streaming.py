"""Readers stream: they yield records before the rest of the input exists or is read."""

from __future__ import annotations

import io
import itertools

import pytest

from snet.recordio import read_records


class EndlessFile(io.RawIOBase):
    """A binary file whose content a generator produces forever; counts the bytes handed out."""

    def __init__(self, pieces):
        self._pieces = iter(pieces)
        self._buffer = b""
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        while not self._buffer:
            self._buffer = next(self._pieces, b"")
            if not self._buffer:
                return 0
        n = min(len(target), len(self._buffer))
        target[:n] = self._buffer[:n]
        self._buffer = self._buffer[n:]
        self.bytes_read += n
        return n


class EndlessText(io.TextIOBase):
    """The text counterpart, read with ``read(n)``."""

    def __init__(self, pieces):
        self._pieces = iter(pieces)
        self._buffer = ""
        self.chars_read = 0

    def read(self, size=-1):
        assert size is not None and size > 0, "a streaming reader never asks for everything"
        while len(self._buffer) < size:
            piece = next(self._pieces, "")
            if not piece:
                break
            self._buffer += piece
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        self.chars_read += len(out)
        return out

    def readline(self, size=-1):
        out = []
        while True:
            ch = self.read(1)
            out.append(ch)
            if ch in ("", "\n"):
                return "".join(out)

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line


def jsonl_lines():
    for i in itertools.count():
        yield f'{{"i": {i}, "<t>": {i}}}\n'.encode()


def xml_records():
    yield b'<?xml version="1.0"?>\n'
    for i in itertools.count():
        yield f'<?xml version="1.0"?><record type="data"><field label="i">(int){i}</field></record>\n'.encode()


@pytest.mark.parametrize("fmt, pieces", [("jsonl", jsonl_lines), ("xml", xml_records)])
def test_first_records_arrive_from_an_endless_binary_stream(fmt, pieces):
    source = EndlessFile(pieces())
    records = read_records(io.BufferedReader(source), fmt)
    first = list(itertools.islice(records, 3))
    assert [r["i"] for r in first] == [0, 1, 2]
    assert source.bytes_read <= 2 * 65536  # a chunk or two, not "everything"
    more = list(itertools.islice(records, 10000))
    assert more[-1]["i"] == 10002


@pytest.mark.parametrize("fmt, pieces", [("jsonl", jsonl_lines), ("xml", xml_records)])
def test_first_records_arrive_from_an_endless_text_stream(fmt, pieces):
    source = EndlessText(p.decode() for p in pieces())
    records = read_records(source, fmt)
    assert next(records)["i"] == 0
    assert next(records)["i"] == 1
    assert source.chars_read <= 2 * 65536


def test_xml_record_is_yielded_as_soon_as_a_pipe_delivers_it():
    """With ``read1``, a record is parsed from what is available, without waiting for a full chunk."""
    import os
    import threading
    r, w = os.pipe()
    reader = os.fdopen(r, "rb")
    writer = os.fdopen(w, "wb", buffering=0)
    writer.write(b'<record type="data"><tag label="t">1</tag></record>\n')
    records = read_records(reader, "xml")
    got = []
    t = threading.Thread(target=lambda: got.append(next(records)))
    t.start()
    t.join(timeout=5)
    try:
        assert got == [{"<t>": 1}], "the reader waited for more input than one record"
    finally:
        writer.close()
        t.join(timeout=5)
        reader.close()


def test_jsonl_record_is_yielded_as_soon_as_a_pipe_delivers_its_line():
    import os
    import threading
    r, w = os.pipe()
    reader = os.fdopen(r, "rb")
    writer = os.fdopen(w, "wb", buffering=0)
    writer.write(b'{"a": 1}\n')
    records = read_records(reader, "jsonl")
    got = []
    t = threading.Thread(target=lambda: got.append(next(records)))
    t.start()
    t.join(timeout=5)
    try:
        assert got == [{"a": 1}]
    finally:
        writer.close()
        t.join(timeout=5)
        reader.close()


def test_a_large_xml_file_is_read_in_bounded_memory(tmp_path):
    import tracemalloc
    path = tmp_path / "big.xml"
    with open(path, "w") as f:
        f.write('<?xml version="1.0"?>\n')
        text = ",".join("abcdefghij" * 20)
        line = '<record type="data"><field label="v">(char[200])' + text + '</field><tag label="t">{}</tag></record>\n'
        for i in range(12000):
            f.write(line.format(i))
    size = path.stat().st_size
    tracemalloc.start()
    try:
        count = 0
        for record in read_records(str(path), "xml"):
            count += 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 12000
    assert size > 5_000_000
    assert peak < size / 4, f"peak {peak} bytes for a {size}-byte file"
