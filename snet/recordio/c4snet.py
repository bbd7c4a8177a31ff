"""Field values in the C4SNet textual form used by S-Net XML record files.

The reference S-Net distribution writes a field as ``(TYPE)VALUE`` or, for an
array, ``(TYPE[N])V1,V2,...``.  This module turns that text into Python values
and back.  The mapping, which docs/records.md tabulates:

==========================  ==============================  =====================
text                        Python value                    written for
==========================  ==============================  =====================
``(int)5``                  ``5``                           ``int``
``(double)2.5``             ``2.5``                         ``float`` (``repr``: exact;
                                                            ``nan``, ``inf`` too)
``(int[3])1,2,3``           ``[1, 2, 3]``                   ``list`` of ``int``
``(double[2])0.5,1.0``      ``[0.5, 1.0]``                  ``list`` of ``float``
``(int[0])``                ``[]``                          the empty ``list``
``(char[3])a,b,c``          ``"abc"``                       ``str``
``(json)JSON``              ``json.loads(JSON)``            other JSON-exact values
``(pickle)BASE64``          ``pickle.loads(...)``           everything else
==========================  ==============================  =====================

Reading also accepts the other C integer types (``short``, ``long``,
``unsigned int``, ...), ``float`` and ``long double`` as doubles, ``(char)x``
as a one-character string and ``(char[N])`` with whitespace around the items.

Char arrays.  C4SNet separates the characters of a ``char`` array with
commas, so a string that contains a comma is ambiguous to a reader that
splits on commas.  This reader is not: every item of a ``char`` array is one
character, so the text of ``(char[N])`` is exactly ``2N - 1`` characters with
a comma at every odd position, and the string is every even-position
character.  ``"a,b"`` is written ``(char[3])a,,,b`` and reads back exactly.
Readers that split on commas (the reference runtime) misread such strings;
there is no C4SNet spelling they would read correctly.

The ``(json)`` and ``(pickle)`` forms are this implementation's own: C4SNet
has no type for ``None``, ``bool``, nested or mixed lists, lists of strings
or dicts.  JSON is preferred because it is safe to read; ``(pickle)`` reads
back only with ``allow_pickle`` (see ``values``).  A string holding a
character that XML 1.0 cannot carry at all (most control characters, lone
surrogates) is written in the ``(json)`` form with ``\\u`` escapes.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from snet.recordio.values import (
    ALLOW_PICKLE_HINT, ValueFormError, exceeds_nesting, is_json_exact, long_integer_problem, nesting_problem,
    nests_too_deeply, pickle_text, unpickle_text)

_INT_TYPES: Final = frozenset({
    "int", "short", "long", "long long", "signed", "signed int", "signed short", "signed long",
    "signed long long", "unsigned", "unsigned int", "unsigned short", "unsigned long",
    "unsigned long long", "short int", "long int", "long long int"})
_FLOAT_TYPES: Final = frozenset({"float", "double", "long double"})
_CHAR_TYPES: Final = frozenset({"char", "signed char", "unsigned char"})

# re.ASCII: "\d" must not match other scripts' digits, which int() would accept.
_HEAD = re.compile(r"\s*\(\s*([A-Za-z_][A-Za-z0-9_ ]*?)\s*(?:\[\s*(\d*)\s*\])?\s*\)", re.ASCII)
_INT = re.compile(r"\s*[+-]?\d+\s*\Z", re.ASCII)
_FLOAT = re.compile(
    r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)\s*\Z", re.IGNORECASE | re.ASCII)

# Characters that need escaping in XML text, and those XML 1.0 cannot hold at all.
_NEEDS_ESCAPE = re.compile("[&<>\\x00-\\x1f\\ud800-\\udfff\\ufffe\\uffff]")
_NOT_IN_XML = re.compile("[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\ud800-\\udfff\\ufffe\\uffff]")
_ESCAPES: Final = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\t": "&#9;", "\n": "&#10;", "\r": "&#13;"}
_ESCAPE = re.compile("[&<>\t\n\r]")

_json_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode
_json_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def escape_text(text: str) -> str:
    """`text` escaped for XML character data (line breaks and tabs as references)."""
    if _NEEDS_ESCAPE.search(text) is None:
        return text
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group()], text)


# --------------------------------------------------------------------------
# Python value -> XML character data

def encode_field(value: Any) -> tuple[str, bool]:
    """(escaped XML text of `value`, whether it is C4SNet) for a field.

    Raises:
        ValueError: the value can be neither written as JSON nor pickled.
    """
    t = type(value)
    if t is int:
        try:
            return f"(int){value}", True
        except ValueError:  # more digits than the interpreter writes: read back from the pickle
            return "(pickle)" + pickle_text(value), False
    if t is float:
        return f"(double){value!r}", True
    if t is str:
        if _NEEDS_ESCAPE.search(value) is None:
            return f"(char[{len(value)}]){','.join(value)}", True
        if _NOT_IN_XML.search(value) is None:
            return f"(char[{len(value)}]){escape_text(','.join(value))}", True
        return "(json)" + escape_text(_json_ascii(value)), False
    if t is list:
        if not value:
            return "(int[0])", True
        types = set(map(type, value))
        if types == {int}:
            return f"(int[{len(value)}]){','.join(map(str, value))}", True
        if types == {float}:
            return f"(double[{len(value)}]){','.join(map(repr, value))}", True
    if is_json_exact(value):
        text = _json_text(value)
        if exceeds_nesting(value, text):
            raise ValueError(f"its value is {nesting_problem()}")
        if _NOT_IN_XML.search(text) is not None:
            text = _json_ascii(value)
        return "(json)" + escape_text(text), False
    if nests_too_deeply(value):  # no pickle that the reader would refuse
        raise ValueError(f"its value is {nesting_problem()}")
    return "(pickle)" + pickle_text(value), False


# --------------------------------------------------------------------------
# XML character data (entities already replaced) -> Python value

# Fast paths for the forms the writer produces for ints, doubles and int
# arrays: one anchored match, no generic header parsing.  Anything they do not
# match exactly goes the general way, which also produces the error messages.
_FAST_INT = re.compile(r"\(int\)([+-]?\d+)\Z", re.ASCII)
_FAST_DOUBLE = re.compile(r"\(double\)([+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|inf|nan))\Z", re.ASCII)
_FAST_INT_ARRAY = re.compile(r"\(int\[(\d+)\]\)([+-]?\d+(?:,[+-]?\d+)*)\Z", re.ASCII)


def decode_field(text: str, allow_pickle: bool) -> Any:
    """The Python value of a field's text.

    Raises:
        ValueFormError: the text is not a value in any known form; the
            message says what is wrong.
    """
    try:
        head = text[:3]
        if head == "(in":
            m = _FAST_INT.match(text)
            if m is not None:
                return int(m.group(1))
            m = _FAST_INT_ARRAY.match(text)
            if m is not None:
                items = m.group(2).split(",")
                if len(items) == int(m.group(1)):
                    return list(map(int, items))
        elif head == "(do":
            m = _FAST_DOUBLE.match(text)
            if m is not None:
                return float(m.group(1))
        m = _HEAD.match(text)
        if m is None:
            shown = text.strip()
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise ValueFormError(f"not a C4SNet value (expected (TYPE)VALUE or (TYPE[N])V1,V2,...): '{shown}'")
        ctype = " ".join(m.group(1).split())
        count_text = m.group(2)
        body = text[m.end():]
        if ctype == "json" or ctype == "pickle":
            if count_text is not None:
                raise ValueFormError(f"({ctype}) takes no array size")
            if ctype == "json":
                try:
                    value = json.loads(body)
                except ValueError as exc:
                    if getattr(exc, "msg", None) is None:  # not a syntax error: an over-long integer
                        raise ValueFormError(f"(json) value holds {long_integer_problem()}") from None
                    raise ValueFormError(f"invalid JSON in (json) value: {exc}") from None
                if exceeds_nesting(value, body):
                    raise ValueFormError(f"(json) value {nesting_problem()}")
                return value
            if not allow_pickle:
                raise ValueFormError(f"a pickled Python value; {ALLOW_PICKLE_HINT}")
            value = unpickle_text(body)
            if nests_too_deeply(value):  # pickle reads any depth without recursing
                raise ValueFormError(f"pickled value {nesting_problem()}")
            return value
        if count_text == "":
            raise ValueFormError(f"({ctype}[]) needs an array size")
        if ctype in _CHAR_TYPES:
            return _decode_chars(body, None if count_text is None else int(count_text), ctype)
        convert: type[int] | type[float]
        if ctype in _INT_TYPES:
            pattern, convert, kind = _INT, int, "an integer"
        elif ctype in _FLOAT_TYPES:
            pattern, convert, kind = _FLOAT, float, "a number"
        else:
            raise ValueFormError(f"unknown C4SNet type '{ctype}'")
        if count_text is None:
            if pattern.match(body) is None:
                raise ValueFormError(f"({ctype}) value is not {kind}: '{_short(body)}'")
            return convert(body)
        count = int(count_text)
        items = body.split(",") if body.strip() else []
        if len(items) != count:
            raise ValueFormError(f"({ctype}[{count}]) array holds {len(items)} items")
        for item in items:
            if pattern.match(item) is None:
                raise ValueFormError(f"({ctype}[{count}]) item is not {kind}: '{_short(item)}'")
        return list(map(convert, items))
    except ValueFormError:
        raise
    except ValueError as exc:  # int() of more digits than the interpreter converts
        if "integer string conversion" in str(exc):
            raise ValueFormError(long_integer_problem()) from None
        raise ValueFormError(str(exc)) from None
    except RecursionError:  # (json) nested deeper than the decoder goes
        raise ValueFormError(f"(json) value {nesting_problem()}") from None


def _decode_chars(body: str, count: int | None, ctype: str) -> str:
    if count is None:
        # A char scalar; surrounding layout (line breaks around the value) is not part of it.
        value = body.strip() if len(body) != 1 else body
        if len(value) != 1:
            raise ValueFormError(f"({ctype}) value must be one character, not '{_short(body)}'")
        return value
    if count == 0:
        if body.strip():
            raise ValueFormError(f"({ctype}[0]) array holds characters: '{_short(body)}'")
        return ""
    for candidate in (body, body.strip()):
        if len(candidate) == 2 * count - 1 and candidate[1::2] == "," * (count - 1):
            return candidate[::2]
    # Items padded with spaces ("a, b, c"): split, then each must be one character.
    items = [item.strip() for item in body.split(",")]
    if len(items) == count and all(len(item) == 1 for item in items):
        return "".join(items)
    raise ValueFormError(f"({ctype}[{count}]) array is not {count} comma-separated characters: '{_short(body)}'")


def _short(text: str, limit: int = 40) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."
