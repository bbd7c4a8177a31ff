"""A fused chain of boxes compiled for one record shape: its walk program, and the program as Python.

FRONT runs a chain of boxes as one entity (docs/runtime.md, "Fusion").
Through the box callers, each stage still checks the record, calls the box,
checks its result and builds the next record (:meth:`BoxCaller.hop`).  For
the records of one shape (their labels, in order) most of that is known
before the first call: which values each box is given, which labels each
result must have, and which labels each record between two boxes holds,
in which order.  :func:`walk_program` works that out once, as a
:class:`WalkProgram`; FRONT runs the program in its compiled code
(``snet_front``, ``CWalk``), and :func:`compile_walk` writes it down as the
source of one Python function (what a Spark task's chain runs,
:func:`chain_records`), in which a record's values pass from box to box in
local variables and only the chain's output record is built:

.. code-block:: python

    def walk(rec):  # closing over the boxes f0, f1, ... and the builtins it calls
        v0 = rec['a']; v1 = rec['id']
        try:
            r = f0(v0)
        except BaseException as e:
            return 0, rec, e, True
        if type(r) is not dict or len(r) != 1:
            return 0, rec, r, False
        try:
            v2 = r['a']
        except KeyError:
            return 0, rec, r, False
        ...
        return {'a': v20, 'id': v1}

Whatever the compiled function does not take for granted it hands back:
``(stage, the stage's input record, what the box returned or raised,
raised?)``, and the chain goes on from there through the box callers,
which give the same outputs, errors and messages as ever (the input
record is rebuilt exactly as the callers would have made it).  A box is
compiled in only when its form allows it (:meth:`BoxCaller.simple_form`):
values by position, one output variant, and results whose label order
cannot change the output record's (or, for the last box, whose result is
the output record as it is: ``WalkProgram.as_result``).
"""

from __future__ import annotations

import functools
import marshal
import sys
from time import perf_counter
from typing import Any, Callable, NamedTuple, Sequence

import snet.core.boxes as _boxes
from snet.stats import box_entry, latency_bucket

#: record shapes a chain compiles a walk for; records of other shapes go through the box callers
SHAPES = 4


class WalkProgram(NamedTuple):
    """What every walk of the records of one shape through a chain of boxes does, worked out once.

    A record's values live in numbered slots between stages.  ``head``:
    ``(label, slot)`` read from the chain's input record; per stage, a
    :class:`WalkStage`; ``output``: the chain's output record, ``(label,
    slot)`` in order.  :func:`compile_walk` writes it down as Python source;
    FRONT runs it in its compiled code (``snet_front``, ``CWalk``).
    """

    slots: int
    head: tuple[tuple[str, int], ...]
    stages: tuple[WalkStage, ...]
    output: tuple[tuple[str, int], ...]
    boxes: str  # the boxes' names, quoted: 'a' or 'b' (a forked child's message: snet.core.boxes.end_forked_child)
    # The output record is the last box's result as it is (a copy): the box inherits nothing and makes several
    # labels, whose order is the result's own, known only at run time (``output`` has them in the declared order)
    as_result: bool = False


class WalkStage(NamedTuple):
    """One box of a :class:`WalkProgram`: called with ``arguments`` (slots), its result a dict of exactly
    ``outputs`` (``(label, slot)`` each, read into the slot), those in ``tags`` (slots) an ``int``.

    ``given``: the stage's input record as the box callers would have made
    it, ``(label, slot)`` in order, for what the walk hands back; None for
    the first stage, whose input is the chain's own input record.
    """

    function: Callable[..., Any]
    arguments: tuple[int, ...]
    outputs: tuple[tuple[str, int], ...]
    tags: tuple[int, ...]
    given: tuple[tuple[str, int], ...] | None


def walk_program(callers: Sequence[Any], shape: tuple[str, ...]) -> WalkProgram | None:
    """The walk of records with labels ``shape`` (in this order) through ``callers``, or None.

    None when some box's form, or the record's shape, leaves something
    to the box callers that a walk cannot know: those records go through
    the callers.
    """
    forms = [caller.simple_form() for caller in callers]
    if not callers or any(form is None for form in forms):
        return None
    slots = iter(range(1_000_000))
    # Labels interned, as the names in a box's code are: a dict lookup finds a key of the same object without
    # comparing the strings (and the output record's keys are those a consumer's code looks up)
    shape = tuple(map(sys.intern, shape))
    forms = [(tuple(map(sys.intern, arguments)), tuple(map(sys.intern, outputs)), tuple(map(sys.intern, tags)))
             for arguments, outputs, tags in forms]
    record = [(label, next(slots)) for label in shape]  # the record between stages: (label, slot)
    reads = list(record)  # input labels read from the chain's input record
    used: set[int] = set()  # slots the walk reads
    stages: list[WalkStage] = []
    as_result = False
    for k, (caller, form) in enumerate(zip(callers, forms)):
        arguments, outputs, tags = form
        here = dict(record)
        if any(label not in here for label in arguments):
            return None  # the caller raises that the record lacks it
        given = tuple(record) if k else None
        if k:
            used.update(slot for _, slot in record)
        used.update(here[label] for label in arguments)
        consumed = caller.consumed
        dropped = {label for label, _ in record if label in consumed or label[:2] == "<#"}
        produced = {label: next(slots) for label in outputs}
        if len(dropped) == len(record):  # inherits nothing: the output is the result, in its own order
            if len(outputs) > 1:
                if k < len(callers) - 1:
                    return None  # the next box's input record: in an order known only at run time
                as_result = True
            record = [(label, produced[label]) for label in outputs]
        else:
            kept = [(label, produced.get(label, slot)) for label, slot in record
                    if label not in dropped or label in produced]
            added = [label for label in outputs if label not in here]
            if len(added) > 1:
                return None  # appended in the order the box's dict has them: known only at run time
            record = kept + [(label, produced[label]) for label in added]
        stages.append(WalkStage(caller.function, tuple(here[label] for label in arguments),
                                tuple(produced.items()), tuple(produced[label] for label in tags), given))
    used.update(slot for _, slot in record)
    head = tuple((label, slot) for label, slot in reads if slot in used)
    return WalkProgram(next(slots), head, tuple(stages), tuple(record),
                       " or ".join(repr(caller.name) for caller in callers), as_result)


def compile_walk(callers: Sequence[Any], shape: tuple[str, ...]) -> Callable[[dict], Any] | None:
    """The walk of records with labels ``shape`` through ``callers`` as a Python function, or None.

    The function returns the chain's output record, or hands back
    ``(stage, the stage's input record, what the box returned or raised,
    raised?)`` (:func:`handed_back`).
    """
    program = walk_program(callers, shape)
    if program is None:
        return None

    def record(fields: tuple[tuple[str, int], ...] | None) -> str:
        return "rec" if fields is None else "{" + ", ".join(f"{label!r}: v{slot}" for label, slot in fields) + "}"

    lines = [f"    v{slot} = rec[{label!r}]" for label, slot in program.head]
    for k, stage in enumerate(program.stages):
        back = f"return {k}, {record(stage.given)}, r, False"
        given = ", ".join(f"v{slot}" for slot in stage.arguments)
        lines += [
            "    try:",
            f"        r = f{k}({given})",
            "    except BaseException as e:",
            f"        return {k}, {record(stage.given)}, e, True",
            f"    if type(r) is not dict or len(r) != {len(stage.outputs)}:",
            f"        {back}",
        ]
        if stage.outputs:
            lines += ["    try:"]
            lines += [f"        v{slot} = r[{label!r}]" for label, slot in stage.outputs]
            lines += ["    except KeyError:", f"        {back}"]
        for slot in stage.tags:
            lines += [f"    if type(v{slot}) is not int:", f"        {back}"]
    functions = ", ".join(f"f{k}" for k in range(len(program.stages)))
    # The walk is made inside a function whose parameters it closes over: the boxes, and the builtins its
    # checks call (a closure's cell is read faster than a global or a builtin, several times a stage)
    body = (["def walk(rec):", "    pid = _boxes._pid"] + lines +
            ["    if _boxes._pid != pid:", f"        _boxes.end_forked_child({program.boxes[1:-1]!r})",
             "    return dict(r)" if program.as_result else f"    return {record(program.output)}"])
    source = "\n".join([f"def make(_boxes, type, dict, len, KeyError, BaseException, {functions}):"]
                       + ["    " + line for line in body] + ["    return walk"])
    scope: dict[str, Any] = {"__name__": __name__}
    # through marshal, as box files are loaded (snet.core.boxfiles.BoxFileLoader): on free-threaded CPython
    # the constants of code compiled in the running process are reference-counted by every call, which
    # workers walking the same chain at once would contend on
    code = marshal.loads(marshal.dumps(compile(source, f"<snet fused chain {program.boxes}>", "exec")))
    exec(code, scope)
    return scope["make"](_boxes, type, dict, len, KeyError, BaseException,
                         *(stage.function for stage in program.stages))


def chain_records(callers: Sequence[Any], records: Any, make: Callable[[tuple, tuple], Any] | None = None) -> list:
    """The outputs of ``records`` through the box callers ``callers`` one after another, in order.

    What :func:`snet.core.boxes.chain_outputs` gives, through compiled
    walks (made by ``make``, as in :class:`CountedChain`): one per record
    shape (up to :data:`SHAPES`), the callers for the rest and for whatever
    a walk hands back.  A Spark task's chain of boxes runs its rows so
    (:mod:`snet.spark.whole.dataframe`).
    """
    from snet.core.boxes import chain_outputs

    out: list = []
    walks: dict = {}  # record shape -> its compiled walk, or None
    for record in records:
        if type(record) is dict:
            shape = tuple(record)
            walk = walks.get(shape, _UNSEEN)
            if walk is _UNSEEN:
                walk = (make or compile_walk)(tuple(callers), shape) if len(walks) < SHAPES else None
                walks[shape] = walk
            if walk is not None:
                result = walk(record)
                if type(result) is dict:
                    out.append(result)
                    continue
                k, outs = handed_back(callers, result)
                out.extend(chain_outputs(tuple(callers[k + 1:]), [outs] if type(outs) is dict else outs))
                continue
        out.extend(chain_outputs(tuple(callers), [record]))
    return out


_UNSEEN = object()


@functools.lru_cache(maxsize=1)
def walk_maker() -> Callable[[tuple, tuple], Any]:
    """FRONT's ``make_walk`` (the walk in C, about a third of its time as Python) where the compiled runtime
    imports, else :func:`compile_walk`: the same outputs and errors (a Spark task's chains take it, once per
    batch: looked up once per process)."""
    try:
        from snet_front.runtime import make_walk
    except (ImportError, ValueError):  # ValueError: another snet's runtime ("size changed")
        return compile_walk
    return make_walk


def box_chain(plan: Any, root: int = 0) -> tuple | None:
    """The box callers of plan node ``root`` (the whole network by default) when it is a serial chain of boxes
    (or one box), else None: function composition, each record through the boxes depth first as the reference
    engine takes it (:func:`chain_records`), with the engine's own box callers; a chain holding anything else (a
    filter, a caller that skips errors or defers ``async def`` calls) is left to the engine."""
    from snet.plan import Kind

    calls: list = []
    pending = [root]
    while pending:
        node = plan.nodes[pending.pop()]
        if node.kind in (Kind.NET, Kind.SERIAL):
            pending.extend(reversed(node.children))
        elif node.kind == Kind.BOX and type(node.call) is _boxes.BoxCaller and not node.call.defer:
            calls.append(node.call)
        elif node.kind != Kind.IDENTITY:
            return None
    return tuple(calls) if calls else None


class CountedChain:
    """A chain of box callers (:func:`box_chain`) that counts its boxes' calls as an engine does.

    Records go through compiled walks (one per record shape, made by
    ``make``: :func:`compile_walk`, or FRONT's ``make_walk``, which runs the
    same program in C), and through the callers for whatever a walk hands back, giving
    the outputs and errors an engine gives.  Each box's calls are counted
    exactly into a table ``{name: [calls, seconds, histogram counts]}`` (as
    ``ReferenceEngine.count_box`` keeps it, :mod:`snet.stats`); their times
    are taken, box by box, on the first :data:`TIMED_RECORDS` records and
    then on one in :data:`SAMPLE_EVERY`, each such call standing for the
    calls of the records walked untimed since the last (as FRONT samples
    short boxes): the seconds and the histogram are estimates, the calls
    are not.  A split's replicas on a Spark executor run so
    (:mod:`snet.spark.splits.replicas`).
    """

    TIMED_RECORDS = 64
    SAMPLE_EVERY = 16

    def __init__(self, callers: Sequence[Any], make: Callable[[tuple, tuple], Any] | None = None):
        self.callers = tuple(callers)
        # the compiler of a shape's walk: compile_walk, or FRONT's make_walk where a task has it (the same results)
        self.make = make or compile_walk
        self.walks: dict[tuple, Any] = {}  # record shape -> its walk's ``many`` (walk_many), or None (up to SHAPES)
        self.seen = 0  # records walked
        self.untimed = 0  # ... since the last timed one
        self.place = 0  # where in the records walk took the last: the failing one after an error

    def walk(self, records: Sequence[Any], outputs: list, box_calls: dict) -> None:
        """Append each record's outputs to ``outputs``, in order, counting the calls into ``box_calls``.  A box's
        error is raised (:attr:`place` says whose record it was).  Between two timed records, a stretch of
        records of one shape goes through its walk in one call (:func:`walk_many`, or ``CWalk.many``)."""
        callers, walks, append, last, make = self.callers, self.walks, outputs.append, len(self.callers) - 1, self.make
        seen, untimed, every, timed_records = self.seen, self.untimed, self.SAMPLE_EVERY, self.TIMED_RECORDS
        walked = 0  # records walked untimed to the chain's end: one call of every box each
        first, i, n = len(outputs), 0, len(records)
        try:
            while i < n:
                record = records[i]
                if seen < timed_records or not (seen + 1) % every:  # (records are numbered from 1)
                    seen, i = seen + 1, i + 1
                    append(self._through(0, [record], untimed + 1, box_calls))
                    untimed = 0
                    continue
                many = walks.get(shape := tuple(record), _UNSEEN) if type(record) is dict else None
                if many is _UNSEEN:
                    walk = make(callers, shape) if len(walks) < SHAPES else None
                    many = walks[shape] = None if walk is None else getattr(walk, "many", None) or \
                        functools.partial(walk_many, walk)
                if many is None:
                    seen, untimed, i = seen + 1, untimed + 1, i + 1
                    append(self._through(0, [record], 0, box_calls))
                    continue
                # the records of this shape up to the next timed one
                j, out = many(shape, records, i, min(n, i + every - 1 - seen % every), outputs)
                walked += j - i
                seen, untimed, i = seen + j - i, untimed + j - i, j
                if out is None:  # (the record at j, if any, is of another shape)
                    continue
                seen, untimed, i = seen + 1, untimed + 1, i + 1
                _count(callers[:out[0] if out[3] else out[0] + 1], 1, box_calls)  # (one that raised: not counted)
                k, rest = handed_back(callers, out)
                rest = [rest] if type(rest) is dict else rest
                append(self._through(k + 1, rest, 0, box_calls) if k < last else list(rest))
        except BaseException:
            self.place = len(outputs) - first
            raise
        finally:
            self.seen, self.untimed = seen, untimed
            _count(callers, walked, box_calls)

    def _through(self, start: int, records: list, weight: int, box_calls: dict) -> list:
        """``records`` through the callers from ``start`` on, depth first, each call counted, and timed for
        ``weight`` calls (0: not timed)."""
        callers, out = self.callers, []
        pending = [(start, record) for record in reversed(records)]
        while pending:
            k, record = pending.pop()
            if k == len(callers):
                out.append(record)
                continue
            caller = callers[k]
            started = perf_counter()
            given = caller(record)  # (a call that raises is not counted, as in the engines)
            seconds = perf_counter() - started
            entry = box_entry(box_calls, caller.name)
            entry[0] += 1
            if weight:
                entry[1] += seconds * weight
                entry[2][latency_bucket(seconds)] += weight
            pending.extend((k + 1, r) for r in reversed(given))
        return out


def walk_many(walk: Callable[[dict], Any], shape: tuple[str, ...], records: Sequence[Any], start: int, end: int,
              outputs: list) -> tuple[int, Any]:
    """Records ``start`` to ``end`` through the compiled walk ``walk`` while each is a dict of labels ``shape``
    whose walk gives the output record, ``[that record]`` appended to ``outputs`` for each: ``(where it
    stopped, what the walk handed back there)``, None when the record there is not of the shape (not walked)."""
    append = outputs.append
    for i in range(start, end):
        record = records[i]
        if type(record) is not dict or tuple(record) != shape:
            return i, None
        out = walk(record)
        if type(out) is not dict:
            return i, out
        append([out])
    return end, None


def _count(callers: Sequence[Any], calls: int, box_calls: dict) -> None:
    """``calls`` untimed calls of each of ``callers``."""
    if calls:
        for caller in callers:
            box_entry(box_calls, caller.name)[0] += calls


def handed_back(callers: Sequence[Any], result: tuple) -> tuple[int, Any]:
    """What a compiled walk handed back, taken as the box callers take it: ``(k, stage k's outputs)``.

    ``result`` is ``(k, stage k's input record, what the box returned or
    raised, raised?)``; a box that raised raises here, as :meth:`BoxCaller.hop`
    would have.  The outputs go on through the stages after ``k``.
    """
    k, given, what, raised = result
    caller = callers[k]
    if raised:
        error = caller.raised(what, given)
        if error is what:
            raise error
        raise error from what
    return k, caller.outputs_of(what, given)


__all__ = ["box_chain", "chain_records", "CountedChain", "compile_walk", "handed_back", "walk_maker",
           "walk_many", "walk_program", "SHAPES", "WalkProgram", "WalkStage"]
