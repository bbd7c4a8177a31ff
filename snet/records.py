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

from typing import Any, Iterable, Mapping

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
    return "{" + ", ".join(sorted(labels, key=label_order)) + "}"


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
