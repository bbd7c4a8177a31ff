"""Record flow: which record variants reach each construct, for the slip warnings.

The §5.2 types say what a construct accepts; they do not say what actually
reaches it.  This pass pushes abstract records (label sets) through a net
the way §6 moves real records, with flow inheritance, best-match routing,
star and feedback loops run to a fixed point, and collects evidence:

* which records reach each box use and each filter, and whether one of them
  carries every label of its input (a box) or pattern (a filter);
* which records reach each parallel combinator and which branch each one
  selects;
* for every box or filter output variant, whether some record made from it
  is taken by whatever comes next (a box that matches, a branch that routes
  it, a split that finds its tag, the net's output).

Each top-level net that no other top-level net uses is analysed from its
records: the declared input variants of a signed net, In(body) of an
unsigned one.  A named net used
inside is analysed at each use with the records that reach it there, and
the evidence of all uses is merged, so a construct is only reported when
*no* use lets anything through.  Guards are not evaluated: a guarded exit,
back or filter branch counts as possibly taken and possibly not.

The analysis gives up on a net (and reports nothing for it) when the number
of distinct records at one point exceeds :data:`LIMIT` or a loop does not
settle within :data:`ROUNDS` rounds; so it never makes the check slow and
never reports from half an analysis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from snet.syntax import ast
from snet.typesys.scopes import Resolution, Scope
from snet.typesys.types import TypeChecker

LIMIT = 2048  # distinct records at one point
ROUNDS = 64  # rounds of a star or feedback loop

Rec = tuple  # (frozenset of labels, origin key or None)


class GiveUp(Exception):
    """The analysis of one top-level net is too large; it reports nothing."""


@dataclass
class Evidence:
    """What one or more analyses saw; keys are ids of AST nodes kept alive by the program."""

    reached: dict = field(default_factory=dict)  # id(use or filter) -> (node, set of label sets)
    matched: set = field(default_factory=set)  # ids of uses/filters some record matched
    # id(parallel) -> (node, selected branch indices, In of each branch, label sets that reached it)
    routed: dict = field(default_factory=dict)
    needs: dict = field(default_factory=dict)  # id(box use) -> the box's input labels
    made: set = field(default_factory=set)  # ids of uses/filters reached by a record something inside made
    emitted: dict = field(default_factory=dict)  # origin -> (node, variant label set, what)
    accepted: set = field(default_factory=set)  # origins some record of which was taken
    rejected: dict = field(default_factory=dict)  # origin -> ids of the box uses that refused its records

    def merge(self, other: "Evidence") -> None:
        for key, (node, recs) in other.reached.items():
            self.reached.setdefault(key, (node, set()))[1].update(recs)
        self.matched |= other.matched
        for key, (node, chosen, inputs, seen) in other.routed.items():
            entry = self.routed.setdefault(key, (node, set(), inputs, set()))
            entry[1].update(chosen)
            entry[3].update(seen)
        self.needs.update(other.needs)
        self.made |= other.made
        self.emitted.update(other.emitted)
        self.accepted |= other.accepted
        for key, ids in other.rejected.items():
            self.rejected.setdefault(key, set()).update(ids)


class Flow:
    """Pushes abstract records through connect expressions (see the module docstring)."""

    def __init__(self, res: Resolution, checker: TypeChecker, nets: dict | None = None) -> None:
        self.res = res
        self.checker = checker
        self.ev = Evidence()
        # (id(net), records) -> output records; may be shared by the analyses of several top-level
        # nets, whose evidence is merged, so a net reached with the same records is analysed once.
        self._nets: dict = {} if nets is None else nets
        self.added: list = []  # keys this analysis put in the shared table
        self._rests: dict = {}
        self._routes: dict = {}  # id(parallel) -> _Routes

    # ---- entry

    def run_net(self, net: ast.NetDef, records) -> set:
        """The records that leave `net` when `records` enter it."""
        if net.body is None:
            return self._declared(net, records)
        key = (id(net), frozenset(records))
        cached = self._nets.get(key)
        if cached is None:
            cached = self.expr(net.body, set(records), self.res.net_scope(net))
            self._nets[key] = cached
            self.added.append(key)
        return cached

    # ---- helpers

    def _take(self, rec: Rec) -> None:
        if rec[1] is not None:
            self.ev.accepted.add(rec[1])

    @staticmethod
    def _check(recs) -> None:
        if len(recs) > LIMIT:
            raise GiveUp

    def _declared(self, net: ast.NetDef, records) -> set:
        """A declaration-only net: its signature stands for its body."""
        out = set()
        for labels, origin in records:
            for m in self.checker.declared(net):
                for d in m.inputs:
                    if d <= labels:
                        if origin is not None:
                            self.ev.accepted.add(origin)
                        rest = frozenset(x for x in labels - d if not x.startswith("<#"))
                        for o in (m.outputs or (frozenset(),)):
                            out.add((o | rest, None))
        return out

    # ---- expressions

    def expr(self, e, recs: set, scope: Scope) -> set:
        self._check(recs)
        if isinstance(e, ast.NameRef):
            target = scope.lookup(e.name)
            if isinstance(target, ast.BoxDecl):
                return self._box(e, target, recs)
            out = self.run_net(scope.resolved(e.name, ast.NetDef), recs)
            return out
        if isinstance(e, ast.Identity):
            return set(recs)
        if isinstance(e, ast.Filter):
            return self._filter(e, recs)
        if isinstance(e, ast.SyncCell):
            return self._sync(e, recs)
        if isinstance(e, ast.Serial):
            for stage in e.stages:
                recs = self.expr(stage, recs, scope)
            return recs
        if isinstance(e, ast.Parallel):
            return self._parallel(e, recs, scope)
        if isinstance(e, ast.Star):
            return self._star(e, recs, scope)
        if isinstance(e, ast.Split):
            tags = {e.tag.text} | ({e.hi_tag.text} if e.hi_tag is not None else set())
            inside = set()
            for rec in recs:
                if tags <= rec[0]:
                    self._take(rec)
                    inside.add(rec)
            return self.expr(e.operand, inside, scope)
        if isinstance(e, ast.Feedback):
            return self._feedback(e, recs, scope)
        if isinstance(e, ast.Placement):
            return self.expr(e.operand, recs, scope)
        raise TypeError(f"not a connect expression: {e!r}")

    def _box(self, use: ast.NameRef, box: ast.BoxDecl, recs: set) -> set:
        outs = [frozenset(label.text for label in variant) for variant in box.outputs]
        out = set()
        if box.inputs is None:  # an initialiser: its own outputs, then records pass unchanged
            for j, o in enumerate(outs):
                out.add((o, self._origin(use, j, o, f"box '{box.name}'")))
            return out | recs
        need = frozenset(label.text for label in box.inputs)
        entry = self.ev.reached.setdefault(id(use), (use, set()))[1]
        self.ev.needs[id(use)] = need
        for labels, origin in recs:
            entry.add(labels)
            if origin is not None:
                self.ev.made.add(id(use))
            if not need <= labels:
                if origin is not None:
                    self.ev.rejected.setdefault(origin, set()).add(id(use))
                continue
            self.ev.matched.add(id(use))
            if origin is not None:
                self.ev.accepted.add(origin)
            rest = self._rest(labels, need)
            for j, o in enumerate(outs):
                out.add((o | rest, self._origin(use, j, o, f"box '{box.name}'")))
        return out

    def _rest(self, labels: frozenset, taken: frozenset) -> frozenset:
        """What a box or filter passes on: the labels it does not take, binding tags excepted (§6.1)."""
        key = (labels, taken)
        rest = self._rests.get(key)
        if rest is None:
            rest = self._rests[key] = frozenset(x for x in labels - taken if x[:2] != "<#")
        return rest

    def _origin(self, node, j: int, labels: frozenset, what: str):
        key = (id(node), j)
        if key not in self.ev.emitted:
            self.ev.emitted[key] = (node, labels, what)
        return key

    def _filter(self, f: ast.Filter, recs: set) -> set:
        pattern = f.pattern.label_set()
        entry = self.ev.reached.setdefault(id(f), (f, set()))[1]
        outputs = []
        for clause in f.clauses:
            for record in clause.outputs:
                outputs.append(record)
        out = set()
        for labels, origin in recs:
            entry.add(labels)
            if origin is not None:
                self.ev.made.add(id(f))
            if pattern <= labels:
                self.ev.matched.add(id(f))
            # The pattern is not tested (§6.5): the record goes on unless the filter reads a label it lacks.
            if origin is not None:
                self.ev.accepted.add(origin)
            rest = self._rest(labels, pattern)
            for j, record in enumerate(outputs):
                explicit = frozenset(item.label for item in record.items)
                out.add((explicit | (rest - explicit), self._origin(f, j, explicit, "filter")))
        return out

    def _sync(self, cell: ast.SyncCell, recs: set) -> set:
        patterns = [p.pattern.label_set() for p in cell.patterns]
        union = frozenset().union(*patterns)
        out = set()
        for rec in recs:
            self._take(rec)
            out.add(rec)  # a record that fills no slot, or any record once the cell has fired
            if any(p <= rec[0] for p in patterns):
                out.add((rec[0] | union, rec[1]))
        return out

    def _parallel(self, par: ast.Parallel, recs: set, scope: Scope) -> set:
        infos = [self.checker.infer(b, scope) for b in par.branches]
        ins = tuple(info.in_type for info in infos)
        entry = self.ev.routed.setdefault(id(par), (par, set(), ins, set()))
        chosen = entry[1]
        entry[3].update(rec[0] for rec in recs)
        routed: list[set] = [set() for _ in par.branches]
        routes = self._routes.get(id(par))
        if routes is None:
            routes = self._routes[id(par)] = _Routes(ins)
        for rec in recs:
            best = routes.best(rec[0])
            if best is None:
                continue  # a run-time error: the record's origin is not taken here
            self._take(rec)
            chosen.add(best)
            routed[best].add(rec)
        out = set()
        for branch, inside in zip(par.branches, routed):
            out |= self.expr(branch, inside, scope)
        return out

    def _star(self, star: ast.Star, recs: set, scope: Scope) -> set:
        exits = [(p.pattern.label_set(), p.guard is not None) for p in star.patterns]

        def round_(pending: set, out: set) -> set:
            enter = set()
            for rec in pending:
                leaves, always = _matched(rec, exits)
                if leaves:
                    out.add(rec)
                if not always:
                    enter.add(rec)
            return self.expr(star.operand, enter, scope)

        return self._loop(recs, round_)

    def _feedback(self, fb: ast.Feedback, recs: set, scope: Scope) -> set:
        backs = [(p.pattern.label_set(), p.guard is not None) for p in fb.patterns]

        def round_(pending: set, out: set) -> set:
            back = set()
            for rec in self.expr(fb.operand, pending, scope):
                goes_back, always = _matched(rec, backs)
                if goes_back:
                    back.add(rec)
                    self._take(rec)
                if not always:
                    out.add(rec)
            return back

        return self._loop(recs, round_)

    def _loop(self, recs: set, round_) -> set:
        """Run a star's or feedback's rounds until no new record shape comes round (or give up)."""
        out: set = set()
        seen: set = set()
        pending = set(recs)
        for _ in range(ROUNDS):
            if not pending:
                return out
            seen |= pending
            pending = round_(pending, out) - seen
            self._check(seen)
        raise GiveUp


def _matched(rec: tuple, patterns: list) -> tuple[bool, bool]:
    """(a pattern may match ``rec``, one with no guard surely does): a record may take that way, or must."""
    may = False
    for pattern, guarded in patterns:
        if pattern <= rec[0]:
            may = True
            if not guarded:
                return True, True
    return may, False


class _Routes:
    """Best-match routing (§6.7) over the In variants of a parallel's branches.

    Each variant is filed under one of its labels (the one the fewest
    variants hold), so a record is only compared with the variants filed
    under its own labels, not with every branch.
    """

    def __init__(self, ins) -> None:
        count: dict = {}
        for variants in ins:
            for v in variants:
                for label in v:
                    count[label] = count.get(label, 0) + 1
        self.empty: list = []  # (branch, variant) for variants with no labels
        self.by_label: dict = {}
        for i, variants in enumerate(ins):
            for v in variants:
                if not v:
                    self.empty.append(i)
                else:
                    key = min(v, key=lambda label: (count[label], label))
                    self.by_label.setdefault(key, []).append((i, v))

    def best(self, labels: frozenset):
        """The branch a record with `labels` goes to, or None: highest score, ties to the leftmost."""
        binding = [x for x in labels if x.startswith("<#")]
        best, best_score = None, -1
        if not binding and self.empty:
            best, best_score = min(self.empty), 0
        for label in labels:
            for i, v in self.by_label.get(label, ()):
                score = len(v)
                if v <= labels and (score > best_score or (score == best_score and i < best)) \
                        and all(b in v for b in binding):
                    best, best_score = i, score
        return best
