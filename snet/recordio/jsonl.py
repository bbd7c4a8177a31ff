"""JSON Lines record files: one JSON object per line (interfaces.md §3).

Reading.  Each line is parsed with the C JSON decoder, then checked: the
value is an object, every key is a label in S-Net spelling, tags and binding
tags hold integers (``true`` and ``2.0`` are refused: a bool or a float in a
tag is a bug in whatever wrote the file, not a number to coerce), and a field
whose whole value is ``{"$pickle": "<base64>"}`` is unpickled if the caller
allowed it.  The rules and their messages are ``snet.records.record_problem``,
which the embedding API applies to records handed in by Python code too.
The checks cost one set lookup per key on the common path: labels already
seen are remembered in two sets, so ``record_problem`` runs once per
distinct label (and for a tag holding something else than an int), not once
per record.

Every problem with a line is a ``RecordFileError`` on that line, also those
Python's decoder reports other than as syntax errors: an integer of more
digits than ``int()`` converts and a value nested deeper than the decoder's
recursion allows.  A field value nested more than ``values.MAX_NESTING``
levels is refused too (the writers could not write it back): a line with
more opening brackets than that (``str.count``) has its values walked.

Lines are read as bytes and decoded one at a time so that an invalid UTF-8
byte is reported on its own line.  Blank lines are skipped; Python's decoder
rules apply otherwise (``NaN``/``Infinity`` are accepted, and of a key given
twice the last one wins).

Writing.  A record is written with one call of a shared compact encoder when
every field value is JSON-exact (``values.is_json_exact``), which is checked
per field with a type test for the usual scalars.  Otherwise each field goes
through ``values.json_value``: tuples become lists, NumPy scalars and arrays
numbers and lists.  A value JSON cannot hold even so is a run-time error
(:class:`NotJsonField`) naming the output record's number, the field, the
type and, through the writer's ``hint``, the box that made it, unless the
writer was given ``allow_pickle``: then it is written as
``{"$pickle": ...}`` (interfaces.md §3), which only a reader that allows
pickles reads back.  A value nested deeper than a record file holds
(``values.MAX_NESTING``) is an error too, found by counting the brackets of
the line first, so that no file is written that the reader refuses.  Lines
are collected and handed to the file in batches (``streams.BatchWriter``);
nothing is flushed per record.
"""

from __future__ import annotations

import json
from typing import IO, Any, Final, Iterator

from snet.errors import SNetRuntimeError
from snet.records import is_valid_label, record_problem
from snet.recordio.streams import BatchWriter, RecordFileError
from snet.recordio.values import (
    ALLOW_PICKLE_HINT, MAX_NESTING, NotJsonValue, ValueFormError, is_json_exact, json_value,
    long_integer_problem, long_tag_error, nesting_problem, nests_too_deeply, pickle_text, too_deep_to_write,
    unpickle_text)

PICKLE_KEY: Final = "$pickle"
_BOM: Final = "\ufeff"

_decode = json.JSONDecoder().decode
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_encode = _ENCODER.encode
_ascii_encode = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode

_JSON_TYPE_NAMES: Final = {list: "an array", str: "a string", int: "a number", float: "a number",
                           bool: "a boolean", type(None): "null"}


def _json_text(value: Any, limit: int = 40) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------
# Reading

def read_jsonl(f: IO, name: str, *, allow_pickle: bool = False, first_line: int = 1) -> Iterator[dict]:
    """Records from the JSON Lines file object `f`, one per non-blank line.

    ``first_line``: the line number of `f`'s first line, for the messages
    (a file read on from a checkpoint's position).

    Raises:
        RecordFileError: at the first malformed line, after the records before it.
    """
    field_labels: set[str] = set()  # labels known valid, split by kind
    tag_labels: set[str] = set()
    binary = None
    for lineno, line in enumerate(f, first_line):
        if binary is None:
            binary = isinstance(line, bytes)
        if binary:
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RecordFileError(name, lineno, _utf8_problem(line, exc)) from None
        if lineno == 1 and line.startswith(_BOM):
            line = line[1:]
        try:
            record = _decode(line)
        except ValueError as exc:
            if not line.strip():
                continue
            raise RecordFileError(name, lineno, _syntax_problem(line, exc)) from None
        except RecursionError:  # far past MAX_NESTING: the decoder stops at the recursion limit
            raise RecordFileError(name, lineno, f"JSON value {nesting_problem()}") from None
        if type(record) is not dict:
            kind = _JSON_TYPE_NAMES.get(type(record), type(record).__name__)
            raise RecordFileError(name, lineno, f"a record must be a JSON object, not {kind}")
        for label, value in record.items():
            if label in field_labels:
                if type(value) is dict and PICKLE_KEY in value:
                    record[label] = _field_from_json(value, label, name, lineno, allow_pickle)
            elif label in tag_labels:
                if type(value) is not int:
                    problem = record_problem({label: value}, _json_text)
                    raise RecordFileError(name, lineno, problem or f"tag '{label}' must be an integer")
            else:  # a label not seen before: the full check (snet.records)
                problem = record_problem({label: value}, _json_text)
                if problem is not None:
                    raise RecordFileError(name, lineno, problem)
                if label[0] == "<":
                    if len(tag_labels) < _KNOWN_LABELS_MAX:
                        tag_labels.add(label)
                else:
                    if len(field_labels) < _KNOWN_LABELS_MAX:
                        field_labels.add(label)
                    if type(value) is dict and PICKLE_KEY in value:
                        record[label] = _field_from_json(value, label, name, lineno, allow_pickle)
        if line.count("[") + line.count("{") > MAX_NESTING:  # then, rarely, the exact test
            _check_nesting(record, name, lineno)
        yield record


def _utf8_problem(line: bytes, exc: UnicodeDecodeError) -> str:
    """Where on its line a record's bytes stop being UTF-8: the column in characters, as for JSON errors."""
    column = len(line[:exc.start].decode("utf-8")) + 1  # valid: the decoder stopped at the first bad byte
    bad = " ".join(f"0x{b:02x}" for b in line[exc.start:exc.end])
    return f"invalid UTF-8 at column {column} ({'byte' if exc.end - exc.start == 1 else 'bytes'} {bad}: {exc.reason})"


def _syntax_problem(line: str, exc: ValueError) -> str:
    if not isinstance(exc, json.JSONDecodeError):  # not a syntax error: an integer beyond the digit limit
        return f"invalid JSON: {long_integer_problem()}" if "integer string conversion" in str(exc) \
            else f"invalid JSON: {exc}"
    msg = exc.msg
    hint = " (is this S-Net XML? give --format xml)" if line.lstrip().startswith("<") else ""
    if line.startswith(_BOM):
        hint = " (a byte-order mark in the middle of the input: were files joined?)"
    # The decoder counts lines and columns in what it was given: an error at the end of the
    # record ("{"x": 1," and its line break) would read "line 2, column 1" there.
    column = min(exc.pos, len(line.rstrip("\r\n"))) + 1
    return f"invalid JSON: {msg} (column {column}){hint}"


def _check_nesting(record: dict, name: str, lineno: int) -> None:
    for label, value in record.items():
        if nests_too_deeply(value):
            raise RecordFileError(name, lineno, f"field '{label}': value {nesting_problem()}")


def _field_from_json(value: dict, label: str, name: str, lineno: int, allow_pickle: bool) -> Any:
    if len(value) != 1:  # an ordinary object that happens to have a "$pickle" key among others
        return value
    if not allow_pickle:
        raise RecordFileError(name, lineno, f"field '{label}' holds a pickled Python value; {ALLOW_PICKLE_HINT}")
    try:
        result = unpickle_text(value[PICKLE_KEY])
    except ValueFormError as exc:
        raise RecordFileError(name, lineno, f"field '{label}': {exc}") from None
    if nests_too_deeply(result):  # pickle reads any depth without recursing: no record that cannot be written
        raise RecordFileError(name, lineno, f"field '{label}': pickled value {nesting_problem()}")
    return result


# --------------------------------------------------------------------------
# Writing

class NotJsonField(SNetRuntimeError):
    """A field value JSON cannot hold, written without ``allow_pickle``: a run-time error (interfaces.md §3).

    Attributes:
        label: the field.
        what: the value described (``a datetime.date``).
        record_number: the 1-based number of the record among those the
            writer wrote (None from :func:`format_record_jsonl` alone).
        hint: where the value came from (`` (made by box 'f')``).
    """

    def __init__(self, label: str, what: str, record_number: int | None = None, hint: str = ""):
        self.label = label
        self.what = what
        self.record_number = record_number
        self.hint = hint
        where = f"output record {record_number}: " if record_number is not None else "a record: "
        super().__init__(
            f"cannot write {where}field '{label}' holds {what}, which JSON cannot hold{hint}; make the box "
            f"return JSON values (numbers, strings, lists, dicts; tuples and NumPy values are converted), or pass "
            f"--allow-pickle (allow_pickle=True in Python) to write it as {{\"$pickle\": ...}}, which only "
            f"--allow-pickle reads back")


def format_record_jsonl(record: dict, allow_pickle: bool = False, hint: Any = None) -> str:
    """One record as a compact JSON object (no newline); see the module docstring.

    A field value JSON cannot hold is pickled with `allow_pickle`, and is a
    :class:`NotJsonField` error without it; ``hint(label)`` completes that
    error's message (the box that made the field, say).

    Raises:
        NotJsonField: a value JSON cannot hold, without `allow_pickle`.
        SNetRuntimeError: an invalid label, a tag that is not an int, a value
            nested deeper than a record file holds, or a value that can be
            neither written as JSON nor pickled.
    """
    try:
        for label, value in record.items():
            if label not in _KNOWN_LABELS:
                _check_output_label(label)
            t = type(value)
            if label[0] == "<":
                if t is not int:
                    raise _bad_output_tag(label, value)
            elif t is int or t is str or t is float or t is bool or value is None:
                continue
            elif t is list:
                if not is_json_exact(value):
                    break
            elif t is dict:
                if (PICKLE_KEY in value and len(value) == 1) or not is_json_exact(value):
                    break  # a lone "$pickle" key must be pickled, or it would read back as a pickle
            else:
                break
        else:
            try:
                text = _encode(record)
            except ValueError:  # NaN/inf, or an int beyond the interpreter's digit limit
                pass
            else:
                _check_output_nesting(record, text)
                return text
        text = _encode(_prepared(record, allow_pickle, hint))
        _check_output_nesting(record, text)
        return text
    except RecursionError:  # is_json_exact, the encoders and pickle all recurse
        raise too_deep_to_write(record) from None
    except ValueError:  # fields were pickled if need be: a tag too long to write in decimal
        raise long_tag_error(record) from None


def _check_output_nesting(record: dict, text: str) -> None:
    """What the reader refuses is not written: values nested past ``values.MAX_NESTING``."""
    if text.count("[") + text.count("{") > MAX_NESTING:  # then, rarely, the exact test
        for label, value in record.items():
            if nests_too_deeply(value):
                raise SNetRuntimeError(f"cannot write field '{label}': its value is {nesting_problem()}")


# Labels already validated for output; bounded so that a long-running service
# fed ever new labels cannot grow it without limit.  Shared by every writer:
# a label's validity never changes, so a racing add only repeats a check
# (set.add is internally synchronised, also on free-threaded builds).
_KNOWN_LABELS: set = set()
_KNOWN_LABELS_MAX: Final = 4096


def _check_output_label(label: object) -> None:
    if not isinstance(label, str) or not is_valid_label(label):
        raise SNetRuntimeError(f"cannot write a record with the label {label!r}: not a label in S-Net spelling")
    if len(_KNOWN_LABELS) < _KNOWN_LABELS_MAX:
        _KNOWN_LABELS.add(label)


def _bad_output_tag(label: str, value: Any) -> SNetRuntimeError:
    return SNetRuntimeError(f"cannot write tag {label}: it holds a {type(value).__name__}, not an int")


def _prepared(record: dict, allow_pickle: bool, hint: Any) -> dict:
    """A copy of `record` with every field in a form JSON holds, or pickled (module docstring)."""
    out = {}
    for label, value in record.items():
        if label[0] != "<":
            try:
                converted = json_value(value)
                if type(converted) is dict and PICKLE_KEY in converted and len(converted) == 1:
                    raise NotJsonValue(f"a dict whose only key is \"{PICKLE_KEY}\" (the form of a pickled value)")
                try:
                    _encode(converted)
                except ValueError:  # an int beyond the interpreter's digit limit
                    raise NotJsonValue(long_integer_problem()) from None
                value = converted
            except NotJsonValue as exc:
                if not allow_pickle:
                    raise NotJsonField(label, exc.what, hint=hint(label) if hint is not None else "") from None
                if nests_too_deeply(value):  # no pickle that the reader would refuse
                    raise SNetRuntimeError(f"cannot write field '{label}': its value is {nesting_problem()}") \
                        from None
                try:
                    value = {PICKLE_KEY: pickle_text(value)}
                except ValueError as exc:
                    raise SNetRuntimeError(f"cannot write field '{label}': {exc}") from None
        out[label] = value
    return out


class JsonlWriter(BatchWriter):
    """Writes records as JSON Lines, one compact object per line.

    A value JSON cannot hold is pickled with `allow_pickle`; without it, it
    is a :class:`NotJsonField` error naming the output record's number, the
    field, the type and ``hint(label)`` (which box made it, say).
    """

    def __init__(self, f: IO, owned: bool, allow_pickle: bool = False, hint: Any = None):
        super().__init__(f, owned)
        self._allow_pickle = allow_pickle
        self._hint = hint
        self._count = 0

    def format_record(self, record: dict) -> str:
        self._count += 1
        try:
            return format_record_jsonl(record, self._allow_pickle, self._hint) + "\n"
        except NotJsonField as exc:
            raise NotJsonField(exc.label, exc.what, self._count, exc.hint) from None

    def _write_unencodable(self, text: str) -> None:
        # A lone surrogate, or a file object in a narrower encoding than
        # UTF-8: write the lines that fail with \u escapes.
        # JSON escapes "\n" inside strings, so it separates records; splitlines()
        # would also split at U+0085 or U+2028, which JSON leaves raw.
        for line in text[:-1].split("\n"):
            try:
                self._f.write(line + "\n")
            except UnicodeEncodeError:
                self._f.write(_ascii_encode(_decode(line)) + "\n")
