"""The input and output files of a run that takes checkpoints: positions, digests, resuming.

Input (:class:`JsonlInput`, :class:`XmlInput`): the position of a snapshot
of a JSON Lines file is the number of records handed to the engine, the
byte offset just after the last of them and the SHA-256 of the file up to
there.  Resuming checks that
digest (a changed prefix is refused) and reads on from the offset, so
records appended to the file after a run are read by the next one.  An
XML file has no such boundary to resume at: the digest covers the whole
file, which must not change, and resuming reads past the records already
handed out.

Output (:class:`CommittedOutput`): the writer of ``snet run`` behind a lock,
counting what it wrote; ``commit`` flushes and ``fsync``-s the file and
returns its length, with a digest of its last bytes.  Resuming cuts the
file back to the committed length and writes on (an XML file keeps the
prologue it has).  The error file of ``--errors`` is committed and cut
back the same way (:mod:`snet.deadletters`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any, Iterator

from snet.errors import SNetUsageError
from snet.checkpoint.store import file_digest

TAIL = 4096  # bytes before the committed output position whose digest the manifest keeps


def _refuse(what: str) -> SNetUsageError:
    return SNetUsageError(f"{what} since the last checkpoint; run with --checkpoint-reset to start afresh")


class JsonlInput:
    """A JSON Lines input file read from the committed position (see the module's docstring).

    The reader takes lines from the file itself (no wrapper costs anything
    per record); a snapshot asks the file where it is (the end of the last
    record's line: the reader reads a line only when asked for the next
    record) and hashes the bytes read since the previous snapshot, counting
    their lines for the messages of a resumed run.
    """

    def __init__(self, path: str, committed: dict | None, allow_pickle: bool):
        from snet.recordio.jsonl import read_jsonl

        self.path = path
        self.taken = committed["records"] if committed else 0
        self.f = open(path, "rb")
        self.hasher = hashlib.sha256()
        self.offset = 0  # the bytes hashed so far
        self.line = 0  # the lines among them
        if committed:
            prefix = self.f.read(committed["offset"])
            self.hasher.update(prefix)
            if len(prefix) < committed["offset"] or self.hasher.hexdigest() != committed["sha256"]:
                self.f.close()
                raise _refuse(f"the input file {path} changed before the position the run had read")
            self.offset, self.line = committed["offset"], committed["line"]
        self.records = read_jsonl(self.f, path, allow_pickle=allow_pickle, first_line=self.line + 1)

    def position(self) -> dict:
        offset = self.f.tell()
        read = os.pread(self.f.fileno(), offset - self.offset, self.offset)
        self.hasher.update(read)
        self.line += read.count(b"\n")
        self.offset = offset
        return {"format": "jsonl", "records": self.taken, "offset": offset, "line": self.line,
                "sha256": self.hasher.hexdigest()}

    def close(self) -> None:
        self.f.close()


class XmlInput:
    """An XML input file: resumed by reading past the records already handed out; it must not change."""

    def __init__(self, path: str, committed: dict | None, allow_pickle: bool):
        from snet.recordio import read_records

        self.path = path
        self.digest = file_digest(path)
        if committed and committed["sha256"] != self.digest:
            raise _refuse(f"the input file {path} changed (an XML input is resumed by record count, "
                          f"so it must stay as it was)")
        self.taken = committed["records"] if committed else 0
        self.records = read_records(path, "xml", allow_pickle=allow_pickle)
        for _ in range(self.taken):
            if next(self.records, None) is None:
                raise _refuse(f"the input file {path} has fewer records than the run had read")

    def position(self) -> dict:
        return {"format": "xml", "records": self.taken, "sha256": self.digest}

    def close(self) -> None:
        close = getattr(self.records, "close", None)
        if close is not None:
            close()


def open_input(path: str, fmt: str, committed: dict | None, allow_pickle: bool) -> Any:
    if committed is not None and committed.get("format") != fmt:
        raise _refuse(f"the input format changed (the checkpoint read {committed.get('format')})")
    return (JsonlInput if fmt == "jsonl" else XmlInput)(path, committed, allow_pickle)


class CommittedOutput:
    """The output writer behind a lock, committed at each snapshot (see the module's docstring).

    ``written``: records handed to the writer since the run (or the resumed
    run) started, compared with the engine's count of outputs.
    """

    def __init__(self, f: Any, writer: Any):
        self.f = f
        self.writer = writer
        self.lock = threading.Lock()
        self.written = 0
        self.total = 0  # records in the file (those before the resumed position too)

    def write(self, record: dict) -> None:
        with self.lock:
            self.writer.write(record)
            self.written += 1
            self.total += 1

    def flush(self) -> None:
        with self.lock:
            self.writer.flush()

    def close(self) -> None:
        with self.lock:
            try:
                self.writer.close()
            finally:
                self.f.close()

    def commit(self) -> dict:
        """Flush and fsync; the committed position (the caller holds ``lock``)."""
        self.writer.flush()
        return commit_file(self.f, self.total)


def commit_file(f: Any, records: int) -> dict:
    """Flush and ``fsync`` the text file ``f`` holding ``records`` records: its committed position."""
    f.flush()
    fd = f.fileno()
    os.fsync(fd)
    size = os.fstat(fd).st_size
    return {"bytes": size, "records": records, "tail_sha256": _tail_digest(fd, size)}


def _tail_digest(fd: int, size: int) -> str:
    start = max(0, size - TAIL)
    return hashlib.sha256(os.pread(fd, size - start, start)).hexdigest()


def open_output(path: str, committed: dict | None) -> Any:
    """The output file, new or cut back to the committed position (checked against its digest)."""
    if committed is None:
        try:
            return open(path, "w+", encoding="utf-8", newline="\n")
        except OSError as e:
            raise SNetUsageError(f"cannot open output file {path}: {e.strerror or e}") from None
    return open_committed(path, committed, "output file")


def open_committed(path: str, committed: dict, what: str) -> Any:
    """The text file ``path`` cut back to its committed position (checked against its digest), for appending."""
    try:
        f = open(path, "r+", encoding="utf-8", newline="\n")
    except FileNotFoundError:
        raise _refuse(f"the {what} {path} is gone") from None
    except OSError as e:
        raise SNetUsageError(f"cannot open {what} {path}: {e.strerror or e}") from None
    size = os.fstat(f.fileno()).st_size
    if size < committed["bytes"] or _tail_digest(f.fileno(), committed["bytes"]) != committed["tail_sha256"]:
        f.close()
        raise _refuse(f"the {what} {path} changed before the committed position")
    f.truncate(committed["bytes"])
    f.seek(0, os.SEEK_END)
    return f
