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


def definition_metadata(definition, scope: Scope) -> dict[str, str]:
    """The metadata of a box or net definition used from `scope`.

    Args:
        definition: an :class:`ast.BoxDecl` or :class:`ast.NetDef`.
        scope: the scope in which the occurrence's name was resolved.
    """
    kind_default = "boxdefault" if isinstance(definition, ast.BoxDecl) else "netdefault"
    named = "box" if isinstance(definition, ast.BoxDecl) else "net"
    chain = scope.chain()
    merged: dict[str, str] = {}
    for level in ("default", kind_default, named):
        for s in chain:
            for block in s.metadata:
                for element in block.elements:
                    if element.key != level:
                        continue
                    if level == named:
                        name = element.attribute("name")
                        if name is None or s.lookup(name) is not definition:
                            continue
                    merged.update(element_keys(element))
    return merged
