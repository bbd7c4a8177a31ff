"""Records and labels: the data contract shared by every engine.

A record is a plain ``dict`` whose keys are labels in S-Net spelling:
``"a"`` is field ``a``, ``"<t>"`` tag ``t``, ``"<#b>"`` binding tag ``b``.
Field values are any Python object; tag and binding-tag values are ``int``.

Why a dict and not a class of our own: records cross every boundary of the
system (record files, box results, the embedding API, Spark batches) in
exactly this spelling, so a dict needs no conversion at any of them, and the
operations engines perform per record (membership tests for matching, a
comprehension for flow inheritance) are the fastest the interpreter has.
The cost is that label kinds are read off the spelling; the helpers below do
that in one place.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

Record = dict  # label (S-Net spelling) -> value

FIELD, TAG, BTAG = 0, 1, 2


def label_kind(label: str) -> int:
    """FIELD, TAG or BTAG for a label in S-Net spelling."""
    if label.startswith("<#"):
        return BTAG
    if label.startswith("<"):
        return TAG
    return FIELD


def is_tag_like(label: str) -> bool:
    """True for tags and binding tags (both hold ints)."""
    return label.startswith("<")


def label_name(label: str) -> str:
    """The bare name: ``"<#b>"`` -> ``"b"``."""
    if label.startswith("<#"):
        return label[2:-1]
    if label.startswith("<"):
        return label[1:-1]
    return label


def label_order(label: str) -> tuple[int, str]:
    """Sort key that lists fields, then tags, then binding tags."""
    return (label_kind(label), label_name(label))


def format_labels(labels: Iterable[str]) -> str:
    """``{a, <t>, <#b>}``: a label set as the language writes it."""
    if type(labels) is frozenset:  # a type's variant: the checker writes the same ones again and again
        text = _formatted.get(labels)
        if text is None:
            if len(_formatted) >= _FORMATTED_MAX:
                _formatted.clear()
            text = _formatted[labels] = "{" + ", ".join(sorted(labels, key=label_order)) + "}"
        return text
    return "{" + ", ".join(sorted(labels, key=label_order)) + "}"


_FORMATTED_MAX = 4096
_formatted: dict[frozenset, str] = {}  # variant -> its text, for the label sets met most recently


def describe(record: Mapping[str, Any]) -> str:
    """The labels of a record, for messages (values are never shown)."""
    return format_labels(record.keys())


def is_valid_label(label: object) -> bool:
    """True if `label` is a well-formed label in S-Net spelling."""
    if not isinstance(label, str) or not label:
        return False
    name = label_name(label)
    if label.startswith("<") and not label.endswith(">"):
        return False
    return bool(name) and (name[0].isalpha() or name[0] == "_") and all(
        ch.isalnum() or ch == "_" for ch in name) and name.isascii()


# --------------------------------------------------------------------------
# The input check

LABEL_RULE = ("a label is NAME (field), <NAME> (tag) or <#NAME> (binding tag), "
               "NAME a letter or _ then letters, digits, _")


def _python_spelling(value: object, limit: int = 40) -> str:
    """`value` as messages about Python values show it: a short ``repr``, with its type unless built in."""
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the error being reported
        text = "?"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    t = type(value)
    return text if t.__module__ == "builtins" else f"{text} (a {t.__module__}.{t.__qualname__})"


def record_problem(record: object, spell: Callable[[object], str] = _python_spelling) -> str | None:
    """What makes `record` unfit to enter a network, or None if nothing does.

    The one definition of a well-formed input record, applied wherever
    records come in (record files, ``Network.run``, ``Session.feed``), so
    that every way in refuses the same records in the same words: a mapping
    whose keys are labels in S-Net spelling and whose tags and binding tags
    hold exactly an ``int``.  A ``bool``, a float holding a whole number, a
    numeric string or an ``int`` subclass is refused rather than coerced: it
    is a bug in whatever produced the record, and coercing it would let a
    ``True`` or a ``2.0`` travel through the network and come out as a tag.
    Field values are not looked at.

    Args:
        record: the candidate record.
        spell: how the message shows a label or value: ``_python_spelling``
            for Python callers; a reader passes the spelling of its format.

    Returns:
        None, or the problem (the first one found, in key order) as a message
        without a position; the caller adds where the record came from.
    """
    if not isinstance(record, Mapping):
        return f"a record must be a mapping from labels to values, not {spell(record)}"
    for label, value in record.items():
        if not is_valid_label(label):
            return f"invalid label {spell(label)}: {LABEL_RULE}"
        if label[0] == "<" and type(value) is not int:
            kind = "binding tag" if label[1] == "#" else "tag"
            return f"{kind} {label} must hold an integer, not {spell(value)}"
    return None
