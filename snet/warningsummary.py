"""Repeated warnings of one kind, shown as a few in full and one line with the count of the rest.

A program of thousands of like constructs (4,000 parallel branches a
generator wrote, say) can draw one warning from each: thousands of lines, each
with its source excerpt, that say one thing.  :func:`summarise` keeps the
first ``KEEP`` warnings of each kind in full, in their order, and puts one
line after the last of them with the number of the others::

    net.snet:1:36: warning: parallel branch 2 accepts {a}, but no record ... selects it
    ...
    warning: 3,997 more warnings of this kind: parallel branch # accepts {…}, but no record ... selects it

The **kind** of a warning is its message with the place and the particulars
taken out: the ``FILE:LINE:COL:`` prefix and the source excerpt, and every
quoted name, record type ``{…}``, tag ``<…>`` and number.  The same sentence
about other boxes, labels or branches is the same kind; a different
sentence is another.  Only the printing is summarised: a
:class:`~snet.spg.nodes.PropertyGraph` keeps every warning, and so does
``snet check --strict`` in its count.
"""

from __future__ import annotations

import re
from typing import Iterable

KEEP = 3  # warnings of one kind shown in full

_SEVERITY = re.compile(r"^(?:.*?: )?(warning|error): ")
_PARTICULARS = [(re.compile(r"'[^'\n]*'"), "'…'"), (re.compile(r"\{[^{}\n]*\}"), "{…}"),
                (re.compile(r"<[^<>\n]*>"), "<…>"), (re.compile(r"\d[\d,.]*"), "#")]


def kind(warning: str) -> tuple[str, str]:
    """(severity, the message with its particulars taken out) of a rendered warning (see the module docstring)."""
    first = warning.split("\n", 1)[0]
    found = _SEVERITY.match(first)
    severity = found.group(1) if found else "warning"
    text = first[found.end():] if found else first
    for pattern, placeholder in _PARTICULARS:
        text = pattern.sub(placeholder, text)
    return severity, text


def summarise(warnings: Iterable[str], keep: int = KEEP) -> list[str]:
    """`warnings` with all but the first `keep` of each kind replaced by one line with their count."""
    out: list[str | tuple[str, str]] = []
    shown: dict[tuple[str, str], int] = {}
    hidden: dict[tuple[str, str], int] = {}
    for warning in warnings:
        key = kind(warning)
        n = shown.get(key, 0)
        if n < keep:
            shown[key] = n + 1
            out.append(warning)
            if n + 1 == keep:
                out.append(key)  # where the count goes, if any more come
        else:
            hidden[key] = hidden.get(key, 0) + 1
    return [line if isinstance(line, str) else _count_line(line, hidden[line])
            for line in out if isinstance(line, str) or hidden.get(line)]


def _count_line(key: tuple[str, str], count: int) -> str:
    severity, text = key
    plural = "s" if count != 1 else ""
    return f"{severity}: {count:,} more {severity}{plural} of this kind: {text}"
