"""Field values that neither format can spell natively: the JSON and pickle rules.

Both record formats hold a closed set of value types natively (JSON values in
JSON Lines; C4SNet ints, doubles, char arrays and int/double arrays in XML).
A field may hold any Python object, so each format needs a way out for the
rest.  The policy lives here so that both formats apply the same test:

* A value is *JSON-exact* when ``json.loads(json.dumps(v)) == v`` holds with
  the same types all the way down: ``None``, ``bool``, ``int`` (exactly, not a
  subclass), finite ``float``, ``str``, ``list`` and ``dict`` with ``str``
  keys, nested arbitrarily.  Tuples, sets, bytes, NaN/inf, int/str/float
  subclasses (``IntEnum``, ...) and dicts with non-``str`` keys are *not*:
  ``json`` would silently turn them into something else.
* JSON Lines output (:func:`json_value`) writes what JSON can hold: tuples
  become lists and NumPy scalars and arrays become numbers and lists (the
  values boxes usually compute), whatever their nesting.  Any other value
  (a date, a set, NaN, an object) is a :class:`NotJsonValue` error naming
  its type, which the writer turns into a run-time error naming the field
  and the box, so that a file never holds something no other program can
  read, unless the writer was given ``allow_pickle=True``
  (``--allow-pickle``): then it is pickled and base64-encoded.
* XML output pickles every value that C4SNet and JSON cannot spell.
* Reading a pickle back executes arbitrary code chosen by whoever wrote the
  file, so it is refused unless the reader was given ``allow_pickle=True``
  (``--allow-pickle`` on the command line).
* Lists and dicts nest at most :data:`MAX_NESTING` levels in a field value,
  read or written, in both formats (:func:`nesting_problem` says why).

Alternatives rejected: a registry of per-type encoders (bytes, sets, dates,
...) would be safer than pickle for those types but is an open-ended design
that still needs pickle as the last resort.  Turning a tuple into a list
loses the tuple's type on the way back; JSON has no tuple, and a box that
needs one gets a list it can convert.
"""

from __future__ import annotations

import base64
import binascii
import math
import pickle
import sys
from typing import Any, Final

from snet.errors import SNetRuntimeError

# Protocol 4 is read by every Python since 3.4; higher ones gain nothing for
# the small values that usually end up here.
PICKLE_PROTOCOL: Final = 4

ALLOW_PICKLE_HINT: Final = (
    "pass --allow-pickle (allow_pickle=True in Python) to read it, "
    "and only for files you trust: unpickling can run arbitrary code")


class ValueFormError(ValueError):
    """A value's text form is malformed; the message says how."""


def long_integer_problem() -> str:
    """The message for an integer longer than ``int()`` converts (``sys.get_int_max_str_digits``).

    Python refuses to convert decimal text of more than 4300 digits (by
    default) because the conversion takes quadratic time; both formats
    report such an integer with this message rather than the interpreter's,
    which names a function the user of ``snet run`` cannot call.
    """
    return f"an integer of more than {sys.get_int_max_str_digits()} digits, the most this Python converts"


def long_tag_error(record: dict) -> SNetRuntimeError:
    """The error for writing `record`, one of whose tags holds an int too long to write in decimal."""
    for label, value in record.items():
        if label[0] == "<":
            try:
                str(value)
            except ValueError:
                return SNetRuntimeError(f"cannot write tag {label}: it holds {long_integer_problem()}")
    return SNetRuntimeError(f"cannot write a tag: it holds {long_integer_problem()}")


_EXACT_SCALARS: Final = frozenset({str, int, bool, type(None)})
_CONTAINERS: Final = frozenset({list, dict, tuple, set, frozenset})
_FLAT: Final = _EXACT_SCALARS | {float}


# How deep lists and objects may nest in a field value of a record file, read or written.
MAX_NESTING: Final = 256


def nesting_problem() -> str:
    """How a field value nested deeper than :data:`MAX_NESTING` is described, on input and on output.

    Why a fixed bound, the same both ways.  Python's JSON decoder, its
    encoders, ``pickle`` and the checks here all recurse once or twice per
    level against the interpreter's recursion limit (1000), so without a
    bound of its own the reader would accept values nested about 990 deep
    while a writer, called from a deeper stack and spending more frames per
    level, fails at about 495: a record read could not be written.  256
    leaves every writer room for a caller's stack of a few hundred frames,
    and both formats check it when reading and when writing, so a record file
    that one run writes the next one reads.
    """
    return f"nested more than {MAX_NESTING} levels deep, the most a record file holds"


def nests_too_deeply(value: Any, limit: int = MAX_NESTING) -> bool:
    """Do lists, tuples, dicts and sets nest in `value` more than `limit` levels (a scalar is 0)?

    Iterative, so that it answers for any depth without recursing; a
    container of scalars only is passed over with one C-level pass over its
    element types.  Callers first count the opening brackets of the text a
    value came from or goes to (``str.count``, at C speed): a text nests no
    deeper than that, so most records never need this walk.
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if type(item) not in _CONTAINERS:
            continue
        if depth > limit:
            return True
        children = item.values() if type(item) is dict else item
        if _FLAT.issuperset(map(type, children)):
            continue
        stack.extend((child, depth + 1) for child in children if type(child) in _CONTAINERS)
    return False


def too_deep_to_write(record: dict) -> SNetRuntimeError:
    """The error for writing `record`, which a writer found nested too deeply (its recursion ran out)."""
    for label, value in record.items():
        if nests_too_deeply(value):
            return SNetRuntimeError(f"cannot write field '{label}': its value is {nesting_problem()}")
    return SNetRuntimeError(f"cannot write a record with a field value {nesting_problem()}")


def exceeds_nesting(value: Any, text: str | None = None) -> bool:
    """Does `value` nest deeper than :data:`MAX_NESTING`?  `text`: its JSON text, if there is one.

    With the text, the walk is made only when the text has more opening
    brackets than the bound (the usual record has far fewer).
    """
    if text is not None and text.count("[") + text.count("{") <= MAX_NESTING:
        return False
    return nests_too_deeply(value)


def is_json_exact(value: Any) -> bool:
    """True if JSON round-trips `value` with the same types all the way down."""
    t = type(value)
    if t in _EXACT_SCALARS:
        return True
    if t is float:
        return math.isfinite(value)
    if t is list:
        # One C-level pass over the element types settles the common
        # homogeneous lists (an image's ints) without a call per element.
        if _EXACT_SCALARS.issuperset(map(type, value)):
            return True
        return all(map(is_json_exact, value))
    if t is dict:
        return all(type(k) is str and is_json_exact(v) for k, v in value.items())
    return False


class NotJsonValue(ValueError):
    """A value JSON cannot hold; ``what`` describes it (``a datetime.date``, ``a set inside a list``)."""

    def __init__(self, what: str):
        self.what = what
        super().__init__(what)


def type_name(value: Any) -> str:
    """``set``, ``datetime.date``, ``numpy.complex128``: the type as a user would import it."""
    t = type(value)
    module = t.__module__
    return t.__qualname__ if module == "builtins" else f"{module}.{t.__qualname__}"


def _article(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _is_numpy(value: Any) -> bool:
    module = type(value).__module__
    return (module == "numpy" or module.startswith("numpy.")) and hasattr(value, "tolist")


def json_value(value: Any) -> Any:
    """`value` in a form JSON holds: tuples as lists, NumPy scalars and arrays as Python numbers and lists.

    Raises:
        NotJsonValue: a value JSON cannot hold, described with its type
            (and where it sits when it is inside a list or a dict).
    """
    t = type(value)
    if t in _EXACT_SCALARS:
        return value
    if t is float:
        if math.isfinite(value):
            return value
        raise NotJsonValue(f"the float {value!r}")
    if t is list or t is tuple:
        try:
            return [json_value(v) for v in value]
        except NotJsonValue as e:
            raise NotJsonValue(_inside(e.what, t.__name__)) from None
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise NotJsonValue(f"a dict with the key {k!r}, {_article(type_name(k))} and not a string")
            try:
                out[k] = json_value(v)
            except NotJsonValue as e:
                raise NotJsonValue(_inside(e.what, "dict")) from None
        return out
    if _is_numpy(value):
        converted = value.tolist()
        if type(converted) is type(value):  # a NumPy value with no Python equivalent
            raise NotJsonValue(_article(type_name(value)))
        try:
            return json_value(converted)
        except NotJsonValue as e:
            raise NotJsonValue(f"{_article(type_name(value))} holding {e.what}") from None
    raise NotJsonValue(_article(type_name(value)))


def _inside(what: str, container: str) -> str:
    return what if " inside " in what else f"{what} inside a {container}"


def pickle_text(value: Any) -> str:
    """The base64 text of `value` pickled.

    Raises:
        ValueError: the value cannot be pickled (a lambda, a lock, ...).
    """
    try:
        data = pickle.dumps(value, protocol=PICKLE_PROTOCOL)
    except Exception as exc:  # pickle raises many types: PicklingError, TypeError, AttributeError
        raise ValueError(f"a {type(value).__name__} can be neither written as JSON nor pickled ({exc})") from None
    return base64.b64encode(data).decode("ascii")


def unpickle_text(text: object) -> Any:
    """The value whose pickle `text` holds in base64 (the caller checked the permission).

    Raises:
        ValueFormError: not a string, not base64, or not a pickle.
    """
    if not isinstance(text, str):
        raise ValueFormError(f"a pickled value must be a base64 string, not {type(text).__name__}")
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueFormError(f"invalid base64 in pickled value: {exc}") from None
    try:
        return pickle.loads(data)
    except Exception as exc:  # unpickling raises almost anything on corrupt input
        raise ValueFormError(f"cannot unpickle value: {type(exc).__name__}: {exc}") from None
