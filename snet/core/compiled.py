"""Patterns, filters and split keys compiled to Python functions.

A construct's meaning is fixed by the property graph; applying it per record
should cost no more than the few dict operations it needs.  So each filter
and each pattern list becomes one generated Python function (built once per
node and shared by every instance and every worker), whose body is the
construct spelled out: membership tests, the guard expressions from
:func:`snet.tagexpr.to_python`, dict displays for the output records.

Generated code reads labels with ``r[label]``; a ``KeyError`` there can only
mean an absent label, which the wrapper turns into the positioned run-time
error of language.md §10.  Division by zero and a product past the tag-size
bound arrive as :class:`snet.tagexpr.TagExpressionError` and are reported
the same way.

Alternatives considered: interpreting the expression trees per record
(:func:`snet.tagexpr.evaluate`, kept as the executable definition and used by
the tests as an oracle) costs 5-20x more per filter application.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Protocol, Sequence, cast

from snet.core.boxes import filter_output
from snet.errors import SNetRuntimeError
from snet.records import describe, format_labels, is_tag_like, label_kind, BTAG, FIELD
from snet.source import Span
from snet.spg.nodes import FilterClause, FilterItem, FilterNode, Pattern, SplitNode
from snet.tagexpr import (Binary, Cond, Const, Expr, Ref, TagExpressionError, Unary, generated_globals, to_python,
                          to_python_test)

Record = dict


def _build(name: str, source: str, spans: list[Span | None]) -> Callable:
    scope = generated_globals(spans)
    exec(compile(source, f"<snet {name}>", "exec"), scope)  # code generated from the graph only
    return scope[name]


def absent_label_error(what: str, span: Span | None, label: str, record: Record) -> SNetRuntimeError:
    """The error for reading a label the record lacks."""
    if label_kind(label) == FIELD:
        return SNetRuntimeError(f"{what} copies field '{label}', which record {describe(record)} lacks", span)
    kind = "binding tag" if label.startswith("<#") else "tag"
    return SNetRuntimeError(f"{what} reads absent {kind} {label} of record {describe(record)}", span)


def arithmetic_error(what: str, span: Span | None, error: TagExpressionError) -> SNetRuntimeError:
    """The error for a division by zero or a too large product, naming the operator's position."""
    where = f" (expression at {error.span.location})" if error.span is not None else ""
    return SNetRuntimeError(f"{what}: {error}{where}", span)


def expression_error(what: str, span: Span | None, error: KeyError | TagExpressionError,
                     record: Record) -> SNetRuntimeError:
    """The error for a KeyError (an absent label) or TagExpressionError (a division by zero, a too large product) out of generated code."""
    if isinstance(error, KeyError):
        return absent_label_error(what, span, error.args[0], record)
    return arithmetic_error(what, span, error)


class PatternMatcher:
    """The patterns of a star exit, a feedback loop or a synchro-cell.

    ``first(record)`` returns the index of the first pattern (in the order
    written) that the record matches with its guard holding, or -1.
    ``all_empty(record, empty)`` returns the indices among ``empty`` whose
    pattern and guard hold (a synchro-cell evaluates every empty slot).
    """

    __slots__ = ("first", "_each", "what", "span", "patterns", "raw_first", "raw_all", "labels")

    #: the functions built on first use (one compile for all of them)
    _BUILT = frozenset(("first", "_each", "raw_first", "raw_all"))

    def __init__(self, patterns: Sequence[Pattern], what: str, span: Span | None):
        self.patterns = tuple(patterns)
        self.what = what
        self.span = span
        # Patterns without guards: each pattern's labels, which compiled callers test themselves
        # (no Python call per record, and no function built); None when some pattern has a guard.
        self.labels = None if any(p.guard is not None for p in self.patterns) else \
            tuple(tuple(sorted(p.labels)) for p in self.patterns)

    def __getattr__(self, name: str):
        # Only reached for a slot not set yet: the generated functions, built when first asked for.
        if name not in PatternMatcher._BUILT:
            raise AttributeError(name)
        self._build()
        return object.__getattribute__(self, name)

    def _build(self) -> None:
        spans: list[Span | None] = []
        tests = []
        for p in self.patterns:
            test = " and ".join(f"{label!r} in r" for label in sorted(p.labels)) or "True"
            if p.guard is not None:
                test = f"({test}) and {to_python_test(p.guard, spans)}"
            tests.append(test)
        lines = ["def _first(r):"]
        lines += [f"    if {t}:\n        return {i}" for i, t in enumerate(tests)]
        lines.append("    return -1")
        lines += ["def _all(r):", "    out = []"]
        lines += [f"    if {t}:\n        out.append({i})" for i, t in enumerate(tests)]
        lines.append("    return out")
        for i, t in enumerate(tests):
            lines.append(f"def _t{i}(r):\n    return bool({t})")
        scope = generated_globals(spans)
        exec(compile("\n".join(lines), "<snet patterns>", "exec"), scope)  # code generated from the graph only
        first = scope["_first"]
        what, span = self.what, self.span
        self._each = [scope[f"_t{i}"] for i in range(len(tests))]
        # For callers in the FRONT runtime that turn KeyError and TagExpressionError into `error(...)`
        # themselves (one Python frame less per test): the first pattern matched, and all of them.
        self.raw_first = first
        self.raw_all = scope["_all"]

        def checked_first(record: Record, _first=first) -> int:
            try:
                return _first(record)
            except (KeyError, TagExpressionError) as e:
                raise expression_error(what, span, e, record) from None

        self.first = checked_first

    def error(self, error: KeyError | TagExpressionError, record: Record) -> SNetRuntimeError:
        """The error to raise for a KeyError or TagExpressionError out of ``raw_first`` or ``raw_all``."""
        return expression_error(self.what, self.span, error, record)

    def matching(self, record: Record, candidates: Sequence[int]) -> list[int]:
        """The candidate indices whose pattern (and guard) the record matches."""
        try:
            return [i for i in candidates if self._each[i](record)]
        except (KeyError, TagExpressionError) as e:
            raise expression_error(self.what, self.span, e, record) from None


class CompiledFilter(Protocol):
    """A filter's operator: ``apply(record)`` is the list of output records.

    The FRONT runtime calls the generated function ``raw`` itself and turns
    a KeyError or TagExpressionError into ``error(e, record)``: one Python
    frame less per record.  ``raw`` gives a clause's one output record as
    itself (a new dict, which nothing else holds), no list around it; a
    list where a clause has none or several.  (A function carrying the two as attributes: a
    call costs what a plain function call costs, which a class with
    ``__call__`` does not.)
    """

    raw: Callable[[Record], Record | list[Record]]
    error: Callable[[KeyError | TagExpressionError, Record], SNetRuntimeError]
    node: FilterNode  # what it was compiled from (for a composition: the filter it stands for)
    parts: tuple[Callable[[Record], list[Record]], ...]  # the filters it does the work of, each with its errors
    composed: dict  # the compositions made with it: the next filter -> the composition, or None

    def __call__(self, record: Record, /) -> list[Record]: ...


def compile_filter(node: FilterNode, what: str = "filter") -> CompiledFilter:
    """The operator from an input record to the list of output records.

    Follows language.md §6.5: guards in order, the selected outputs built
    from the input record (simultaneous assignment), then inheritance of
    every field and tag not in the pattern and not set explicitly; binding
    tags are never inherited; the pattern itself is not tested.
    """
    spans: list[Span | None] = []
    pattern = frozenset(node.pattern)
    lines = ["def _filter(r):"]

    def output_code(items) -> str:
        parts = []
        for item in items:
            if item.expr is not None:
                value = to_python(item.expr, spans)
            elif is_tag_like(item.label):
                value = f"r.get({item.source!r}, 0)"  # bare <t>: copy, or 0 if absent
            else:
                value = f"r[{item.source!r}]"
            parts.append(f"{item.label!r}: {value}")
        return "{" + ", ".join(parts) + "}"

    def clause_code(outputs, indent: str) -> list[str]:
        if not outputs:
            return [f"{indent}return []"]
        # The explicit part is computed first, all from the input record;
        # inherited labels are added under it, so explicit labels win
        # (snet.core.boxes.filter_output, compiled: one copy of the record's
        # table; a record with no label outside the pattern inherits
        # nothing, and its outputs are the explicit parts as they are, often
        # the case in networks of filters).
        code = []
        for n, items in enumerate(outputs):
            code.append(f"{indent}_o{n} = {output_code(items)}")
        if len(outputs) == 1:  # (one output record as itself, no list: see CompiledFilter)
            code.append(f"{indent}return _inherit(r, _P, _L, _o0)")
        else:
            code.append(f"{indent}return [{', '.join(f'_inherit(r, _P, _L, _o{n})' for n in range(len(outputs)))}]")
        return code

    first = True
    for clause in node.clauses:
        if clause.guard is None:
            indent = "        " if not first else "    "
            if not first:
                lines.append("    else:")
            lines.extend(clause_code(clause.outputs, indent))
            break
        keyword = "if" if first else "elif"
        lines.append(f"    {keyword} {to_python_test(clause.guard, spans)}:")
        lines.extend(clause_code(clause.outputs, "        "))
        first = False
    else:  # every clause guarded: cannot come from the grammar, but stay total
        lines.append("    return []")
    source = "\n".join(lines)
    scope_fn = _build_filter(source, spans, pattern)
    span = node.span

    def apply(record: Record, _fn: Callable[[Record], Record | list[Record]] = scope_fn) -> list[Record]:
        try:
            outs = _fn(record)
        except (KeyError, TagExpressionError) as e:
            raise expression_error(what, span, e, record) from None
        if isinstance(outs, dict):  # a clause's one output, as itself
            return [outs]
        return outs

    def error(e: KeyError | TagExpressionError, record: Record) -> SNetRuntimeError:
        return expression_error(what, span, e, record)

    compiled = cast(CompiledFilter, apply)  # the function, given the attributes the protocol names
    compiled.raw = scope_fn
    compiled.error = error
    compiled.node = node
    compiled.parts = (apply,)
    compiled.composed = {}
    return compiled


class _NotOne(Exception):
    """Raised inside :func:`_composed_node` where two filters cannot be written as one."""


def compose_filters(first: CompiledFilter, second: CompiledFilter) -> CompiledFilter | None:
    """``first .. second`` as one filter, where the two can be written as one; else None (remembered on ``first``).

    A fused chain (FRONT, docs/runtime.md "Fusion") runs two filters in a
    row as the composition: one generated function, one output record.
    Its outputs are the two filters' to the label and in the labels' order;
    where it meets an error (an absent label, a division by zero), the
    filters run again one after the other on the record, so the error is
    the one of the filter that meets it, word for word.
    """
    known = first.composed.get(second, False)
    if known is not False:
        return known
    node = _composed_node(first.node, second.node)
    composed = None
    if node is not None:
        composed = compile_filter(node)
        parts = first.parts + second.parts
        span = first.node.span

        def error(e: KeyError | TagExpressionError, record: Record) -> SNetRuntimeError:
            records = [record]
            for part in parts:  # the filters one after the other: the one that meets the error raises it
                records = [out for r in records for out in part(r)]
            return expression_error("filter", span, e, record)  # (not reached: filters are functions)

        composed.error = error
        composed.parts = parts
    first.composed[second] = composed
    return composed


def _composed_node(a: FilterNode, b: FilterNode) -> FilterNode | None:
    """The filter that does ``a .. b`` (language.md §6.5), or None where one filter cannot say it.

    Both must be one unguarded clause with one output record.  ``b``'s
    expressions read the record ``a`` made: a label ``a`` sets is replaced by
    ``a``'s expression for it (symbolically, over ``a``'s input), a label it
    passes on is read from its input as it is.  The composition is refused
    where ``b`` reads what ``a``'s output lacks though its input has it (a
    label ``a`` consumes, a binding tag ``a`` does not set) or a tag ``a``
    copies bare (copied, or 0 if absent: no expression says that), and where
    an output of ``a`` that could fail (anything but a constant) would
    neither stay nor be read, so that an error the filters meet one by one
    is met by the composition too.  What the composition inherits is its
    input's labels outside both patterns; what it sets is ``a``'s output
    that ``b`` passes on (in ``a``'s order), with ``b``'s output over it:
    the labels and their order are what ``a`` then ``b`` give.
    """
    for f in (a, b):
        if len(f.clauses) != 1 or f.clauses[0].guard is not None or len(f.clauses[0].outputs) != 1:
            return None
    made = {item.label: item for item in a.clauses[0].outputs[0]}
    lacks = a.pattern - made.keys()  # what a's output lacks though a's input may have it
    read: set[str] = set()

    def reads(label: str) -> FilterItem | None:
        item = made.get(label)
        if item is None and (label in lacks or label_kind(label) == BTAG):
            raise _NotOne
        if item is not None:
            read.add(label)
        return item

    def over(e: Expr) -> Expr:
        if isinstance(e, Ref):
            item = reads(e.label)
            if item is None:
                return e
            if item.expr is None:  # a bare tag: copied, or 0 if absent
                raise _NotOne
            return item.expr
        if isinstance(e, Unary):
            return dataclasses.replace(e, operand=over(e.operand))
        if isinstance(e, Binary):
            return dataclasses.replace(e, left=over(e.left), right=over(e.right))
        if isinstance(e, Cond):
            return dataclasses.replace(e, test=over(e.test), then=over(e.then), otherwise=over(e.otherwise))
        return e

    items = {label: item for label, item in made.items() if label not in b.pattern and label_kind(label) != BTAG}
    try:
        for item in b.clauses[0].outputs[0]:
            if item.expr is not None:
                items[item.label] = FilterItem(item.label, expr=over(item.expr))
            else:  # a field copied (renamed or not), or a bare tag
                assert item.source is not None
                source = reads(item.source)
                items[item.label] = item if source is None else \
                    FilterItem(item.label, source=source.source, expr=source.expr)
    except _NotOne:
        return None
    for label, item in made.items():
        if items.get(label) is not item and label not in read and not isinstance(item.expr, Const):
            return None  # computed, then dropped unread: its error would be lost
    return dataclasses.replace(a, pattern=a.pattern | b.pattern,
                               clauses=(FilterClause(None, (tuple(items.values()),)),))


def _build_filter(source: str, spans: list[Span | None],
                  pattern: frozenset[str]) -> Callable[[Record], Record | list[Record]]:
    scope = generated_globals(spans)
    scope["_P"] = pattern
    scope["_L"] = tuple(sorted(pattern))
    scope["_inherit"] = filter_output
    exec(compile(source, "<snet filter>", "exec"), scope)
    return scope["_filter"]


class SplitKeys:
    """The replica values a record selects at an index split (language.md §6.10)."""

    __slots__ = ("tag", "hi_tag", "span", "what")

    def __init__(self, node: SplitNode):
        self.tag = node.tag
        self.hi_tag = node.hi_tag
        self.span = node.span
        self.what = "split"

    def values(self, record: Record) -> range:
        """``range(v, v+1)``, or ``range(lo, hi+1)`` for a range split (empty if hi < lo)."""
        try:
            lo = record[self.tag]
            hi = record[self.hi_tag] if self.hi_tag is not None else lo
        except KeyError as e:
            raise SNetRuntimeError(
                f"split cannot route record {describe(record)}: it lacks {e.args[0]}", self.span) from None
        return range(lo, hi + 1)

    def value(self, record: Record) -> int:
        """The single replica value of a plain (non-range) split."""
        try:
            return record[self.tag]
        except KeyError:
            raise SNetRuntimeError(
                f"split cannot route record {describe(record)}: it lacks {self.tag}", self.span) from None


class Router:
    """Best-match routing of a parallel combinator (language.md §6.7).

    The decision depends only on the record's label set, so it is cached per
    label set; networks see few distinct shapes, and the cache turns routing
    into one ``frozenset`` and one dict lookup.  ``cache`` (label set ->
    branch, -1 for none) only grows; the FRONT runtime reads it before calling
    :meth:`route`, which fills it and raises the routing error.
    """

    __slots__ = ("routes", "span", "what", "cache")

    def __init__(self, routes: Sequence[Sequence[frozenset]], span: Span | None, what: str = "parallel"):
        self.routes = tuple(tuple(frozenset(v) for v in r) for r in routes)
        self.span = span
        self.what = what
        self.cache: dict[frozenset, int] = {}

    def decide(self, labels: frozenset) -> int:
        """The branch index for a record with these labels, or -1."""
        btags = {k for k in labels if k.startswith("<#")}
        best, best_score = -1, -1
        for i, variants in enumerate(self.routes):
            for v in variants:
                if v <= labels and btags <= v and len(v) > best_score:
                    best, best_score = i, len(v)
        return best

    def route(self, record: Record) -> int:
        labels = frozenset(record)
        branch = self.cache.get(labels)
        if branch is None:
            branch = self.decide(labels)
            if len(self.cache) < 4096:  # shapes are few; bound the cache anyway
                self.cache[labels] = branch
        if branch < 0:
            accepted = " | ".join(format_labels(v) for r in self.routes for v in r) or "nothing"
            raise SNetRuntimeError(
                f"{self.what} cannot route record {describe(record)}: branches accept {accepted}", self.span)
        return branch

