"""``snet run --errors FILE``: the error records of the records that failed and were skipped.

With ``--checkpoint`` the file is committed with each snapshot as the
output is (its length, record count and the digest of its last bytes go
into the manifest), and a resumed run cuts it back to that position: each
failure is written exactly once, however often the run was killed.  A
failure is written while the failing record is still inside the network
(the error policy calls :meth:`DeadLetters.write` from the step that
failed), so a snapshot, taken when no record is, holds every failure of the
records read before it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from snet.errors import SNetUsageError


class DeadLetters:
    """``--errors FILE``: one JSON Lines error record per failing record, flushed as it comes.

    The file is opened when the run starts (a bad path is an error before
    any record is read) and written line by line, so a run that dies later
    leaves every failure it had reported.
    """

    def __init__(self, path: str, allow_pickle: bool = False, committed: dict | None = None):
        self._allow_pickle = allow_pickle  # values JSON cannot hold as {"$pickle": ...}, as in the output
        if committed is not None:  # a resumed run: cut back to the last snapshot's position, then appended to
            from snet.checkpoint.files import open_committed

            self._f = open_committed(path, committed, "error file")
        else:
            try:
                self._f = open(path, "w+", encoding="utf-8")  # read too: a snapshot digests its last bytes
            except OSError as e:
                raise SNetUsageError(f"cannot open the error file {path}: {e.strerror or e}") from None
        self.path = path
        self.count = 0  # written by this run
        self.total = committed["records"] if committed is not None else 0  # in the file

    def write(self, error_record: dict) -> None:
        from snet.recordio.jsonl import format_record_jsonl

        try:  # the record as an input file would hold it, so that it can be fed again
            error_record = {**error_record, "record": json.loads(
                format_record_jsonl(error_record["record"], self._allow_pickle))}
        except Exception:
            pass  # a value the record files cannot hold: shown by its repr below
        try:
            line = json.dumps(error_record, ensure_ascii=False, default=_json_fallback)
        except (ValueError, RecursionError):  # an int too long for decimal (a tag a filter computed), or too deep
            record = {label: value if _dumps_or_none(value) is not None else _json_fallback(value)
                      for label, value in error_record["record"].items()}
            line = json.dumps({**error_record, "record": record}, ensure_ascii=False, default=_json_fallback)
        self._f.write(line + "\n")
        self._f.flush()
        self.count += 1
        self.total += 1

    def commit(self) -> dict:
        """Flush and ``fsync`` the file: its committed position, for a snapshot (nothing is being written then)."""
        from snet.checkpoint.files import commit_file

        return commit_file(self._f, self.total)

    def close(self) -> None:
        self._f.close()


def _json_fallback(value: Any) -> Any:
    """A value of a failing record that JSON cannot hold: its ``repr`` (the record is for a person to read)."""
    try:
        return {"$repr": repr(value)}
    except ValueError:  # an int of more digits than Python writes in decimal, or a value holding one
        digits = f"an int of more than {sys.get_int_max_str_digits()} digits"
        return {"$repr": digits if type(value) is int else f"a {type(value).__name__} holding {digits}"}
    except RecursionError:
        return {"$repr": f"a {type(value).__name__} nested too deeply to show"}


def _dumps_or_none(value: Any) -> str | None:
    try:
        return json.dumps(value, default=_json_fallback)
    except (ValueError, RecursionError):
        return None
