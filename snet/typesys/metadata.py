"""Metadata resolution (language.md §6.15): the key/value map of each box occurrence.

Blocks are kept with their scope.  The elements directly under
``<metadata>`` that mean something are ``<default>`` (boxes and nets),
``<boxdefault>``, ``<netdefault>``, ``<box name="f">`` and ``<net name="n">``;
each child of one of them is a key whose value is its ``value`` attribute,
else its text, else ``""`` (a flag).  Everything else is ignored.

Precedence, as implemented: **specificity first, then depth**.  All
``<default>`` entries apply first, then all kind defaults, then all named
entries; within each level, blocks of inner scopes are applied after (so
win over) those of outer scopes.  The scopes consulted are those on the
lexical chain of the occurrence (file scope down to the scope in which the
name was looked up), and a named entry applies when its name, looked up
from its own scope, is the very box used.
"""

from __future__ import annotations

from snet.syntax import ast
from snet.typesys.scopes import Scope


def element_keys(element: ast.MetaElement) -> dict[str, str]:
    out: dict[str, str] = {}
    for child in element.children:
        value = child.attribute("value")
        out[child.key] = value if value is not None else child.text
    return out


def definition_metadata(definition, scope: Scope, index: "MetadataIndex | None" = None) -> dict[str, str]:
    """The metadata of a box or net definition used from `scope`.

    Args:
        definition: an :class:`ast.BoxDecl` or :class:`ast.NetDef`.
        scope: the scope in which the occurrence's name was resolved.
        index: the per-scope index to use; pass the same one for every
            occurrence of a program (a fresh one is made otherwise).
    """
    return dict((index or MetadataIndex()).metadata(definition, scope))


class MetadataIndex:
    """The metadata elements of each scope, filed by key and by name.

    Without it every box occurrence would go through every block on its
    lexical chain; a program with one ``<box name="...">`` block per box
    would then cost the product of boxes and blocks.  With it, an
    occurrence reads the defaults merged once per scope, and only the named
    entries that carry its own name.
    """

    def __init__(self) -> None:
        self._by_scope: dict[int, tuple[dict[str, list], dict[tuple[str, str], list]]] = {}
        self._defaults: dict[tuple[int, str], dict[str, str]] = {}
        self._keep: list[Scope] = []  # keeps the ids above stable

    def _filed(self, scope: Scope) -> tuple[dict[str, list], dict[tuple[str, str], list]]:
        filed = self._by_scope.get(id(scope))
        if filed is None:
            by_key: dict[str, list] = {}
            by_name: dict[tuple[str, str], list] = {}
            for block in scope.metadata:
                for element in block.elements:
                    by_key.setdefault(element.key, []).append(element)
                    name = element.attribute("name")
                    if name is not None:
                        by_name.setdefault((element.key, name), []).append(element)
            filed = self._by_scope[id(scope)] = (by_key, by_name)
            self._keep.append(scope)
        return filed

    def _base(self, scope: Scope, kind_default: str) -> dict[str, str]:
        """``<default>`` entries, then the kind's default entries, over the chain of `scope`."""
        key = (id(scope), kind_default)
        merged = self._defaults.get(key)
        if merged is None:
            chain = scope.chain()
            merged = {}
            for level in ("default", kind_default):
                for s in chain:
                    for element in self._filed(s)[0].get(level, ()):
                        merged.update(element_keys(element))
            self._defaults[key] = merged
            self._keep.append(scope)
        return merged

    def metadata(self, definition, scope: Scope) -> dict[str, str]:
        """See :func:`definition_metadata`; read-only: occurrences with no named
        entry share the dict of their scope's defaults."""
        is_box = isinstance(definition, ast.BoxDecl)
        named = "box" if is_box else "net"
        base = self._base(scope, "boxdefault" if is_box else "netdefault")
        merged = None
        for s in scope.chain():
            for element in self._filed(s)[1].get((named, definition.name), ()):
                if s.lookup(definition.name) is definition:
                    if merged is None:
                        merged = dict(base)
                    merged.update(element_keys(element))
        return base if merged is None else merged
