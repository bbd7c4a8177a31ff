"""Warnings that catch slips: labels that cannot meet, found from the record flow.

Rules (docs/frontend.md, "Warnings that catch slips"):

* **S1** a box use or filter that records made inside the net reach, none of
  which carries every label of the box input or filter pattern (a record
  straight from a declared input is W1's business);
* **S2** a branch of ``|``/``||`` (with input variants) that no record
  reaching the combinator selects;
* **S3** a box or filter output variant whose records are taken by nothing:
  they never reach the output of a top-level net, and whatever they do
  reach refuses them (a box lacking its input labels, a parallel with no
  branch for them, a split lacking its tag); not reported when the refusing
  box is reported by S1;
* **S4** a stage of a serial chain needs a label that nothing before it in
  the chain produces, while an earlier stage produces a near label that no
  later stage uses (in a signed net S1 says it already);
* **S5** a label that a box or filter emits and nothing in the file reads
  (and no top-level net's In or Out type names), while a label of the same
  kind with a near name is read somewhere but is produced by nothing and is
  in no top-level net's input: a misspelt producer or consumer.  Without such a near label, an unread label is no slip: it flows
  on to the net's output by inheritance, where the user may want it.  Not
  repeated for a label that S1, S2 or S4 already suggested.

S1-S3 come from :mod:`snet.typesys.flow`; each names the labels and, where a
label of the right kind is near (:func:`difflib.get_close_matches`), adds
"did you mean".
"""

from __future__ import annotations

import difflib
import threading

from snet.errors import Diagnostic
from snet.records import format_labels
from snet.syntax import ast
from snet.tagexpr import reads
from snet.typesys.flow import Flow, GiveUp
from snet.typesys.scopes import Resolution, net_references
from snet.typesys.types import EVERY, TypeChecker

SHOWN = 3  # record variants quoted in one message


def find_slips(res: Resolution, checker: TypeChecker) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    _hints.budget = HINT_BUDGET
    _hints.given = set()
    _hints.split = {}  # label -> what _split makes of it, for this check
    top = [d for d in res.program.definitions if isinstance(d, ast.NetDef) and d.body is not None]
    total = None
    shared: dict = {}
    for net in _roots(res, top):
        flow = Flow(res, checker, shared)
        try:
            _analyse_top(flow, net, checker)
        except (GiveUp, RecursionError):
            for key in flow.added:  # their evidence is dropped, so they must be analysed again
                shared.pop(key, None)
            continue
        if total is None:
            total = flow.ev
        else:
            total.merge(flow.ev)
    flagged: set = set()
    if total is not None:
        _flow_warnings(total, out, flagged)
    uses = _Uses(res, checker)
    _serial_slips(uses.chains, checker, out, flagged)
    _unused_outputs(uses, checker, top, out)
    return out


_WRAPPERS = frozenset((ast.Star, ast.Feedback, ast.Split, ast.Placement))  # one operand each


class _Uses:
    """One walk over every net body for S4 and S5: the serial chains with the scope their names
    resolve in, the labels read anywhere (box inputs, patterns, tag expressions, split tags, and
    what net signatures and type definitions name), the boxes used and the labels filters emit."""

    def __init__(self, res: Resolution, checker: TypeChecker) -> None:
        self.chains: list = []  # (serial, scope)
        self.used: set = set()
        self.boxes: dict = {}  # id -> box declaration (hashing a declaration would hash its whole tree)
        self.emitters: list = []  # (label, span, "filter" or the box declaration)
        named = self.used  # with the labels that net signatures and type definitions name
        for d, _scope in res.definitions():
            if isinstance(d, ast.NetDef):
                if d.signature is not None:
                    for m in checker.declared(d):
                        named.update(*m.inputs)
                        if m.outputs is not None:
                            named.update(*m.outputs)
                if d.body is not None:
                    self._walk(d.body, res.net_scope(d))
            elif isinstance(d, ast.TypeDef):
                for v in checker.type_def(d):
                    named |= v

    def _walk(self, expr, scope) -> None:
        used, boxes, chains = self.used, self.boxes, self.chains
        stack = [expr]
        while stack:
            e = stack.pop()
            kind = type(e)
            if kind is ast.NameRef:
                target = scope.lookup(e.name)
                if type(target) is ast.BoxDecl and id(target) not in boxes:
                    boxes[id(target)] = target
                    if target.inputs is not None:
                        used.update(label.text for label in target.inputs)
            elif kind is ast.Serial:
                chains.append((e, scope))
                stack.extend(e.stages)
            elif kind is ast.Parallel:
                stack.extend(e.branches)
            elif kind is ast.Filter:
                self._filter(e)
            else:
                if kind is ast.SyncCell or kind is ast.Star or kind is ast.Feedback:
                    for p in e.patterns:
                        used |= p.pattern.label_set()
                        if p.guard is not None:
                            used |= reads(p.guard)
                elif kind is ast.Split:
                    used.add(e.tag.text)
                    if e.hi_tag is not None:
                        used.add(e.hi_tag.text)
                if kind in _WRAPPERS:
                    stack.append(e.operand)

    def _filter(self, e) -> None:
        used = self.used
        used |= e.pattern.label_set()
        for clause in e.clauses:
            if clause.guard is not None:
                used |= reads(clause.guard)
            for record in clause.outputs:
                for item in record.items:
                    if item.expr is not None:
                        used |= reads(item.expr)
                    elif item.source is not None:
                        used.add(item.source)
                    if item.source != item.label:
                        self.emitters.append((item.label, item.span, "filter"))


def _roots(res: Resolution, top: list) -> list:
    """The top-level nets that no other top-level net uses: the others are analysed where they are used."""
    used: set = set()
    tops = {id(net) for net in top}
    for net in top:
        scope = res.net_scope(net)
        for ref in net_references(net.body):
            target = scope.lookup(ref.name)
            if target is not net and id(target) in tops:
                used.add(id(target))
    return [net for net in top if id(net) not in used]


def _analyse_top(flow: Flow, net: ast.NetDef, checker: TypeChecker) -> None:
    if net.signature is not None:
        records = {(v, None) for m in checker.declared(net) for v in m.inputs}
    else:
        records = {(v, None) for v in checker.body_type(net).in_type}
    # Whatever reaches the output is written out: a signature is not tested at run time (§6.14).
    for _labels, origin in flow.run_net(net, records):
        if origin is not None:
            flow.ev.accepted.add(origin)


# ---- S1-S3

def _flow_warnings(ev, out: list[Diagnostic], flagged: set) -> None:
    for key, (node, recs) in ev.reached.items():
        if not recs or key in ev.matched or key not in ev.made:
            continue  # (records straight from a net's declared input: W1 reports those at the signature)
        if isinstance(node, ast.NameRef):
            what = f"box '{node.name}'"
            need = ev.needs.get(id(node))
        else:
            what = "filter"
            need = node.pattern.label_set()
        if need is None:
            continue
        flagged.add(id(node))
        out.append(Diagnostic("warning", node.span, _needs_message(what, need, recs)))
    for _key, (par, chosen, ins, recs) in ev.routed.items():
        if not chosen:
            continue
        for i, branch in enumerate(par.branches):
            if i not in chosen and ins[i]:
                out.append(Diagnostic("warning", start_span(branch), _branch_message(i, branch, ins[i], recs)))
    for origin, (node, labels, what) in ev.emitted.items():
        if origin in ev.accepted:
            continue
        refused = ev.rejected.get(origin)
        if refused and refused <= flagged:
            continue  # the box that refuses them is reported already
        out.append(Diagnostic(
            "warning", node.span,
            f"{what} output {format_labels(labels)} is accepted by no later stage and reaches no net output"))




def _needs_message(what: str, need: frozenset, recs) -> str:
    present = frozenset().union(*recs)
    missing = sorted(need - present)
    shown = _variants(recs)
    if missing:
        names = " and ".join(f"'{m}'" for m in missing)
        verb = "carries" if len(missing) == 1 else "carry"
        text = f"{what} needs {names}, which no record reaching it {verb} (it receives {shown})"
        hints = [h for h in (near(m, present - need) for m in missing) if h]
        if hints:
            text += "; did you mean " + " or ".join(f"'{h}'" for h in hints) + "?"
        return text
    return f"{what} needs {format_labels(need)} together, which no record reaching it carries (it receives {shown})"


def _branch_message(i: int, branch, accepts, recs) -> str:
    what = f" ('{branch.name}')" if isinstance(branch, ast.NameRef) else ""
    text = (f"parallel branch {i + 1}{what} accepts {_variants(accepts)}, but no record that reaches the "
            f"parallel selects it (it receives {_variants(recs)})")
    present = frozenset().union(*recs)
    missing = sorted(frozenset().union(*accepts) - present)
    hints = [h for h in (near(m, present) for m in missing) if h]
    if hints:
        text += "; did you mean " + " or ".join(f"'{h}'" for h in hints) + "?"
    return text


def _variants(variants) -> str:
    shown = " | ".join(format_labels(v) for v in sorted(variants, key=sorted)[:SHOWN])
    return shown + (" | ..." if len(variants) > SHOWN else "")


# "Did you mean" compares a label with candidates one by one; a program with very many slips and
# labels would make that quadratic, so each check compares at most this many pairs in all, and
# gives no more hints once they are spent.
HINT_BUDGET = 50_000
# Per thread (programs may be compiled in several threads at once): the pairs left to compare, the
# labels some warning already suggested (S5 does not report them again), and each label's kind and name.
_hints = threading.local()


def near(label: str, candidates) -> str | None:
    """The candidate closest to `label`, if near: same kind (field, tag, binding tag), same first letter,
    and a :class:`difflib.SequenceMatcher` ratio of at least 0.6 between the names."""
    key, name = _split(label)
    names = {}
    budget = _hints.budget
    for c in candidates:
        budget -= 1
        if budget < 0:
            _hints.budget = budget
            return None
        k, n = _split(c)
        if k == key and n != name:
            names[n] = c
    _hints.budget = budget
    if not names:
        return None
    found = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.6)
    if not found:
        return None
    _hints.given.add(names[found[0]])
    return names[found[0]]


def _split(label: str) -> tuple[tuple[str, str], str]:
    """((kind, first letter in lower case), name) of a label: near labels share the first part."""
    cache = _hints.split
    found = cache.get(label)
    if found is None:
        if label.startswith("<#"):
            kind, name = "<#", label[2:-1]
        elif label.startswith("<"):
            kind, name = "<", label[1:-1]
        else:
            kind, name = "", label
        found = cache[label] = ((kind, name[:1].lower()), name)
    return found


def start_span(e):
    """The span of the leftmost name or bracket of a connect expression."""
    while True:
        if isinstance(e, ast.Serial):
            e = e.stages[0]
        elif isinstance(e, ast.Parallel):
            e = e.branches[0]
        elif isinstance(e, (ast.Star, ast.Split, ast.Feedback, ast.Placement)):
            e = e.operand
        else:
            return e.span


# ---- S4

def _serial_slips(chains: list, checker: TypeChecker, out: list[Diagnostic], flagged: set) -> None:
    for chain, scope in chains:
        _chain_slips(chain, checker, scope, out, flagged)


def _chain_slips(chain: ast.Serial, checker: TypeChecker, scope, out, flagged) -> None:
    infos = [checker.infer(stage, scope) for stage in chain.stages]
    produced: dict = {}  # label -> None, in order
    # Made when a stage first needs a label that nothing before it produces (most chains have none):
    last_use: dict = {}  # label -> the last stage whose input names it
    eligible: dict | None = None  # _split key -> labels made before this stage and read by no later one
    waiting: dict = {}  # stage -> labels made before it that become eligible there (read by no stage from it on)
    for i, (stage, info) in enumerate(zip(chain.stages, infos)):
        if eligible is not None:
            for p in waiting.pop(i, ()):
                eligible.setdefault(_split(p)[0], []).append(p)
        if i and info.in_type and id(stage) not in flagged:
            for w in info.in_type:
                for label in sorted(w.difference(produced)):
                    if eligible is None:
                        last_use = {x: j for j, later in enumerate(infos) for v in later.in_type for x in v}
                        eligible = {}
                        for p in produced:
                            _wait(eligible, waiting, p, last_use.get(p, -1) + 1, i)
                    same = eligible.get(_split(label)[0])  # near() compares nothing else
                    if same is None:
                        continue
                    hint = near(label, same)
                    if hint is not None:
                        out.append(Diagnostic(
                            "warning", start_span(stage),
                            f"{_stage_name(stage, scope)} needs '{label}', which nothing before it in this "
                            f"serial chain produces; did you mean '{hint}'?"))
        if info.prov is EVERY:
            return
        for p in info.prov:
            if p not in produced:
                produced[p] = None
                if eligible is not None:
                    _wait(eligible, waiting, p, max(i + 1, last_use.get(p, -1) + 1), i)


def _wait(eligible: dict, waiting: dict, label: str, start: int, now: int) -> None:
    """Make `label` a candidate from stage `start` on (at once if that is not after stage `now`)."""
    if start <= now:
        eligible.setdefault(_split(label)[0], []).append(label)
    else:
        waiting.setdefault(start, []).append(label)


def _stage_name(stage, scope) -> str:
    if isinstance(stage, ast.NameRef):
        kind = "box" if isinstance(scope.lookup(stage.name), ast.BoxDecl) else "net"
        return f"{kind} '{stage.name}'"
    return _STAGE_WORDS.get(type(stage), "this stage")


_STAGE_WORDS = {ast.Filter: "the filter", ast.SyncCell: "the synchro-cell", ast.Parallel: "the parallel",
                ast.Star: "the star", ast.Split: "the split", ast.Feedback: "the feedback loop"}


# ---- S5

def _unused_outputs(uses: _Uses, checker: TypeChecker, top, out: list[Diagnostic]) -> None:
    used = uses.used
    emitters = list(uses.emitters)
    carried: set = set()  # the input and output labels of the top-level nets: they come from and go to the user
    for net in top:
        info = checker.net_type(net)
        for v in info.in_type + info.out_type:
            carried |= v
    for box in uses.boxes.values():
        for variant in box.outputs:
            for label in variant:
                emitters.append((label.text, label.span, box))
    produced = {label for label, _span, _what in emitters}
    needed = used - produced - carried
    unread = [x for x in emitters if x[0] not in used and x[0] not in carried]
    seen: set = set()
    for label, span, what in sorted(unread, key=lambda x: (x[1].line, x[1].column) if x[1] else (0, 0)):
        if label in _hints.given or (label, id(span)) in seen:
            continue
        hint = near(label, needed)
        if hint is None:
            continue
        seen.add((label, id(span)))
        if type(what) is ast.BoxDecl:
            what = f"box '{what.name}'"
        out.append(Diagnostic(
            "warning", span,
            f"{what} emits '{label}', which nothing reads, while '{hint}' is read but produced by nothing; "
            f"did you mean '{hint}'?"))
