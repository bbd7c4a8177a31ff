"""From S-Net source text to the static property graph: the front end's driver.

The pipeline, each stage in its own module and each only looking forward::

    text --lexer/parser--> AST --resolve--> scopes --TypeChecker--> types
                                                  \\--warnings W1-W5
         --select the run net--> _GraphBuilder --> PropertyGraph

* Syntax errors stop at the first one (an LALR parser cannot recover
  usefully); name, label and cycle errors are all collected, sorted by
  position, and raised together in one :class:`SNetCompileError`, together
  with uses of declaration-only nets inside the net to run.
* The graph is a tree: each occurrence of a named net becomes its own
  :class:`NetNode` subtree, because every occurrence is a separate instance
  (language.md §4).  Ids are dense and given in preorder, so a parent's id is
  smaller than its children's.  Types are memoised per AST node, so a net
  used many times is typed once even though it is expanded every time.
* ``A @ n`` is a :class:`NetNode` with ``placement=n``: the occurrence's own
  NetNode when ``A`` names a net, else a NetNode named ``"@n"`` around ``A``.
* Serial chains are flattened (``..`` is associative); parallel chains are
  kept as written (``(A | B) | C`` nests two ParallelNodes).

Net selection (interfaces.md ``--net``): the named top-level net, else the
only top-level net, else the one named after the file's stem, else a usage
error listing them.
"""

from __future__ import annotations

import difflib

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from snet.errors import Diagnostic, SNetCompileError, SNetUsageError
from snet.gcpause import gc_paused
from snet.inlinecode import INLINE_LANGUAGE
from snet.options import CompileOptions
from snet.source import Source
from snet.spg.linking import Linker, not_found_note
from snet.spg.nodes import (BoxDeclaration, BoxNode, FeedbackNode, FilterClause, FilterItem, FilterNode,
                            IdentityNode, NetNode, Node, ParallelNode, Pattern, PropertyGraph, SerialNode,
                            SplitNode, StarNode, SyncNode)
from snet.syntax import ast
from snet.syntax.parser import parse
from snet.syntax.reading import read_program
from snet.typesys.metadata import MetadataIndex
from snet.typesys.scopes import Resolution, Scope, net_references, resolve
from snet.typesys.types import TypeChecker, TypeInfo
from snet.typesys.warnings import find_warnings

N = TypeVar("N", bound=Node)

# Every use of a net is expanded into its own subtree, so nets that use each
# other twice per level grow exponentially; stop with a clear error instead
# of exhausting memory.
MAX_NODES = 2_000_000


@dataclass(frozen=True, slots=True, eq=False)
class Analysis:
    """A program that parsed and resolved without errors, with its types and warnings."""

    source: Source
    program: ast.Program
    resolution: Resolution
    checker: TypeChecker
    warnings: tuple[Diagnostic, ...]
    linked: tuple[str, ...] = ()  # files bound to declared-only nets (rts dialect)

    def net_signatures(self) -> list[tuple[str, int, str]]:
        """``(name, depth, signature)`` for every net of the file, in source order."""
        return [(net.name, depth, self.checker.signature_text(net)) for net, depth in self.resolution.nets()]

    def top_nets(self) -> list[ast.NetDef]:
        return [d for d in self.program.definitions if isinstance(d, ast.NetDef)]


def position_key(d: Diagnostic) -> tuple[int, int]:
    return (d.span.line, d.span.column) if d.span is not None else (0, 0)


DEFAULT_OPTIONS = CompileOptions()


def analyse(text: str, filename: str = "<string>", net: str | None = None,
            require_run: bool = True, options: CompileOptions | None = None) -> tuple[Analysis, ast.NetDef | None]:
    """Parse, resolve and type `text`, and pick the net to run.

    ``options`` chooses the dialect; in the rts dialect, declared-only nets
    are bound from other files first (:mod:`snet.spg.linking`).

    Returns:
        The analysis and the selected top-level net.  With ``require_run``
        false, a file with several top-level nets and no ``net`` to choose
        is no error: the net is then None (for listing every net).

    Raises:
        SNetSyntaxError: on the first lexical or syntax error.
        SNetCompileError: every name, label, cycle and declaration-only error.
        SNetUsageError: no net, or an ambiguous or unknown ``net``.
    """
    options = options or DEFAULT_OPTIONS
    source = Source(filename, text)
    program = parse(text, filename, source, options.dialect)
    linked: tuple[str, ...] = ()
    if options.rts:
        linker = Linker(options.net_path)
        program = linker.link(program, filename)
        linked = tuple(linker.linked)
    res = resolve(program, shadowing=options.rts)
    errors = list(res.errors)
    top = [d for d in program.definitions if isinstance(d, ast.NetDef)]
    chosen: ast.NetDef | None = None
    selection_error: SNetUsageError | None = None
    try:
        chosen = select_net(top, filename, net)
    except SNetUsageError as e:
        if require_run or net is not None or len(top) < 2:
            selection_error = e
    if chosen is not None and not errors:
        errors.extend(_declaration_only_uses(res, chosen, options, filename))
    if errors:
        raise SNetCompileError(sorted(errors, key=position_key))
    if selection_error is not None:
        raise selection_error
    checker = TypeChecker(res)
    found = find_warnings(res, checker)
    if options.rts:
        found.extend(_foreign_inline_code(res))
    warnings = tuple(sorted(found, key=position_key))
    return Analysis(source, program, res, checker, warnings, linked), chosen


def _foreign_inline_code(res: Resolution) -> list[Diagnostic]:
    """Inline code in another language than Python is not run: say so where it is."""
    return [Diagnostic("warning", d.inline.span, f"the inline {d.inline.language} code of box '{d.name}' is not "
                                                 f"run; the box is bound from the box modules"
                                                 f"{_language_hint(d.inline.language)}")
            for d, _ in res.definitions()
            if isinstance(d, ast.BoxDecl) and d.inline is not None and d.inline.language.lower() != INLINE_LANGUAGE]


def _language_hint(language: str) -> str:
    """``"; did you mean 'python'?"`` for a language name that looks like a misspelt ``python``."""
    close = difflib.SequenceMatcher(None, language.lower(), INLINE_LANGUAGE).ratio() >= 0.6
    return f"; did you mean '{INLINE_LANGUAGE}'?" if close else ""


def select_net(top: list[ast.NetDef], filename: str, net: str | None) -> ast.NetDef:
    """The top-level net to run (interfaces.md §1, ``--net``)."""
    names = ", ".join(d.name for d in top)
    if net is not None:
        for d in top:
            if d.name == net:
                return d
        close = difflib.get_close_matches(net, [d.name for d in top], n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise SNetUsageError(f"{filename}: no top-level net '{net}' ({hint}top-level nets: {names or 'none'})")
    if not top:
        raise SNetUsageError(f"{filename}: the file defines no top-level net")
    if len(top) == 1:
        return top[0]
    stem = Path(filename).stem
    for d in top:
        if d.name == stem:
            return d
    raise SNetUsageError(f"{filename}: several top-level nets ({names}) and none is named '{stem}'; "
                         f"choose one with --net NAME")


def _declaration_only_uses(res: Resolution, run: ast.NetDef, options: CompileOptions = DEFAULT_OPTIONS,
                           filename: str = "<string>") -> list[Diagnostic]:
    """Every use of a declaration-only net inside the net to run (by definition, each once).

    In the rts dialect the message also says where ``NAME.snet`` was looked for.
    """
    if run.body is None:
        return [Diagnostic("error", run.span, f"net '{run.name}' is declared only (it has no connect "
                                              f"expression) and cannot run")]
    out: list[Diagnostic] = []
    seen = {id(run)}
    stack = [run]
    while stack:
        net = stack.pop()
        scope = res.net_scope(net)
        for ref in net_references(net.body):
            target = scope.lookup(ref.name)
            if not isinstance(target, ast.NetDef):
                continue
            if target.body is None:
                note = not_found_note(ref.name, filename, options.net_path) if options.rts else ""
                out.append(Diagnostic("error", ref.span, f"net '{ref.name}' is declared only (it has no "
                                                          f"connect expression); the net to run uses it here"
                                                          f"{note}"))
            elif id(target) not in seen:
                seen.add(id(target))
                stack.append(target)
    return out


def compile_source(text: str, filename: str = "<string>", net: str | None = None,
                   options: CompileOptions | None = None) -> PropertyGraph:
    """Compile S-Net source text to the property graph of its run net.

    Args:
        text: the program.
        filename: the name used in messages (and for the default net).
        net: the top-level net to run (default: see :func:`select_net`).
        options: the dialect and net path (default: the standard dialect).

    Raises:
        SNetCompileError: syntax (first), name, label, cycle errors (all).
        SNetUsageError: no net, or an ambiguous or unknown ``net``.
    """
    graph = compile_analysis(text, filename, net, options=options)[1]
    assert graph is not None, "require_run: a net was chosen, or SNetUsageError was raised"
    return graph


def compile_analysis(text: str, filename: str = "<string>", net: str | None = None,
                     require_run: bool = True,
                     options: CompileOptions | None = None) -> tuple[Analysis, PropertyGraph | None]:
    """:func:`analyse` and :func:`build_graph` together: the analysis and the run net's graph
    (None when ``require_run`` is false and no net was chosen among several)."""
    try:
        with gc_paused():
            analysis, run = analyse(text, filename, net, require_run, options)
            return analysis, (build_graph(analysis, run) if run is not None else None)
    except RecursionError:
        # The passes after the parser recurse over the expression tree.
        raise SNetCompileError([Diagnostic("error", None, f"{filename}: the program is nested too deeply "
                                                          f"to compile")]) from None


def compile_file(path: str, net: str | None = None, options: CompileOptions | None = None) -> PropertyGraph:
    """:func:`compile_source` on a file; an unreadable file is a usage error."""
    try:
        text = read_program(path)  # a byte-order mark is skipped; bytes not UTF-8 are a positioned error
    except OSError as e:
        raise SNetUsageError(f"cannot read {path}: {e}") from None
    return compile_source(text, str(path), net, options)


def build_graph(analysis: Analysis, run: ast.NetDef) -> PropertyGraph:
    """The property graph of net `run` (a top-level net of the analysed program)."""
    builder = _GraphBuilder(analysis.resolution, analysis.checker)
    try:
        root = builder.net_occurrence(run, run.span, None)
    except _TooLarge:
        raise SNetCompileError([Diagnostic(
            "error", run.span, f"net '{run.name}' expands to more than {MAX_NODES} constructs (every use of a "
                               f"net is a separate instance); use *, ! or \\ for repeated structure")]) from None
    boxes = tuple(
        BoxDeclaration(d.name, () if d.inputs is None else tuple(label.text for label in d.inputs),
                       tuple(tuple(label.text for label in v) for v in d.outputs), d.inputs is None, d.span,
                       _inline(d))
        for d, _ in analysis.resolution.definitions() if isinstance(d, ast.BoxDecl))
    return PropertyGraph(
        root=root, nodes=builder.built(), net_name=run.name,
        signature=analysis.checker.signature_text(run), boxes=boxes, source=analysis.source,
        warnings=tuple(w.render() for w in analysis.warnings), linked=analysis.linked)


def _inline(box: ast.BoxDecl) -> tuple[str, int, int] | None:
    inline = box.inline
    if inline is None or inline.language.lower() != INLINE_LANGUAGE:
        return None
    return inline.code, inline.line, inline.column


class _TooLarge(Exception):
    pass


def _flags(children) -> dict:
    return {
        "stateful": any(c.stateful for c in children),
        "has_boxes": any(c.has_boxes for c in children),
        "has_initialisers": any(c.has_initialisers for c in children),
    }


def _patterns(guarded) -> tuple[Pattern, ...]:
    return tuple(Pattern(g.pattern.label_set(), g.guard) for g in guarded)


class _GraphBuilder:
    """Expands the run net into the node tree; ids in preorder."""

    def __init__(self, res: Resolution, checker: TypeChecker) -> None:
        self.res = res
        self.checker = checker
        self.nodes: list[Node | None] = []
        self._metadata: dict[tuple[int, int], dict[str, str]] = {}
        self._metadata_index = MetadataIndex()

    def _new_id(self) -> int:
        if len(self.nodes) >= MAX_NODES:
            raise _TooLarge()
        self.nodes.append(None)
        return len(self.nodes) - 1

    def _add(self, node: N) -> N:
        self.nodes[node.id] = node
        return node

    def built(self) -> tuple[Node, ...]:
        """Every node, by id, once the root is built (each id given out has its node by then)."""
        nodes = tuple(n for n in self.nodes if n is not None)
        assert len(nodes) == len(self.nodes), "a node id was given out and no node added for it"
        return nodes

    def net_occurrence(self, net: ast.NetDef, span, placement: int | None) -> NetNode:
        nid = self._new_id()
        info = self.checker.net_type(net)
        body = self.expr(net.body, self.res.net_scope(net))
        return self._add(NetNode(id=nid, span=span, in_type=info.in_type, out_type=info.out_type,
                                 name=net.name, body=body, placement=placement, **_flags((body,))))

    def box_occurrence(self, box: ast.BoxDecl, span, scope: Scope) -> BoxNode:
        info = self.checker.box_type(box)
        key = (id(box), id(scope))
        metadata = self._metadata.get(key)
        if metadata is None:
            metadata = self._metadata[key] = self._metadata_index.metadata(box, scope)
        return self._add(BoxNode(
            id=self._new_id(), span=span, in_type=info.in_type, out_type=info.out_type,
            has_boxes=True, has_initialisers=box.inputs is None, name=box.name,
            arguments=() if box.inputs is None else tuple(label.text for label in box.inputs),
            variants=tuple(tuple(label.text for label in v) for v in box.outputs),
            initialiser=box.inputs is None, metadata=metadata))

    def expr(self, e, scope: Scope) -> Node:
        if isinstance(e, ast.NameRef):
            target = scope.lookup(e.name)
            if isinstance(target, ast.BoxDecl):
                return self.box_occurrence(target, e.span, scope)
            return self.net_occurrence(scope.resolved(e.name, ast.NetDef), e.span, None)
        info: TypeInfo = self.checker.infer(e, scope)
        common = {"span": e.span, "in_type": info.in_type, "out_type": info.out_type}
        if isinstance(e, ast.Identity):
            return self._add(IdentityNode(id=self._new_id(), **common))
        if isinstance(e, ast.Filter):
            clauses = tuple(
                FilterClause(c.guard, tuple(tuple(FilterItem(i.label, i.source, i.expr) for i in r.items)
                                            for r in c.outputs))
                for c in e.clauses)
            return self._add(FilterNode(id=self._new_id(), pattern=e.pattern.label_set(), clauses=clauses,
                                        **common))
        if isinstance(e, ast.SyncCell):
            return self._add(SyncNode(id=self._new_id(), patterns=_patterns(e.patterns), stateful=True,
                                      **common))
        if isinstance(e, ast.Placement):
            placed = e.operand
            if isinstance(placed, ast.NameRef):
                target = scope.lookup(placed.name)
                if isinstance(target, ast.NetDef):
                    return self.net_occurrence(target, placed.span, e.machine)
            nid = self._new_id()
            body = self.expr(placed, scope)
            return self._add(NetNode(id=nid, name=f"@{e.machine}", body=body, placement=e.machine,
                                     **common, **_flags((body,))))
        nid = self._new_id()
        if isinstance(e, ast.Serial):
            stages = tuple(self.expr(s, scope) for s in _flatten_serial(e))
            return self._add(SerialNode(id=nid, stages=stages, **common, **_flags(stages)))
        if isinstance(e, ast.Parallel):
            branches = tuple(self.expr(b, scope) for b in e.branches)
            return self._add(ParallelNode(id=nid, branches=branches, routes=tuple(b.in_type for b in branches),
                                          deterministic=e.deterministic, **common, **_flags(branches)))
        if isinstance(e, ast.Star):
            operand = self.expr(e.operand, scope)
            return self._add(StarNode(id=nid, operand=operand, exits=_patterns(e.patterns),
                                      deterministic=e.deterministic, **common, **_flags((operand,))))
        if isinstance(e, ast.Split):
            operand = self.expr(e.operand, scope)
            return self._add(SplitNode(id=nid, operand=operand, tag=e.tag.text,
                                       hi_tag=e.hi_tag.text if e.hi_tag is not None else None,
                                       placed=e.placed, deterministic=e.deterministic,
                                       **common, **_flags((operand,))))
        if isinstance(e, ast.Feedback):
            operand = self.expr(e.operand, scope)
            return self._add(FeedbackNode(id=nid, operand=operand, back=_patterns(e.patterns),
                                          **common, **_flags((operand,))))
        raise TypeError(f"not a connect expression: {e!r}")


def _flatten_serial(e: ast.Serial) -> list:
    out = []
    for stage in e.stages:
        if isinstance(stage, ast.Serial):
            out.extend(_flatten_serial(stage))
        else:
            out.append(stage)
    return out
