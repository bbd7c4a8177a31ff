"""Opening record sources and destinations, and the error both readers raise.

A source or destination is a path, ``"-"`` (standard input/output) or an
open file object, text or binary.  Readers want bytes where they can get them
(the JSON Lines reader decodes line by line, so that a bad byte is reported on
its line; the XML reader honours the encoding its declaration names), so
paths and standard input are opened in binary mode; a text file object given
by a caller is read as text.

Ownership rule: a reader or writer closes a file only if it opened it.
"""

from __future__ import annotations

import io
import os
import sys
from typing import IO, Any

from snet.errors import SNetRecordError, SNetUsageError

STDIN_NAME = "<stdin>"
STDOUT_NAME = "<stdout>"


class RecordFileError(SNetRecordError):
    """A malformed record in a record file, rendered ``FILE:LINE: error: MESSAGE``.

    Attributes:
        file: the name the file is reported under (``<stdin>`` for standard input).
        line: the 1-based line where the record or the problem is.
        problem: the message without the position.
    """

    def __init__(self, file: str, line: int, problem: str):
        self.file = file
        self.line = line
        self.problem = problem
        super().__init__(problem)

    def render(self) -> str:
        return f"{self.file}:{self.line}: error: {self.problem}"

    def __str__(self) -> str:
        return self.render()

    def __reduce__(self):  # keep the three fields across pickling (worker processes)
        return (type(self), (self.file, self.line, self.problem))


def source_name(source: Any, name: str | None) -> str:
    """The name messages use for `source`."""
    if name is not None:
        return name
    if source is None or source == "-":
        return STDIN_NAME
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    given = getattr(source, "name", None)
    return given if isinstance(given, str) else "<input>"


def open_source(source: Any) -> tuple[IO, bool]:
    """(file object, whether we opened it) for a path, ``"-"`` or a file object.

    Raises:
        SNetUsageError: a path that cannot be opened (exit 2).
    """
    if source is None or source == "-":
        stdin = sys.stdin
        return getattr(stdin, "buffer", stdin), False
    if isinstance(source, (str, os.PathLike)):
        try:
            return open(source, "rb"), True
        except OSError as exc:
            raise SNetUsageError(f"cannot open input file {os.fspath(source)}: {exc.strerror or exc}") from None
    if not hasattr(source, "read"):
        raise TypeError(f"a record source is a path, '-' or a file object, not {type(source).__name__}")
    return source, False


def is_binary_file(f: Any) -> bool:
    """True if `f` takes and gives bytes."""
    if isinstance(f, io.TextIOBase):
        return False
    if isinstance(f, (io.RawIOBase, io.BufferedIOBase)):
        return True
    return "b" in getattr(f, "mode", "")


class Utf8Sink:
    """A text-file face on a byte stream we do not own: ``write(str)`` encodes to UTF-8.

    Used instead of an ``io.TextIOWrapper`` because a wrapper closes the
    buffer under it when it is collected, and standard output must outlive
    a writer that was never closed.
    """

    encoding = "utf-8"

    def __init__(self, buffer: IO[bytes]):
        self._buffer = buffer

    def write(self, text: str) -> int:
        self._buffer.write(text.encode("utf-8"))  # lone surrogates raise UnicodeEncodeError: see the writers
        return len(text)

    def flush(self) -> None:
        self._buffer.flush()


def open_destination(dest: Any) -> tuple[Any, bool]:
    """(text file object, whether we opened it) for a path, ``"-"`` or a file object.

    Paths are opened as UTF-8.  Standard output and binary file objects are
    written as UTF-8 through a ``Utf8Sink``, so the output does not depend on
    the locale.

    Raises:
        SNetUsageError: a path that cannot be opened for writing (exit 2).
    """
    if dest is None or dest == "-":
        stdout = sys.stdout
        buffer = getattr(stdout, "buffer", None)
        if buffer is None:  # replaced by a caller (a test harness, an IDE): use as is
            return stdout, False
        stdout.flush()  # whatever was printed before comes first
        return Utf8Sink(buffer), False
    if isinstance(dest, (str, os.PathLike)):
        try:
            return open(dest, "w", encoding="utf-8", newline="\n"), True
        except OSError as exc:
            raise SNetUsageError(f"cannot open output file {os.fspath(dest)}: {exc.strerror or exc}") from None
    if not hasattr(dest, "write"):
        raise TypeError(f"a record destination is a path, '-' or a file object, not {type(dest).__name__}")
    if is_binary_file(dest):
        return Utf8Sink(dest), False
    return dest, False


def read_chunk_function(f: Any, size: int):
    """A function returning up to `size` units without waiting for more than is available.

    ``read1`` returns what a pipe has rather than blocking until `size`
    bytes arrived, so that records typed or streamed into standard input
    reach the network as they come.
    """
    read1 = getattr(f, "read1", None)
    if read1 is not None:
        return lambda: read1(size)
    read = f.read
    return lambda: read(size)


class BatchWriter:
    """The writer protocol over a text file: format per record, write in batches.

    Subclasses set ``format_record`` (record -> text with newline),
    ``PROLOGUE`` and ``EPILOGUE``.  ``write`` only formats and queues: a
    record costs one list append besides its formatting, and the file sees
    one ``write`` per ``BATCH_RECORDS`` records.  Nothing is flushed until
    ``flush`` or ``close``.
    """

    BATCH_RECORDS = 256
    PROLOGUE = ""
    EPILOGUE = ""

    def __init__(self, f: IO, owned: bool):
        self._f = f
        self._owned = owned  # close _f at the end
        # Invariant: _pending holds text not yet handed to _f, in order.
        self._pending: list[str] = [self.PROLOGUE] if self.PROLOGUE else []
        self._closed = False

    def format_record(self, record: dict) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def write(self, record: dict) -> None:
        """Queue one record (formatting errors are raised here, for this record)."""
        if self._closed:
            raise ValueError("write to a closed record writer")
        pending = self._pending
        pending.append(self.format_record(record))
        if len(pending) >= self.BATCH_RECORDS:
            self._drain()

    def continue_file(self) -> None:
        """The file already holds what this writer wrote before (a resumed run): no prologue again."""
        if self.PROLOGUE and self._pending and self._pending[0] == self.PROLOGUE:
            del self._pending[0]

    def _drain(self) -> None:
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending = []
        try:
            self._f.write(text)
        except UnicodeEncodeError:
            self._write_unencodable(text)

    def _write_unencodable(self, text: str) -> None:
        """Write `text` to a file whose encoding cannot hold some of it."""
        raise NotImplementedError

    def flush(self) -> None:
        """Hand every queued record to the file and flush it."""
        self._drain()
        self._f.flush()

    def close(self) -> None:
        """Flush, end the output, and close the file if we opened it; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.EPILOGUE:
            self._pending.append(self.EPILOGUE)
        try:
            self.flush()
        finally:
            if self._owned:
                self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
