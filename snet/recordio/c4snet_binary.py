"""Field values in the C4SNet binary form: the fields of ``mode="binary"`` XML records.

In a record written with ``mode="binary"``, the reference distribution's
C4SNet interface writes each field as one base64 digit holding the C type's
number, followed by the value's bytes (as the machine holds them: little
endian) in standard base64 with padding.  For example ``GBQAAAA==`` is
digit ``G`` (6, ``int``) and ``BQAAAA==``, the four bytes ``05 00 00 00``:
the int 5.  The type numbers are those of the interface's type enumeration:

====  ==================  =====  ==========================
 no.  C type              bytes  Python value
====  ==================  =====  ==========================
  1   ``unsigned char``     1    one-character ``str``
  2   ``char``              1    one-character ``str``
  3   ``unsigned short``    2    ``int``
  4   ``short``             2    ``int``
  5   ``unsigned int``      4    ``int``
  6   ``int``               4    ``int``
  7   ``unsigned long``     8    ``int``
  8   ``long``              8    ``int``
  9   ``float``             4    ``float``
 10   ``double``            8    ``float``
====  ==================  =====  ==========================

These are the same values the textual form gives (``(int)5`` is 5).  Only
scalars are read: ``long double`` (whose size depends on the machine) and
arrays (for which later versions of the interface changed the layout) are
refused with a message.  Writing uses ``int`` (or ``long`` beyond 32 bits),
``double`` and ``char``; a value with no binary form makes its record
textual (see :func:`binary_field`).

A record without a ``mode`` attribute is binary to the reference
distribution's reader, textual to older tools and to this project's own
files before binary mode existed.  The two forms cannot be confused: a
textual value begins with ``(`` and a binary one with a base64 digit, so the
XML reader decides per field (:func:`looks_binary`), and a text in neither
form is a :class:`NotBinaryForm` that the reader reports as such.
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Any, Final

from snet.recordio.values import ValueFormError

_DIGITS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

# type number -> (C name, struct format)
_TYPES: Final = {
    1: ("unsigned char", "<B"), 2: ("char", "<b"), 3: ("unsigned short", "<H"), 4: ("short", "<h"),
    5: ("unsigned int", "<I"), 6: ("int", "<i"), 7: ("unsigned long", "<Q"), 8: ("long", "<q"),
    9: ("float", "<f"), 10: ("double", "<d"),
}
_CHAR: Final = 2
_INT: Final = 6
_LONG: Final = 8
_DOUBLE: Final = 10
_INT32: Final = range(-2**31, 2**31)
_INT64: Final = range(-2**63, 2**63)


class NotBinaryForm(ValueFormError):
    """The text does not begin with the digit of a C4SNet type: it is not in the binary form at all."""


def looks_binary(text: str) -> bool:
    """Is `text` a field in the binary form rather than the textual one (which begins with ``(``)?"""
    return text.lstrip()[:1] != "("


def decode_binary_field(text: str) -> Any:
    """The Python value of a field's text in a ``mode="binary"`` record.

    Raises:
        NotBinaryForm: the text does not begin with a type digit.
        ValueFormError: otherwise not a C4SNet binary scalar.
    """
    value = text.strip()
    shown = value if len(value) <= 40 else value[:37] + "..."
    number = _DIGITS.find(value[:1]) if value else -1
    if number == 11:
        raise ValueFormError(f"binary C4SNet value of type long double (its size depends on the machine) "
                             f"is not supported: '{shown}'")
    if number not in _TYPES:
        raise NotBinaryForm(f"not a C4SNet binary value (expected a type digit, then base64 bytes): '{shown}'")
    name, fmt = _TYPES[number]
    try:
        data = base64.b64decode(value[1:], validate=True)
    except (binascii.Error, ValueError):
        raise ValueFormError(f"binary C4SNet {name} value is not valid base64: '{shown}'") from None
    size = struct.calcsize(fmt)
    if len(data) != size:
        raise ValueFormError(f"binary C4SNet {name} value holds {len(data)} bytes, not {size} "
                             f"(arrays in binary form are not supported): '{shown}'")
    (result,) = struct.unpack(fmt, data)
    if number in (1, 2):
        return chr(result & 0xFF)
    return result


def binary_field(value: Any) -> str | None:
    """The binary text of a field value, or None when it has no binary form.

    ``int`` (not ``bool``) is written as ``int`` when it fits 32 bits, else
    as ``long`` (64 bits); ``float`` as ``double``; a one-character string
    whose code is below 256 as ``char``.
    """
    kind = type(value)
    if kind is int:
        if value in _INT32:
            return _encode(_INT, value)
        if value in _INT64:
            return _encode(_LONG, value)
        return None
    if kind is float:
        return _encode(_DOUBLE, value)
    if kind is str and len(value) == 1 and ord(value) < 256:
        return _DIGITS[_CHAR] + base64.b64encode(bytes((ord(value),))).decode("ascii")
    return None


def _encode(number: int, value: Any) -> str:
    return _DIGITS[number] + base64.b64encode(struct.pack(_TYPES[number][1], value)).decode("ascii")
