"""Line breaking for the printer: documents that fit a width.

A small document algebra in the manner of Wadler's "prettier printer"
(group, nest, line), with one addition, ``align``, which indents the lines
of its document to the column where it starts.  The printer builds a
document for each connect expression; :func:`render` lays it out so that
every group that fits in the rest of its line stays on one line, and every
group that does not has each of its line breaks taken.  The flat rendering
of a document (:func:`flat`) is exactly the text the printer writes on one
line, so breaking changes white space only.

Documents are tuples: ``("text", s)``, ``("line", flat_text)`` (``flat_text``
flat, a newline and the indentation when its group breaks),
``("group", doc)``, ``("nest", n, doc)``, ``("align", doc)``,
``("cat", (doc, ...))``.
"""

from __future__ import annotations

_FLAT, _BREAK = 0, 1


def text(s: str) -> tuple:
    return ("text", s)


def line(flat_text: str = " ") -> tuple:
    return ("line", flat_text)


def group(*docs) -> tuple:
    return ("group", cat(*docs))


def nest(n: int, *docs) -> tuple:
    return ("nest", n, cat(*docs))


def align(*docs) -> tuple:
    return ("align", cat(*docs))


def cat(*docs) -> tuple:
    return docs[0] if len(docs) == 1 else ("cat", tuple(docs))


def flat(doc) -> str:
    """The document on one line."""
    kind = doc[0]
    if kind == "text":
        return doc[1]
    if kind == "line":
        return doc[1]
    if kind == "cat":
        return "".join(flat(d) for d in doc[1])
    return flat(doc[-1])  # group, nest, align


def render(doc, width: int, column: int = 0) -> str:
    """Lay `doc` out in `width` columns, starting at `column` (lines indent from 0)."""
    out: list[str] = []
    stack = [(column, _BREAK, doc)]
    col = column
    while stack:
        indent, mode, d = stack.pop()
        kind = d[0]
        if kind == "text":
            out.append(d[1])
            col += len(d[1])
        elif kind == "cat":
            stack.extend((indent, mode, part) for part in reversed(d[1]))
        elif kind == "nest":
            stack.append((indent + d[1], mode, d[2]))
        elif kind == "align":
            stack.append((col, mode, d[1]))
        elif kind == "line":
            if mode == _FLAT:
                out.append(d[1])
                col += len(d[1])
            else:
                out.append("\n" + " " * indent)
                col = indent
        else:  # group
            fits = mode == _FLAT or _fits(width - col, [(indent, _FLAT, d[1])], stack)
            stack.append((indent, _FLAT if fits else _BREAK, d[1]))
    return "".join(out)


def _fits(room: int, items: list, rest: list) -> bool:
    """Does the text up to the next line break fit in `room` columns?

    `items` are laid out flat; after them come the documents still on the
    renderer's stack, where a group may still break, so a line there ends
    the measure.
    """
    rest_at = len(rest)
    while room >= 0:
        if not items:
            if rest_at == 0:
                return True
            rest_at -= 1
            items = [rest[rest_at]]
        indent, mode, d = items.pop()
        kind = d[0]
        if kind == "text":
            room -= len(d[1])
        elif kind == "cat":
            items.extend((indent, mode, part) for part in reversed(d[1]))
        elif kind in ("nest", "align"):
            items.append((indent, mode, d[-1]))
        elif kind == "line":
            if mode == _BREAK:
                return True
            room -= len(d[1])
        else:  # group: flat while measuring this one, free to break in what follows
            items.append((indent, mode, d[1]))
    return False
