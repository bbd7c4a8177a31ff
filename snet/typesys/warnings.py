"""The static warnings W1-W5 of language.md §5.3.

They never stop a program.  Each is found once per place in the source
(not once per use of a net), for every definition of the file:

* **W1** a declared input variant that no variant of the body's In accepts
  (no v in In(body) with v ⊆ d); skipped for a body with no input variants;
* **W2** a declared output label that neither Prov(body) nor the same type
  map's input provides; open outputs and an open Prov skip it;
* **W3** a filter output that reads a label its pattern does not name (a
  copied field, or a tag in an expression; a bare ``<t>`` never warns);
* **W4** a pattern guard (star, feedback, synchro-cell) that reads a tag its
  pattern does not name;
* **W5** a metadata ``name="x"`` that names no box or net in scope.
"""

from __future__ import annotations

from snet.errors import Diagnostic
from snet.gcpause import paused
from snet.records import format_labels
from snet.syntax import ast
from snet.tagexpr import Binary, Cond, reads
from snet.typesys.scopes import Resolution
from snet.typesys.slips import find_slips
from snet.typesys.types import EVERY, TypeChecker, format_type


@paused
def find_warnings(res: Resolution, checker: TypeChecker) -> list[Diagnostic]:
    """Every warning of the file, unsorted."""
    out: list[Diagnostic] = []
    for definition, _scope in res.definitions():
        if isinstance(definition, ast.NetDef):
            if definition.signature is not None and definition.body is not None:
                _signature_warnings(definition, checker, out)
            if definition.body is not None:
                _expression_warnings(definition.body, out)
    for scope in res.scopes():
        for block in scope.metadata:
            for element in block.elements:
                if element.key in ("box", "net"):
                    name = element.attribute("name")
                    if name is None:
                        continue
                    target = scope.lookup(name)
                    if not isinstance(target, (ast.BoxDecl, ast.NetDef)):
                        out.append(Diagnostic("warning", element.span,
                                              f"metadata names '{name}', which is no box or net in scope"))
    out.extend(find_slips(res, checker))
    return out


def _signature_warnings(net: ast.NetDef, checker: TypeChecker, out: list[Diagnostic]) -> None:
    body = checker.body_type(net)
    accepts = _Acceptance(body.in_type) if body.in_type else None
    body_text: str | None = None  # the body's In, written once for every W1 of this net
    for m in checker.declared(net):
        span = m.span if m.span is not None else net.span
        if accepts is not None:
            for d in m.inputs:
                if not accepts(d):
                    unmet = _unmet_stage(net, d, checker)
                    if unmet is not None:
                        stage, lacking = unmet
                        names = " and ".join(f"'{label}'" for label in sorted(lacking))
                        out.append(Diagnostic(
                            "warning", span,
                            f"net '{net.name}': {stage} needs {names}, which neither declared input "
                            f"{format_labels(d)} nor anything before it produces"))
                        continue
                    if body_text is None:
                        body_text = format_type(body.in_type)
                    out.append(Diagnostic(
                        "warning", span,
                        f"net '{net.name}': declared input {format_labels(d)} is accepted by no input "
                        f"variant of its body ({body_text})"))
        if m.outputs is None or body.prov is EVERY:
            continue
        inputs = frozenset().union(*m.inputs)
        missing: dict[str, None] = {}  # insertion-ordered, with constant-time membership
        for variant in m.outputs:
            for label in sorted(variant):
                if label not in body.prov and label not in inputs:
                    missing.setdefault(label)
        for label in missing:
            out.append(Diagnostic(
                "warning", span,
                f"net '{net.name}': declared output label '{label}' is produced by nothing in its body"))


def _unmet_stage(net: ast.NetDef, d: frozenset, checker: TypeChecker):
    """The first stage of the body's serial chain whose input a record of `d` cannot have, and the missing labels.

    None when the body is no chain (or its first stage is the one), or an open Prov hides it.
    """
    body = net.body
    while isinstance(body, ast.Placement):
        body = body.operand
    if not isinstance(body, ast.Serial):
        return None
    scope = checker.res.net_scope(net)
    available = set(d)
    for i, stage in enumerate(body.stages):
        info = checker.infer(stage, scope)
        if info.in_type and not any(w <= available for w in info.in_type):
            if i == 0:
                return None
            missing = min((w - available for w in info.in_type), key=len)
            if isinstance(stage, ast.NameRef):
                kind = "box" if isinstance(scope.lookup(stage.name), ast.BoxDecl) else "net"
                what = f"{kind} '{stage.name}'"
            else:
                what = f"the {_stage_kind(stage)} at {_where(stage)}"
            return what, missing
        if info.prov is EVERY:
            return None
        available |= info.prov
    return None


def _stage_kind(stage) -> str:
    if isinstance(stage, ast.Filter):
        return "filter"
    if isinstance(stage, ast.SyncCell):
        return "synchro-cell"
    return "stage"


def _where(stage) -> str:
    from snet.typesys.slips import start_span
    span = start_span(stage)
    return f"{span.line}:{span.column}" if span is not None else "?"


class _Acceptance:
    """``accepts(d)``: is some variant ``v`` of a body's In a subset of ``d``?

    Comparing every declared variant with every body variant costs their
    product; here a declared variant that is itself a body variant is found
    by hashing, and otherwise only the body variants filed under one of
    ``d``'s labels are compared.  Each body variant is filed under its label
    that the fewest body variants hold, so the lists stay short.  A body with
    a few variants is compared directly.
    """

    SMALL = 8  # up to this many body variants, comparing with each is cheaper than an index

    def __init__(self, variants) -> None:
        self.exact = frozenset(variants)
        self.any = frozenset() in self.exact  # {} is a subset of every variant
        self.few = tuple(variants) if len(variants) <= self.SMALL else None
        if self.few is not None:
            return
        count: dict[str, int] = {}
        for v in self.exact:
            for label in v:
                count[label] = count.get(label, 0) + 1
        self.by_label: dict[str, list[frozenset]] = {}
        for v in self.exact:
            if v:
                key = min(v, key=lambda label: (count[label], label))
                self.by_label.setdefault(key, []).append(v)

    def __call__(self, d: frozenset) -> bool:
        if self.any or d in self.exact:
            return True
        if self.few is not None:
            return any(v <= d for v in self.few)
        by_label = self.by_label
        for label in d:
            for v in by_label.get(label, ()):
                if v <= d:
                    return True
        return False


def _expression_warnings(expr, out: list[Diagnostic]) -> None:
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Filter):
            _filter_warnings(e, out)
        elif isinstance(e, ast.SyncCell):
            _pattern_warnings(e.patterns, "synchro-cell", out)
        elif isinstance(e, ast.Serial):
            stack.extend(e.stages)
        elif isinstance(e, ast.Parallel):
            stack.extend(e.branches)
        elif isinstance(e, ast.Star):
            _pattern_warnings(e.patterns, "exit", out)
            stack.append(e.operand)
        elif isinstance(e, ast.Feedback):
            _pattern_warnings(e.patterns, "back", out)
            stack.append(e.operand)
        elif isinstance(e, (ast.Split, ast.Placement)):
            stack.append(e.operand)


def _filter_warnings(f: ast.Filter, out: list[Diagnostic]) -> None:
    pattern = f.pattern.label_set()
    for clause in f.clauses:
        for record in clause.outputs:
            for item in record.items:
                if item.expr is not None:
                    for label in sorted(reads(item.expr) - pattern):
                        out.append(Diagnostic(
                            "warning", item.span,
                            f"filter output reads {_kind(label)} '{label}', which its pattern does not name"))
                elif item.source is not None and not item.source.startswith("<") and item.source not in pattern:
                    out.append(Diagnostic(
                        "warning", item.span,
                        f"filter output reads field '{item.source}', which its pattern does not name"))


def _pattern_warnings(patterns, what: str, out: list[Diagnostic]) -> None:
    for p in patterns:
        if p.guard is None:
            continue
        for label in sorted(reads(p.guard) - p.pattern.label_set()):
            out.append(Diagnostic(
                "warning", _start(p.guard) or p.span,
                f"{what} pattern guard reads {_kind(label)} '{label}', which its pattern does not name"))


def _start(expr):
    """The span of the leftmost token of a tag expression (binary nodes point at their operator)."""
    while True:
        if isinstance(expr, Binary):
            expr = expr.left
        elif isinstance(expr, Cond):
            expr = expr.test
        else:
            return expr.span


def _kind(label: str) -> str:
    return "binding tag" if label.startswith("<#") else "tag"
