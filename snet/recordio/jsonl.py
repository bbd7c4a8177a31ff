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
recursion allows.

Lines are read as bytes and decoded one at a time so that an invalid UTF-8
byte is reported on its own line.  Blank lines are skipped; Python's decoder
rules apply otherwise (``NaN``/``Infinity`` are accepted, and of a key given
twice the last one wins).

Writing.  A record is written with one call of a shared compact encoder when
every field value is JSON-exact (``values.is_json_exact``), which is checked
per field with a type test for the usual scalars.  Otherwise each field goes
through ``values.json_value``: tuples become lists, NumPy scalars and arrays
numbers and lists.  A value JSON cannot hold even so is written as
``{"$pickle": ...}`` (interfaces.md §3), which only a reader that allows
pickles reads back; a writer not told that pickles are wanted
(``allow_pickle``) warns once per field and type, naming the field, the
type and the output record's number, so that it never happens silently.  Lines are collected and handed to the file in
batches (``streams.BatchWriter``); nothing is flushed per record.
"""

from __future__ import annotations

import json
import logging
from typing import IO, Any, Final, Iterator

import attrs

from snet.errors import SNetRuntimeError
from snet.records import is_valid_label, record_problem
from snet.recordio.streams import BatchWriter, RecordFileError
from snet.recordio.values import (
    ALLOW_PICKLE_HINT, NotJsonValue, ValueFormError, is_json_exact, json_value, long_integer_problem, long_tag_error,
    nesting_problem, pickle_text, unpickle_text)

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

def read_jsonl(f: IO, name: str, *, allow_pickle: bool = False) -> Iterator[dict]:
    """Records from the JSON Lines file object `f`, one per non-blank line.

    Raises:
        RecordFileError: at the first malformed line, after the records before it.
    """
    field_labels: set[str] = set()  # labels known valid, split by kind
    tag_labels: set[str] = set()
    binary = None
    for lineno, line in enumerate(f, 1):
        if binary is None:
            binary = isinstance(line, bytes)
        if binary:
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RecordFileError(name, lineno, f"invalid UTF-8 (byte {exc.start + 1} of the line)") from None
        if lineno == 1 and line.startswith(_BOM):
            line = line[1:]
        try:
            record = _decode(line)
        except ValueError as exc:
            if not line.strip():
                continue
            raise RecordFileError(name, lineno, _syntax_problem(line, exc)) from None
        except RecursionError:
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
                    raise RecordFileError(name, lineno, record_problem({label: value}, _json_text))
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
        yield record


def _syntax_problem(line: str, exc: ValueError) -> str:
    msg = getattr(exc, "msg", None)
    if msg is None:  # not a syntax error: an integer beyond the interpreter's digit limit
        return f"invalid JSON: {long_integer_problem()}" if "integer string conversion" in str(exc) \
            else f"invalid JSON: {exc}"
    hint = " (is this S-Net XML? give --format xml)" if line.lstrip().startswith("<") else ""
    if line.startswith(_BOM):
        hint = " (a byte-order mark in the middle of the input: were files joined?)"
    return f"invalid JSON: {msg} (column {exc.colno}){hint}"


def _field_from_json(value: dict, label: str, name: str, lineno: int, allow_pickle: bool) -> Any:
    if len(value) != 1:  # an ordinary object that happens to have a "$pickle" key among others
        return value
    if not allow_pickle:
        raise RecordFileError(name, lineno, f"field '{label}' holds a pickled Python value; {ALLOW_PICKLE_HINT}")
    try:
        return unpickle_text(value[PICKLE_KEY])
    except ValueFormError as exc:
        raise RecordFileError(name, lineno, f"field '{label}': {exc}") from None


# --------------------------------------------------------------------------
# Writing

@attrs.frozen
class PickledField:
    """A field value JSON cannot hold, written as ``{"$pickle": ...}``: what the writer's warning says.

    Attributes:
        label: the field.
        what: the value described (``a datetime.date``).
        record_number: the 1-based number of the record among those the
            writer wrote (None from :func:`format_record_jsonl` alone).
        hint: more about where the value came from (`` (made by box 'f')``).
    """

    label: str
    what: str
    record_number: int | None = None
    hint: str = ""

    @property
    def message(self) -> str:
        where = f"output record {self.record_number}: " if self.record_number is not None else ""
        return (f"{where}field '{self.label}' holds {self.what}, which JSON cannot hold{self.hint}: written as "
                f"{{\"$pickle\": ...}}, which only --allow-pickle reads back; make the box return JSON values "
                f"(numbers, strings, lists, dicts), or pass --allow-pickle to say pickles are meant")


def format_record_jsonl(record: dict, allow_pickle: bool = True, on_pickle: Any = None) -> str:
    """One record as a compact JSON object (no newline); see the module docstring.

    A field value JSON cannot hold is pickled; unless `allow_pickle`,
    ``on_pickle(PickledField)`` is called first (a writer's warning).

    Raises:
        SNetRuntimeError: an invalid label, a tag that is not an int, or a
            field value that can be neither written as JSON nor pickled.
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
                return _encode(record)
            except ValueError:  # NaN/inf, or an int beyond the interpreter's digit limit
                pass
        return _encode(_prepared(record, allow_pickle, on_pickle))
    except RecursionError:  # is_json_exact, the encoders and pickle all recurse
        raise SNetRuntimeError(f"cannot write a record with a field value {nesting_problem()}") from None
    except ValueError:  # fields were pickled if need be: a tag too long to write in decimal
        raise long_tag_error(record) from None


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


def _prepared(record: dict, allow_pickle: bool, on_pickle: Any) -> dict:
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
                if not allow_pickle and on_pickle is not None:
                    on_pickle(PickledField(label, exc.what))
                try:
                    value = {PICKLE_KEY: pickle_text(value)}
                except ValueError as exc:
                    raise SNetRuntimeError(f"cannot write field '{label}': {exc}") from None
        out[label] = value
    return out


class JsonlWriter(BatchWriter):
    """Writes records as JSON Lines, one compact object per line.

    A value JSON cannot hold is pickled; unless `allow_pickle`, with a
    warning on the ``snet`` logger once per field and type, completed by
    ``hint(label)`` (which box made it, say).
    """

    def __init__(self, f: IO, owned: bool, allow_pickle: bool = False, hint: Any = None):
        super().__init__(f, owned)
        self._allow_pickle = allow_pickle
        self._hint = hint
        self._warned: set = set()
        self._count = 0

    def format_record(self, record: dict) -> str:
        self._count += 1
        return format_record_jsonl(record, self._allow_pickle, self._pickled) + "\n"

    def _pickled(self, field: PickledField) -> None:
        key = (field.label, field.what)
        if key in self._warned or len(self._warned) >= 256:
            return
        self._warned.add(key)
        hint = self._hint(field.label) if self._hint is not None else ""
        logging.getLogger("snet").warning(
            "warning: %s", attrs.evolve(field, record_number=self._count, hint=hint).message)

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
